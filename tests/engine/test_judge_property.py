"""Property: whatever a tool's input is, the judge returns a decision and raises nothing.

Generated shell lines (long words, unicode, NUL and control characters, unbalanced quotes,
here-documents, deep nesting, a megabyte), paths for the file tools and Python (with IPython's
syntax) for code run in the kernel. The walkers check the judging budget as they go, so an input
that takes long becomes a question; the ceiling below only catches a judge that stops checking
(a hang), at ten times the budget.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
from codingcode_jupyter.engine.budget import DEFAULT_SECONDS
from codingcode_jupyter.engine.tools.access import ToolAccess
from codingcode_jupyter.engine.tools.base import AnyArgs, ToolDefinition

from .approval_helpers import call, context

_CEILING = 10 * DEFAULT_SECONDS

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
WORD = st.one_of(
    st.sampled_from(["ls", "cat", "git", "grep", "sed", "awk", "python3", "bash", "sudo", "rm", "curl", "echo", "cd",
                     "-rf", "-c", "-n", "-p", "/", "~", ".env", "../..", "src/app.py", "*", "$HOME", "$(id)", "`id`",
                     "{a,b}", "'", '"', "\\", "EOF", "<<", "<<<", ">", "2>/dev/null", "&&", "||", "|", ";", "&", "(", ")",
                     "$((1 << 2))", "\x00", "\x1b[31m", "\u202e", "\n"]),
    TEXT,
    st.text(alphabet="ab/._-", min_size=200, max_size=5000),  # longer than any name
)
LINE = st.lists(WORD, min_size=1, max_size=30).map(" ".join)


@st.composite
def heredoc_lines(draw: st.DrawFn) -> str:
    head = draw(LINE)
    delimiter = draw(st.sampled_from(["EOF", "'EOF'", '"EOF"', "\\EOF", "-EOF", "E'O'F"]))
    body = draw(st.lists(LINE, max_size=8).map("\n".join))
    end = draw(st.sampled_from(["\nEOF", "\n\tEOF", "", "\nEOF\n" + draw(LINE)]))
    return f"{head} <<{delimiter}\n{body}{end}"


@st.composite
def nested(draw: st.DrawFn) -> str:
    line = draw(LINE)
    for _ in range(draw(st.integers(1, 14))):
        line = draw(st.sampled_from([f"bash -c {line!r}", f"$({line})", f"eval \"{line}\"", f"( {line} )",
                                     f"sh -c '{line}'", f"env {line}"]))
    return line


SHELL = st.one_of(LINE, heredoc_lines(), nested())
PATHS = st.one_of(TEXT, st.text(alphabet="/.a~\x00\n", max_size=300), st.text(alphabet="ab/", min_size=4000,
                                                                                max_size=9000))
PYTHON = st.one_of(
    TEXT,
    st.lists(st.sampled_from([
        "import os", "os.system('id')", "x = 1", "!ls {x}", "%cd /tmp", "%%bash\nsudo id", "print(open('.env').read())",
        "def f():\n    return f()", "exec(input())", "lambda: (yield)", "[i for i in range(10**9)]", "'''", "(((",
        "import subprocess as sp; sp.run(['rm', '-rf', '.'], cwd='/')", "get_ipython().system('id')", "\x00",
    ]), min_size=1, max_size=12).map("\n".join),
)


# Examples per property: a few dozen where a person runs the engine's tests, more where the whole
# suite runs (scripts/test.sh sets CODINGCODE_PROPERTY_EXAMPLES).
EXAMPLES = int(os.environ.get("CODINGCODE_PROPERTY_EXAMPLES", "40"))


def _run_python() -> ToolDefinition:
    async def never(args: object, ctx: object) -> str:
        raise AssertionError("never run")

    return ToolDefinition(name="run_python", description="Python in the kernel", parameters=AnyArgs, execute=never,
                          source="builtin", access=ToolAccess(code="code", opaque=True, ipython=True))


def _judged(project: Path, tool: str | ToolDefinition, tool_input: dict, mode: str) -> None:
    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
    started = time.perf_counter()
    verdict = asyncio.run(pipeline.evaluate(call(tool, tool_input), context(project, mode=mode)))
    elapsed = time.perf_counter() - started
    assert verdict.kind in ("allow", "ask", "deny"), verdict.model_dump()
    assert elapsed < _CEILING, (elapsed, repr(tool_input)[:300])


def _project(tmp_path_factory) -> Path:
    project = tmp_path_factory.getbasetemp() / "judge-property"
    (project / "src").mkdir(parents=True, exist_ok=True)
    (project / ".env").write_text("K=1\n")
    return project


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(command=SHELL, mode=st.sampled_from(["default", "bypass", "plan", "acceptEdits"]))
@example(command="bash -c " + "'bash -c \"" * 6 + "ls" + "\"'" * 6, mode="bypass")
def test_every_command_gets_a_decision(tmp_path_factory, command: str, mode: str):
    _judged(_project(tmp_path_factory), "execute_command", {"command": command}, mode)


@pytest.mark.parametrize("command", [
    "echo " + "word " * 200_000,  # a megabyte of words
    "python3 -c '" + "x = 1\n" * 170_000 + "'",  # a megabyte of Python
    "cat <<'EOF' > big.py\n" + "print('hello')\n" * 70_000 + "EOF",  # a megabyte of here-document
    "ls " + "a" * 1_000_000,
    "echo " + "$(" * 3000 + "ls" + ")" * 3000,
], ids=["words", "python", "heredoc", "word", "nesting"])
def test_a_megabyte_gets_a_decision(tmp_path_factory, command: str):
    _judged(_project(tmp_path_factory), "execute_command", {"command": command}, "bypass")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tool=st.sampled_from(["read_file", "write_file", "edit_file", "search_files", "search_code"]), path=PATHS,
       mode=st.sampled_from(["default", "bypass"]))
def test_every_path_gets_a_decision(tmp_path_factory, tool: str, path: str, mode: str):
    inputs = {"read_file": {"path": path}, "write_file": {"path": path, "content": "x"},
              "edit_file": {"path": path, "old_string": "a", "new_string": "b"},
              "search_files": {"pattern": path}, "search_code": {"pattern": "x", "path": path}}
    _judged(_project(tmp_path_factory), tool, inputs[tool], mode)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(code=PYTHON, mode=st.sampled_from(["default", "bypass"]))
@example(code="x = 1\n" * 100_000, mode="bypass")  # a script too long to read: asked unread
def test_every_python_snippet_gets_a_decision(tmp_path_factory, code: str, mode: str):
    _judged(_project(tmp_path_factory), _run_python(), {"code": code}, mode)


def test_wrong_types_get_a_decision(tmp_path_factory):
    project = _project(tmp_path_factory)
    for tool_input in ({"command": None}, {"command": ["ls"]}, {"command": {"a": 1}}, {}, {"command": 3}):
        _judged(project, "execute_command", tool_input, "bypass")
    for tool_input in ({"path": None}, {"path": 7}, {"path": ["a"]}, {}):
        _judged(project, "read_file", tool_input, "bypass")
