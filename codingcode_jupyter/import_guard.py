"""The package never imports from the project: what it imports resolves from the installed environment.

The kernel's ``sys.path`` holds its working directory (``''``, the project) ahead of
site-packages, and the package imports many libraries only when first needed (markdownify
at the first fetch_url, nbformat, keyring, the MCP types, ...). A file the agent wrote
(``markdownify.py`` in the project) would then become code run in the kernel, on the host.

:class:`ProjectShadowGuard` takes the place of the path-based finder in ``sys.meta_path``.
For a top-level import made on behalf of this package (a frame of ``codingcode_jupyter`` is the nearest importer on the
stack that is not a library's), the path-based search runs over ``sys.path`` less the
working directory and every entry inside the project (a virtualenv inside the project stays:
it is on the table of host-executed paths, asked for and read-only in the sandbox). A name
found nowhere else is "not installed", never the project's file. Submodules follow their
package's ``__path__``, which is then the installed one. The person's own imports (a cell's
frame, ``__main__``, comes first) are left as they were: their project's modules still import.

Why this and not importing everything ahead of any agent action: optional libraries that are
not installed (cairosvg, keyring) would still be looked up later, in the project; and the
libraries' own lazy imports (markdownify's bs4 parser) happen inside them, on the package's
behalf, which the stack shows and a list cannot.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import ModuleSpec, PathFinder
from types import CodeType, FrameType, ModuleType
from typing import Any, Callable, Sequence

__all__ = ["ProjectShadowGuard", "install", "installed_guard", "pass_through"]

_PACKAGE = __name__.split(".")[0]
_IMPORT_MACHINERY = ("importlib", "_frozen_importlib", "_frozen_importlib_external", __name__)


class ProjectShadowGuard:
    """A meta path finder: the package's top-level imports skip the working directory and the project."""

    def __init__(self, project: str | None = None) -> None:
        self.project = os.path.realpath(project) if project else None

    def set_project(self, project: str | os.PathLike[str] | None) -> None:
        self.project = os.path.realpath(project) if project else None

    def find_spec(self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> ModuleSpec | None:
        if path is None and _for_the_package(sys._getframe(1)):
            # None when the name is not installed: probing (importlib.util.find_spec) works as before.
            return PathFinder.find_spec(name, self.clean_path(sys.path), target)
        return PathFinder.find_spec(name, path, target)

    def __getattr__(self, name: str) -> Any:
        # Everything else of the path-based finder (invalidate_caches, find_distributions) as it is.
        return getattr(PathFinder, name)

    def clean_path(self, entries: Sequence[str]) -> list[str]:
        """``entries`` less the working directory and every entry inside the project but outside a virtualenv."""
        try:
            cwd = os.path.realpath(os.getcwd())
        except OSError:
            cwd = None
        roots = [root for root in (cwd, self.project) if root]
        kept = []
        for entry in entries:
            if not isinstance(entry, str) or entry in ("", "."):
                continue
            real = os.path.realpath(entry)
            if real == cwd:
                continue
            inside = next((root for root in roots if real == root or real.startswith(root.rstrip("/") + "/")), None)
            if inside is not None and not _in_virtualenv(real, inside):
                continue
            kept.append(entry)
        return kept


def _in_virtualenv(path: str, root: str) -> bool:
    current = path
    while current != root and current.startswith(root):
        if os.path.isfile(os.path.join(current, "pyvenv.cfg")):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return False


# Code objects of the package's own functions that only pass an import on (prewarm's __import__ hook).
_PASS_THROUGH: set[CodeType] = set()


def pass_through(function: Callable[..., Any]) -> None:
    """Mark a function of the package that forwards imports made by others: the guard looks past its frame."""
    _PASS_THROUGH.add(function.__code__)


def _for_the_package(frame: FrameType | None) -> bool:
    """The nearest importer that is not import machinery or a library: this package (True) or a person's code."""
    while frame is not None:
        if frame.f_code in _PASS_THROUGH:
            frame = frame.f_back
            continue
        name = frame.f_globals.get("__name__") or ""
        if name == _PACKAGE or name.startswith(_PACKAGE + "."):
            return name != __name__
        if name == "__main__" or name.startswith("__ipython") or frame.f_code.co_filename.startswith("<ipython-input"):
            return False
        frame = frame.f_back
    return False


def installed_guard() -> ProjectShadowGuard | None:
    return next((finder for finder in sys.meta_path if isinstance(finder, ProjectShadowGuard)), None)


def install(project: str | os.PathLike[str] | None = None) -> ProjectShadowGuard:
    """Put the guard in the path-based finder's place in ``sys.meta_path`` (once); ``project`` is
    where the agent writes. In its place, not before it: a name that is not installed is then
    not found (None, as importlib.util.find_spec expects), and no later finder searches the
    project for it."""
    guard = installed_guard()
    if guard is None:
        guard = ProjectShadowGuard()
        if PathFinder in sys.meta_path:
            sys.meta_path[sys.meta_path.index(PathFinder)] = guard
        else:
            sys.meta_path.append(guard)
    if project is not None:
        guard.set_project(project)
    return guard
