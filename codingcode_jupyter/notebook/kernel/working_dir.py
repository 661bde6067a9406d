"""Where the notebook is when the kernel was started somewhere else (a kernel gateway).

A local kernel starts in its notebook's directory, so the project, the notebook and what the
agent writes are in one place. A gateway (Jupyter Enterprise Gateway, a JupyterHub set up with
one) starts its kernels where it runs; jupyter-server tells it the notebook's directory in
``KERNEL_WORKING_DIR``, which the kernel does not act on. The agent keeps working in the
kernel's directory (where the code it runs resolves relative paths), and ``%agent status`` says
that the two differ and how to work beside the notebook instead.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["notebook_dir_line"]


def notebook_dir_line(project: Path, cwd: Path | None = None) -> str | None:
    """What status says (its "notebook" row) when the notebook's directory (``KERNEL_WORKING_DIR``) is not the kernel's."""
    named = os.environ.get("KERNEL_WORKING_DIR")
    if not named:
        return None
    here = Path(os.path.realpath(cwd if cwd is not None else Path.cwd()))
    there = Path(named)
    if there.is_dir() and Path(os.path.realpath(there)) == here:
        return None
    if not there.is_dir():
        return (f"in {named} on the server, not on the kernel's machine: the agent works in {here} "
                "(the kernel's directory)")
    move = f"`%agent project {there}` works beside the notebook"
    if Path(os.path.realpath(project)) == here:
        return f"in {there}, not in the kernel's directory, which is the project: files the agent writes land there; {move}"
    return f"in {there}, but the kernel runs in {here} and the project is {project}; {move}"
