"""Long sessions: the context window, compaction of what is sent, and the context gauge.

``window`` knows each model's window and estimates sizes; ``transforms`` holds the pure
stages over messages; ``compactor`` decides when and how far to compact; ``session_window``
wires a compactor to a session and answers ``%agent compact`` and ``%agent status``.
"""
