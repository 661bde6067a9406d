"""Long sessions: the context window, compaction of what is sent, and the context gauge."""

from .compaction import (
    CompactionReport,
    Compactor,
    ContextStatus,
    apply_compaction,
    attach_compactor,
    compact,
    context_status,
)
from .window import ContextWindowError, context_window, estimate_tokens

__all__ = [
    "CompactionReport",
    "Compactor",
    "ContextStatus",
    "ContextWindowError",
    "apply_compaction",
    "attach_compactor",
    "compact",
    "context_status",
    "context_window",
    "estimate_tokens",
]
