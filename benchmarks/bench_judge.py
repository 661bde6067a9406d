"""The approval judge's time per command and per run_python snippet: median and p99.

    python benchmarks/bench_judge.py            # every row, three rounds
    python benchmarks/bench_judge.py --quick    # one row in five, one round, for CI

Ours: layers 1-4 of one ApprovalPipeline (built once, as a session does) for each row, in
bypass mode. Three rows, each with a baseline taken in the same run:

- the GTFOBins attack corpus against the same pipeline on `ls -la` (the cheapest command), so
  the row shows what the attack-shaped commands cost beyond the floor;
- the ordinary developer commands (tests/data/attacks/developer.yaml) against `ls -la`;
- run_python: the ordinary data snippets (tests/data/attacks/snippets.yaml) and the guard
  corpus' run_python attacks (guard.yaml), judged with the allowlist (python_proof: every
  reference must be understood) against the same pipeline with that pass switched off — the
  judge as it was before the allowlist, side by side.

Asserts nothing. ``measure`` is what ``benchmarks/run.py`` calls.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import Row  # noqa: E402

TARGET_MS = 5.0


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def _times(pipeline, context, call, commands: list[str], rounds: int, tool: str = "execute_command",
                 key: str = "command") -> list[float]:
    samples: list[float] = []
    for _ in range(rounds):
        for command in commands:
            start = time.perf_counter()
            await pipeline.evaluate(call(tool, {key: command}), context)
            samples.append(time.perf_counter() - start)
    return samples


def _run_python_call():
    """approval_helpers.call for the kernel's run_python too (its real definition)."""
    from codingcode_jupyter.notebook.kernel.tools import kernel_tools
    from tests.engine.approval_helpers import call

    run_python = next(tool for tool in kernel_tools(namespace={}) if tool.name == "run_python")
    return lambda tool, tool_input: call(run_python if tool == "run_python" else tool, tool_input)


def _extra_rows(project: Path, home: Path, quick: bool) -> list[Row]:
    """Developer commands, and run_python snippets with and without the allowlist pass."""
    from codingcode_jupyter.engine.approval import python_code
    from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
    from tests.data.attacks.corpus import developer_commands, guard_rows, ordinary_snippets
    from tests.engine.approval_helpers import call, context

    rounds = 1 if quick else 5
    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
    ctx = context(project, mode="bypass")
    commands = developer_commands()
    ours = asyncio.run(_times(pipeline, ctx, call, commands, rounds))
    floor = asyncio.run(_times(pipeline, ctx, call, ["ls -la"] * len(commands), rounds))
    rows = [Row(
        name=f"judge, ordinary developer commands ({len(commands)})",
        ours=f"median {statistics.median(ours) * 1000:.2f} ms, p99 {_p99(ours) * 1000:.1f} ms",
        baseline=f"median {statistics.median(floor) * 1000:.2f} ms, p99 {_p99(floor) * 1000:.1f} ms (`ls -la`)",
        result=f"{statistics.median(ours) / statistics.median(floor):.1f}x",
        target=f"median < {TARGET_MS:.0f} ms", met=statistics.median(ours) * 1000 < TARGET_MS,
        method=f"ApprovalPipeline.evaluate (bypass mode, built once) per command, {rounds} round(s); baseline `ls -la`",
    )]
    snippets = ordinary_snippets() + [row.input["code"] for row in guard_rows(str(home)) if row.tool == "run_python"]
    code_call = _run_python_call()
    with_proof = asyncio.run(_times(pipeline, ctx, code_call, snippets, rounds, "run_python", "code"))
    saved = python_code.unproven
    python_code.unproven = lambda *args, **kwargs: []  # the judge before the allowlist
    try:
        without = asyncio.run(_times(pipeline, ctx, code_call, snippets, rounds, "run_python", "code"))
    finally:
        python_code.unproven = saved
    median, base = statistics.median(with_proof) * 1000, statistics.median(without) * 1000
    rows.append(Row(
        name=f"judge, run_python snippets ({len(snippets)}: ordinary and attacks)",
        ours=f"median {median:.2f} ms, p99 {_p99(with_proof) * 1000:.1f} ms (allowlist)",
        baseline=f"median {base:.2f} ms, p99 {_p99(without) * 1000:.1f} ms (allowlist pass off)",
        result=f"{median / base:.2f}x", target=f"median < {TARGET_MS:.0f} ms", met=median < TARGET_MS,
        method=f"ApprovalPipeline.evaluate of run_python (bypass mode, built once) per snippet, {rounds} round(s); "
               "baseline the same calls with python_proof.unproven switched off (the judge before the allowlist)",
    ))
    return rows


def measure(quick: bool) -> list[Row]:
    """Rows for benchmarks/run.py."""
    try:
        from tests.data.attacks.corpus import Targets, gtfobins_attacks, make_target_home, make_target_project
    except ImportError as error:  # the catalogue is in the test extra
        return [Row("judge, GTFOBins corpus", "—", "—", f"skipped: {error}", f"median < {TARGET_MS:.0f} ms", None, "")]
    from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
    from tests.engine.approval_helpers import call, context

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home, project = make_target_home(root), make_target_project(root)
        saved = os.environ.get("HOME")
        os.environ["HOME"] = str(home)
        try:
            rows = gtfobins_attacks(Targets(str(home)))
            commands = [r.command for r in rows][:: 5 if quick else 1]
            rounds = 1 if quick else 3
            pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
            ctx = context(project, mode="bypass")  # the mode travels with the call's context
            asyncio.run(_times(pipeline, ctx, call, commands[:50], 1))  # warm caches
            ours = asyncio.run(_times(pipeline, ctx, call, commands, rounds))
            floor = asyncio.run(_times(pipeline, ctx, call, ["ls -la"] * len(commands), rounds))
            extra = _extra_rows(project, home, quick)
        finally:
            if saved is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = saved
    median, p99 = statistics.median(ours) * 1000, _p99(ours) * 1000
    base = statistics.median(floor) * 1000
    return [Row(
        name=f"judge, GTFOBins corpus ({len(commands)} commands)",
        ours=f"median {median:.2f} ms, p99 {p99:.1f} ms",
        baseline=f"median {base:.2f} ms, p99 {_p99(floor) * 1000:.1f} ms (`ls -la`)",
        result=f"{median / base:.1f}x",
        target=f"median < {TARGET_MS:.0f} ms",
        met=median < TARGET_MS,
        method=f"ApprovalPipeline.evaluate (layers 1-4, bypass mode, built once) per row, {rounds} round(s), "
               "perf_counter around each call; baseline the same pipeline on `ls -la`",
    ), *extra]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    for row in measure(parser.parse_args().quick):
        print(Row.table([row]))
