"""The guard's attack corpus (tests/data/attacks/guard.yaml), judged by the real approval pipeline.

Every approval row (no ``sandbox`` key) is one tool call in one mode: it must get its expected
decision (no card where one is due is a failure), and its control — the same payload at a
harmless target, same tool, same mode unless the row says otherwise — must be allowed
unasked, so a judge that asks about everything fails here. The tools are the real
definitions (built-in and kernel tools); the project and home are the corpus' own
(make_guard_project / make_guard_home), HOME pointing at the fake home. A row with ``gap``
(``control_gap``: its control) is a known gap: xfail, strict (it fails the run the day it starts to pass). A row
with ``forced`` must get a forced ask (no reviewer answers it), one with ``layer`` that layer's verdict. The sandbox rows
run in test_guard_sandbox.py.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest

from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
from codingcode_jupyter.engine.tools.base import ToolCall
from codingcode_jupyter.engine.tools.builtin import builtin_tools
from codingcode_jupyter.notebook.kernel.tools import kernel_tools
from tests.data.attacks.corpus import GuardRow, guard_rows, make_guard_home, make_guard_project, person_namespace
from tests.engine.helpers import make_deps, tool_context

TOOLS = {tool.name: tool for tool in [*builtin_tools(), *kernel_tools(namespace=person_namespace())]}
# The rows are parametrised with a placeholder home; each test fills in the fixture's.
_HOME = "/home/guard-corpus-placeholder"
ROWS = [row for row in guard_rows(_HOME) if row.sandbox is None]


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    root = tmp_path_factory.mktemp("guard")
    home = make_guard_home(root)
    project = make_guard_project(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        # Code run in the kernel starts in the kernel's working directory: here, the project's.
        patch.chdir(project)
        yield project, home


def _fill(value: Any, home: Path) -> Any:
    if isinstance(value, str):
        return value.replace(_HOME, str(home))
    if isinstance(value, list):
        return [_fill(v, home) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, home) for k, v in value.items()}
    return value


async def judge(project: Path, home: Path, tool: str, tool_input: dict[str, Any], mode: str) -> Any:
    """The pipeline's verdict for one call, with no settings of the person's (an empty settings file)."""
    # The rows are about what is decided, not how fast: on a loaded machine the 200-level nesting can pass
    # the half-second budget and become a question (the budget has tests of its own).
    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False, judge_seconds=5.0)
    call = ToolCall(tool_use_id="t1", tool=TOOLS[tool], input=_fill(tool_input, home))
    return await pipeline.evaluate(call, tool_context(project, deps=make_deps(project), mode=mode))


def _param(row: GuardRow) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=row.gap)] if row.gap else []
    return pytest.param(row, id=row.id, marks=marks)


def test_the_corpus_has_its_size_and_classes() -> None:
    rows = guard_rows(_HOME)
    counts = collections.Counter(row.cls for row in rows)
    assert len(rows) >= 250, counts
    assert len(counts) >= 8, counts
    assert all(row.expect in ("ask", "deny") for row in ROWS)
    assert all(row.expect in ("no-leak", "no-plant") and row.target and row.control_target
               for row in rows if row.sandbox), "a sandbox row needs its target and its control's"
    assert all(row.tool in TOOLS and row.control_tool in TOOLS for row in rows)


@pytest.mark.parametrize("row", [_param(row) for row in ROWS])
async def test_attack_gets_its_decision(target, row: GuardRow) -> None:
    project, home = target
    verdict = await judge(project, home, row.tool, row.input, row.mode)
    assert str(verdict.kind) == row.expect, f"{row.why}: {verdict.kind} by {verdict.layer} — {verdict.reason}"
    if row.forced:
        # No mode, rule or reviewer (auto mode) answers it: only the person.
        assert verdict.forced, f"{row.why}: an ask the reviewer may answer, by {verdict.layer} — {verdict.reason}"
    if row.layer is not None:
        assert verdict.layer == row.layer, f"{row.why}: asked by {verdict.layer}, not {row.layer} — {verdict.reason}"


def _control_param(row: GuardRow) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=row.control_gap)] if row.control_gap else []
    return pytest.param(row, id=row.id, marks=marks)


@pytest.mark.parametrize("row", [_control_param(row) for row in ROWS])
async def test_control_is_allowed(target, row: GuardRow) -> None:
    """Positive control: the same payload at a harmless target runs unasked."""
    project, home = target
    verdict = await judge(project, home, row.control_tool, row.control_input, row.control_mode)
    assert str(verdict.kind) == "allow", f"control of {row.why}: {verdict.kind} by {verdict.layer} — {verdict.reason}"


# ----- the person's own `run_python` allow rule wins over "cannot be proven"; a project's does not ------

UNPROVABLE = "import os\ngetattr(os, 'system')('id')"


@pytest.mark.parametrize("mode", ["default", "bypass"])
async def test_a_persons_run_python_rule_allows_unprovable_code(tmp_path, monkeypatch, mode: str) -> None:
    home, project = make_guard_home(tmp_path), make_guard_project(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODINGCODE_USER_DIR", str(home / ".codingcode"))
    asked = await judge(project, home, "run_python", {"code": UNPROVABLE}, mode)
    assert str(asked.kind) == "ask" and asked.forced and asked.rule == "builtin:unresolved", asked.model_dump()
    # A project's rule (a cloned repository may ship one) does not make it the person's choice.
    (project / ".codingcode" / "settings.json").write_text('{"permissions": {"allow": ["run_python"]}}')
    still = await judge(project, home, "run_python", {"code": UNPROVABLE}, mode)
    assert str(still.kind) == "ask" and still.forced, still.model_dump()
    # The person's own settings do.
    (home / ".codingcode").mkdir(exist_ok=True)
    (home / ".codingcode" / "settings.json").write_text('{"permissions": {"allow": ["run_python"]}}')
    allowed = await judge(project, home, "run_python", {"code": UNPROVABLE}, mode)
    assert str(allowed.kind) == "allow", allowed.model_dump()
    # Built-in denials still hold against it.
    denied = await judge(project, home, "run_python", {"code": "import os\nos.system('sudo id')"}, mode)
    assert str(denied.kind) == "deny", denied.model_dump()


# ----- code runs where the kernel is: an earlier call's chdir, a gateway's directory ---------------


@pytest.mark.parametrize("tool,code", [("run_python", "open('shadow').read()"),
                                       ("run_python", "import os\nos.system('cat shadow')"),
                                       ("run_cells", "!cat shadow")])
async def test_code_is_judged_from_the_kernels_working_directory(tmp_path, monkeypatch, tool: str, code: str) -> None:
    home, project = make_guard_home(tmp_path), make_guard_project(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    call = {"code": code, **({"cell_id": "c1"} if tool == "run_cells" else {})}
    # Positive control: from the project, `shadow` is a file of the project.
    monkeypatch.chdir(project)
    assert str((await judge(project, home, tool, call, "bypass")).kind) == "allow"
    # An earlier call ran `os.chdir('/etc')` (harmless on its own): the kernel is there now.
    assert str((await judge(project, home, "run_python", {"code": "import os\nos.chdir('/etc')"}, "bypass")).kind) == "allow"
    monkeypatch.chdir("/etc")
    denied = await judge(project, home, tool, call, "bypass")
    assert str(denied.kind) == "deny", denied.model_dump()
