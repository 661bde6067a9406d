"""The newest exception a cell raised, recorded for notebook_history and ``%agent fix``."""

from __future__ import annotations

import re
import sys
import traceback
import types
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The agent's own cells: their failures are not the user's bug to fix, nor their history.
AGENT_CELL = re.compile(r"^\s*%%?agent\b")


@dataclass
class LastError:
    """The newest exception raised by a cell: where, what, and its formatted traceback."""

    execution_count: int | None
    cell: str
    error: str
    traceback: str


_ERRORS: "weakref.WeakKeyDictionary[Any, LastError]" = weakref.WeakKeyDictionary()
_RECORDERS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


# run_python's exec frames are ours, not the user's code.
_OWN_FILES = {str(Path(__file__).with_name("run_python.py")), __file__}


def _strip_shell_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    # IPython's own frames (run_code's exec) come first; the user wants their code's frames.
    while tb is not None and (
        "/IPython/" in tb.tb_frame.f_code.co_filename or tb.tb_frame.f_code.co_filename in _OWN_FILES
    ):
        tb = tb.tb_next
    return tb


def format_exception(error: BaseException) -> str:
    """The traceback as Python prints it, without the shell's frames, capped in the middle."""
    tb = _strip_shell_frames(error.__traceback__)
    text = "".join(traceback.format_exception(type(error), error, tb))
    if len(text) > 8000:
        text = text[:3000] + f"\n[... {len(text) - 7000} characters of traceback cut ...]\n" + text[-4000:]
    return text


def install_error_recorder(shell: Any) -> None:
    """Remember each failing cell (its source and traceback) for notebook_history and %agent fix."""
    if shell is None or shell in _RECORDERS:
        return

    def post_run_cell(result: Any) -> None:
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        if error is None:
            return
        info = getattr(result, "info", None)
        cell = getattr(info, "raw_cell", "") or ""
        if AGENT_CELL.match(cell):
            return  # the agent's own cell failing is not the user's bug to fix
        _ERRORS[shell] = LastError(
            execution_count=getattr(result, "execution_count", None),
            cell=cell,
            error=f"{type(error).__name__}: {error}",
            traceback=format_exception(error),
        )

    shell.events.register("post_run_cell", post_run_cell)
    _RECORDERS[shell] = post_run_cell


def last_error(shell: Any) -> LastError | None:
    """The newest cell exception: recorded by the hook, else the one Python kept in sys."""
    if shell is not None and shell in _ERRORS:
        return _ERRORS[shell]
    error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    if not isinstance(error, BaseException):
        return None
    cell = ""
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    if history:
        for text in reversed(history):
            if text.strip() and not AGENT_CELL.match(text):
                cell = text
                break
    return LastError(None, cell, f"{type(error).__name__}: {error}", format_exception(error))
