"""IPython's syntax in a cell read for the judge (engine/approval/ipython_syntax.py): shell lines are
commands as IPython expands them, known magics are Python or nothing, unknown magics cannot be judged;
plain Python is kept."""

from __future__ import annotations

from typing import Any

import pytest

from codingcode_jupyter.engine.approval.ipython_syntax import Field, api_lines, expansion, read_cell
from codingcode_jupyter.engine.approval.python_code import analyse_python


def commands(source: str) -> list[str]:
    reading = analyse_python(source, ipython=True, cwd="/project")
    assert not reading.unresolved, reading.unresolved
    return [command.text.strip() for command in reading.commands]


@pytest.mark.parametrize("source,expected", [
    ("!ls -la", ["ls -la"]), ("!!pip list", ["pip list"]), ("files = !ls src", ["ls src"]),
    ("%sx id", ["id"]), ("%system id", ["id"]), ("%%bash\nsudo id\necho x\n", ["sudo id\necho x"]),
    ("%%sh\nls\n# %%\nx = 1", ["ls"]), ("%%script bash\nid", ["id"]),
    ("x = 'ls src'\n!{x}", ["ls src"]), ("F = 'a.txt'\n!cat $F", ["cat a.txt"]), ("!echo $$HOME {{x}}", ["echo $HOME {x}"]),
    ("!awk '{print $1}' f", ["awk '{print $1}' f"]), ("!find . -exec rm {} +", ["find . -exec rm {} +"]),
    ("!echo '$HOME'", ["echo '$HOME'"]), ("%%bash\necho {x}\n", ["echo {x}"]), ("%%system\necho {'a'}\n", ["echo a"]),
    ("%sx echo {{}}", ["echo {}"]), ("n = 3\n!head -n {n} f", ["head -n 3 f"]),
])
def test_shell_lines_are_commands_as_ipython_expands_them(source: str, expected: list[str]) -> None:
    assert commands(source) == expected


@pytest.mark.parametrize("source", [
    "!{x}",  # bound in the notebook, not by the code
    "!cat {'a'[::-1]}",  # not folded
    "!echo $HOME",  # IPython evaluates HOME first: what it is bound to is not known
    "p = 'a'\ndef f():\n    p = 'b'\n!cat {p}",  # bound twice
    "!cat {p}\np = 'a'",  # bound after the line
    "def f():\n    c = 'ls'\n!{c}",  # bound in another scope
    "if True:\n    c = 'ls'\n!{c}",  # bound in a branch
    "def f(c):\n    !{c}",  # an argument
    "%sx echo {{x}}",  # the second expansion evaluates x
    "x = '{y}'\n%sx echo {x}",
])
def test_an_expansion_the_judge_cannot_fold_is_unresolved(source: str) -> None:
    assert analyse_python(source, ipython=True, cwd="/project").unresolved, source


@pytest.mark.parametrize("source", ["%run evil.py", "%load_ext evil", "%env PATH=/tmp", "%cd /", "%%writefile x.py\n1",
                                    "%%script python\nprint(1)", "%%javascript\nalert(1)", "%matplotlib {x}",
                                    "%matplotlib module://evil", "%history -f out.py", "%%bash {x}\nls",
                                    "%%capture {x}\n1"])
def test_unknown_magics_and_expanded_arguments_cannot_be_judged(source: str) -> None:
    assert read_cell(source).problems, source


@pytest.mark.parametrize("source", ["%matplotlib inline", "%matplotlib", "%history -n 3", "%timeit {1: 2}",
                                    "%%time\nx = {1: 2}", "%pwd"])
def test_known_magics_are_not_problems(source: str) -> None:
    assert not read_cell(source).problems, source


@pytest.mark.parametrize("source,python", [
    ("%timeit sum(range(10))", "sum(range(10))"), ("%matplotlib inline\nx = 1", "pass\nx = 1"),
    ("x = 1\nprint(x)", "x = 1\nprint(x)"), ("if x:\n    !ls", "if x:\n    {marker}('ls')"),
])
def test_python_is_kept_and_known_magics_become_python(source: str, python: str) -> None:
    cell = read_cell(source)
    assert cell.python == python.format(marker=cell.marker) and not cell.problems, cell


# IPython's own formatter is the reference: what expansion() reads must be what IPython makes.
TEMPLATES = ["cat {a}nv", "ls $d/x", "echo $$d {{d}}", "awk '{print $1}' f", "echo '$d' \"$d\"", "x {a!r} {n:>4}",
             "{a}{a}", "echo $d.upper", "echo {}", "echo {a", "echo a}", "echo {a!z}", "echo {yield a}",
             "echo $1 ${d}", "echo {n*2} $n", "grep -E 'a{2,3}' f", "echo {'{'}", "echo {missing}"]


def _evaluated(pieces: list[str | Field] | None, template: str, namespace: dict[str, Any]) -> str:
    if pieces is None:
        return template
    out = []
    try:
        for piece in pieces:
            if isinstance(piece, str):
                out.append(piece)
            else:
                value = eval(piece.expression, dict(namespace))  # noqa: S307 - the test's own namespace
                converted = {"r": repr, "a": ascii, "s": str}.get(piece.conversion or "s", str)(value)
                out.append(format(converted if piece.conversion else value, ""))
    except Exception:  # IPython keeps the line as written when a field fails
        return template
    return "".join(out)


@pytest.mark.parametrize("template", TEMPLATES)
def test_expansion_agrees_with_ipythons_formatter(template: str) -> None:
    from IPython.utils.text import DollarFormatter

    namespace = {"a": ".e", "d": "dir", "n": 7}
    try:
        expected = DollarFormatter().vformat(template, [], namespace)
    except Exception:
        expected = template
    assert _evaluated(expansion(template), template, namespace) == expected


@pytest.mark.parametrize("code, line", [
    ("get_ipython().system('ls {x}')", "!ls {x}"),
    ("if x:\n    files = get_ipython().getoutput('cat a')", "if x:\n    files = !cat a"),
    ("get_ipython().run_line_magic('sx', 'ls')", "%sx ls"),
])
def test_ipythons_api_on_constant_text_is_the_line_it_stands_for(code, line):
    assert api_lines(code) == line


@pytest.mark.parametrize("code", [
    "get_ipython().system(x)", "x = get_ipython().system('ls')", "print(1); get_ipython().system('ls')",
    "get_ipython().system('ls')  # why", "ip.system('ls')", "get_ipython().run_cell_magic('bash', '', 'ls')",
    "get_ipython().system('ls', split=False)", "def get_ipython():\n    pass\nget_ipython().system('ls')",
    "from x import y as get_ipython\nget_ipython().system('ls')", "s = '''\nget_ipython().system('ls')\n'''",
    "get_ipython().system('a\\nb')",
])
def test_any_other_use_of_the_api_is_left_as_written(code):
    assert api_lines(code) is None
