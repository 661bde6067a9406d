"""Real agent traffic through the judge: every tool input of tests/data/replay/commands.jsonl gets a
decision in every mode, none by an internal error, none hangs; read-only commands inside the
project (by the corpus' own classifier) are not asked in default mode.

The corpus holds what coding agents really sent (Claude Code hook logs, aider chats, SWE-agent and
mini-swe-agent trajectories, OpenHands), with source and licence per row (its README).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
from codingcode_jupyter.engine.budget import DEFAULT_SECONDS
from tests.data.replay.corpus import call_of, load, make_project, reads_in_project

from .approval_helpers import call, context

ROWS = load()
_CEILING = 10 * DEFAULT_SECONDS


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return make_project(tmp_path_factory.mktemp("replay"))


def _judge_all(project: Path, mode: str) -> list[tuple[object, object, float]]:
    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
    ctx = context(project, mode=mode)

    async def run() -> list[tuple[object, object, float]]:
        out = []
        for row in ROWS:
            tool, tool_input = call_of(row)
            started = time.perf_counter()
            verdict = await pipeline.evaluate(call(tool, tool_input), ctx)
            out.append((row, verdict, time.perf_counter() - started))
        return out

    return asyncio.run(run())


def test_the_corpus_is_what_its_readme_says():
    assert len(ROWS) >= 2000  # issue 42: at least 2,000 distinct real inputs
    assert len({(row.tool, json.dumps(row.input, sort_keys=True)) for row in ROWS}) == len(ROWS)
    assert {row.license for row in ROWS} <= {"MIT", "Apache-2.0"}
    assert all(row.source and row.agent for row in ROWS)
    assert sum("<<" in row.input for row in ROWS if row.tool == "bash") >= 10  # here-documents are in it


@pytest.fixture(scope="module")
def judged_default(project: Path) -> list[tuple[object, object, float]]:
    return _judge_all(project, "default")


def _check_total(judged: list[tuple[object, object, float]]) -> None:
    failed = [(row.input, verdict.reason) for row, verdict, _ in judged if "judging it failed" in verdict.reason]
    assert not failed, failed[:5]
    slow = [(repr(row.input)[:80], seconds) for row, _, seconds in judged if seconds > _CEILING]
    assert not slow, slow  # a hang, not a speed target: the budget turns slowness into a question


@pytest.mark.slow
def test_every_real_input_gets_a_decision_in_default_mode(judged_default):
    _check_total(judged_default)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["bypass", "plan", "acceptEdits"])
def test_every_real_input_gets_a_decision_and_none_by_an_internal_error(project: Path, mode: str):
    _check_total(_judge_all(project, mode))


@pytest.mark.slow
def test_read_only_commands_inside_the_project_are_not_asked(judged_default):
    judged = judged_default
    reading = [(row, verdict) for row, verdict, _ in judged if row.tool == "bash" and reads_in_project(row.input)]
    asked = [(row.input, verdict.reason) for row, verdict in reading if verdict.kind != "allow"]
    assert len(reading) >= 50, len(reading)  # the classifier finds enough to say something
    assert len(asked) <= len(reading) * 0.05, asked


def test_the_classifier_can_say_no():
    # Control: the classifier is not "everything reads".
    assert reads_in_project("grep -n TODO src/app.py | head -5")
    for command in ("rm -rf build", "cat /etc/hosts", "echo x > out.txt", "sed -i s/a/b/ f", "cat .env",
                    "git commit -m x", "find . -delete", "cat <<'EOF' > a.py\nx\nEOF"):
        assert not reads_in_project(command), command
