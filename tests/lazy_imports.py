"""The modules this package imports lazily (inside functions), found from its code, not listed by hand."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "codingcode_jupyter"


def lazy_imports(everywhere: bool = False) -> dict[str, set[str]]:
    """Top-level module name -> the package files that import it inside a function (or by a constant
    ``importlib.import_module("...")``); with ``everywhere``, module-level imports too (a module of
    the package imported after %load_ext imports them then). The package's own modules and builtin
    modules are left out."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and not (
                    everywhere and isinstance(function, ast.Module)):
                continue
            for node in ast.walk(function):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module]
                elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("importlib.import_module", "import_module",
                                                                              "__import__") \
                        and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    names = [node.args[0].value]
                for name in names:
                    top = name.split(".")[0]
                    if top and top != PACKAGE.name and top not in sys.builtin_module_names:
                        found.setdefault(top, set()).add(str(path.relative_to(PACKAGE.parent)))
    return found
