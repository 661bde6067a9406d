"""What went wrong, in one line for the notebook; the package's own traceback goes to the kernel's log.

A person's cell shows what they can act on (a file, a key, a cause). The errors the engine raises on
purpose (a broken settings file, a missing profile, an MCP entry that cannot be used, ...) carry that
line as their message; anything else is a fault of this package, named in one line while its full
traceback goes to the kernel's own stderr (the terminal or log of the Jupyter server), never into the
saved notebook.
"""

from __future__ import annotations

import sys
import traceback

from IPython.core.error import UsageError

__all__ = ["one_line", "AgentFailed", "AgentInterrupted"]


def _expected(error: BaseException) -> bool:
    """Errors raised on purpose with a message meant for a person."""
    if isinstance(error, (UsageError, OSError)):
        return True
    # SettingsError, ProfileError, McpConfigError, CheckpointError, ContextWindowError, PromptError...:
    # the engine's ValueErrors and RuntimeErrors name the file and the entry.
    module = type(error).__module__ or ""
    return isinstance(error, (ValueError, RuntimeError)) and module.startswith("codingcode_jupyter.")


def one_line(error: BaseException) -> str:
    """``error`` as the one line a person reads; a fault of the package is logged in full for its developers."""
    if _expected(error):
        message = " ".join(str(error).split()) or type(error).__name__
        return message
    print(f"codingcode: internal error in a turn:\n{''.join(traceback.format_exception(error))}",
          file=sys.__stderr__, flush=True)
    return (f"Internal error ({type(error).__name__}: {' '.join(str(error).split())[:300]}); "
            "its details went to the kernel's log. The next cell can go on.")


class AgentFailed(Exception):
    """A turn ended by an error; the record above says which. One short line, not a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def _render_traceback_(self) -> list[str]:
        return [f"The turn ended with an error: {self.message}"]


class AgentInterrupted(Exception):
    """The interrupt button (or Stop) ended a turn; shown as one line, not a traceback."""

    def _render_traceback_(self) -> list[str]:
        return ["Interrupted."]
