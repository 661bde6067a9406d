"""IPython's syntax in a cell read for the judge (engine/approval/ipython_syntax.py): shell lines are
commands, known magics are Python or nothing, unknown magics cannot be judged; plain Python is kept."""

from __future__ import annotations

import pytest

from codingcode_jupyter.engine.approval.ipython_syntax import read_cell


@pytest.mark.parametrize("source,commands", [
    ("!ls -la", ["ls -la"]), ("  !!pip list", ["pip list"]), ("files = !ls src", ["ls src"]),
    ("%sx id", ["id"]), ("%system id", ["id"]), ("%%bash\nsudo id\necho x\n", ["sudo id\necho x"]),
    ("%%sh\nls\n# %%\nx = 1", ["ls"]), ("%%script bash\nid", ["id"]),
])
def test_shell_lines_are_commands(source: str, commands: list[str]) -> None:
    cell = read_cell(source)
    assert [c.strip() for c in cell.commands] == commands and not cell.problems, cell


@pytest.mark.parametrize("source", ["%run evil.py", "%load_ext evil", "%env PATH=/tmp", "%cd /", "%%writefile x.py\n1",
                                    "%%script python\nprint(1)", "%%javascript\nalert(1)"])
def test_unknown_magics_cannot_be_judged(source: str) -> None:
    assert read_cell(source).problems, source


@pytest.mark.parametrize("source,python", [
    ("%timeit sum(range(10))", "sum(range(10))"), ("%matplotlib inline\nx = 1", "pass\nx = 1"),
    ("x = 1\nprint(x)", "x = 1\nprint(x)"), ("if x:\n    !ls", "if x:\n    pass"),
])
def test_python_is_kept_and_known_magics_become_python(source: str, python: str) -> None:
    cell = read_cell(source)
    assert cell.python == python and not cell.problems, cell
