"""Long sessions: the context window, compaction of what is sent, and the context gauge.

``window`` knows each model's window and estimates sizes; ``transforms`` holds the pure
stages over messages; ``compactor`` decides when and how far to compact; ``session_window``
wires a compactor to a session and answers ``%agent compact`` and ``%agent status``.
"""

from .compactor import CompactionReport, Compactor
from .session_window import ContextStatus, compact, context_status, keep_in_window
from .transforms import apply_compaction
from .window import ContextWindowError, context_window, estimate_tokens

__all__ = [
    "CompactionReport",
    "Compactor",
    "ContextStatus",
    "ContextWindowError",
    "apply_compaction",
    "compact",
    "context_status",
    "context_window",
    "estimate_tokens",
    "keep_in_window",
]
