"""No function in the approval package is over 80 lines (issue 43): a long walker is split by construct.

The approval judge is read and changed by people checking that a command is judged as it should
be; a function one screen can't hold hides which case a change reaches. So every function and
method (nested ones too) in ``codingcode_jupyter/engine/approval/`` is measured by ``ast`` as
``end_lineno - lineno + 1``: from its ``def`` line (decorators left out) to its last line,
docstring, comments and blank lines included.

Exempt: a table. A function whose body, after an optional docstring, is a single ``return`` of a
literal display (a dict, list, tuple or set display, or a constant) is data however long, and
splitting it would only scatter the table. Nothing else is exempt: a table built by a loop or a
comprehension is code.
"""

from __future__ import annotations

import ast
from pathlib import Path

import codingcode_jupyter.engine.approval as approval

LIMIT = 80
APPROVAL = Path(approval.__file__).parent
_LITERALS = (ast.Dict, ast.List, ast.Tuple, ast.Set, ast.Constant)


def _is_table(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, _LITERALS)


def long_functions(source: str, filename: str = "<source>") -> list[str]:
    """``filename:line qualified.name (N lines)`` for each function in ``source`` over the limit."""
    found: list[str] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                length = (child.end_lineno or child.lineno) - child.lineno + 1
                if length > LIMIT and not _is_table(child):
                    found.append(f"{filename}:{child.lineno} {name} ({length} lines)")
                walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(ast.parse(source, filename), "")
    return found


def _function(name: str, lines: int, *, indent: str = "") -> str:
    """A function of exactly ``lines`` lines: the def line, then statements."""
    body = [f"{indent}    x{i} = {i}" for i in range(lines - 2)] + [f"{indent}    return x0"]
    return "\n".join([f"{indent}def {name}():", *body]) + "\n"


def _table(name: str, lines: int) -> str:
    """A function of exactly ``lines`` lines whose body is a docstring and one returned dict."""
    entries = [f"        'k{i}': {i}," for i in range(lines - 4)]
    return "\n".join([f"def {name}():", '    """A table."""', "    return {", *entries, "    }"]) + "\n"


def test_the_measure_catches_a_long_function():
    # Positive control: without it a measure that catches nothing would pass the real check.
    source = (_function("short", 80) + _function("long", 81) + "class C:\n" + _function("method", 90, indent="    ")
              + _table("table", 120) + "async def outer():\n" + _function("inner", 81, indent="    "))
    found = long_functions(source, "synthetic.py")
    assert [f.split(" ", 1)[1] for f in found] == ["long (81 lines)", "C.method (90 lines)", "outer (82 lines)",
                                                   "outer.inner (81 lines)"], found
    assert found[0].startswith("synthetic.py:81 ")


def test_a_table_built_by_code_is_not_exempt():
    built = "def table():\n    return {k: 1 for k in (\n" + "".join(f"        {i},\n" for i in range(80)) + "    )}\n"
    assert long_functions(built) == ["<source>:1 table (83 lines)"]
    assert long_functions(_table("table", 200)) == []


def test_no_approval_function_is_over_80_lines():
    modules = sorted(APPROVAL.rglob("*.py"))
    assert len(modules) > 20 and APPROVAL / "programs.py" in modules
    found = [f for path in modules for f in long_functions(path.read_text(encoding="utf-8"),
                                                           str(path.relative_to(APPROVAL.parent.parent.parent)))]
    assert not found, f"functions over {LIMIT} lines in engine/approval (split them by construct):\n" + "\n".join(found)
