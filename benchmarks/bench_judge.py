"""The approval judge's time per command on the GTFOBins attack corpus: median and p99.

    python benchmarks/bench_judge.py            # every row, three rounds
    python benchmarks/bench_judge.py --quick    # one row in five, one round, for CI

Ours: layers 1-4 of one ApprovalPipeline (built once, as a session does) for each row, in
bypass mode. Baseline, in the same run: the same pipeline on `ls -la` (the cheapest
command), so the row shows what the attack-shaped commands cost beyond the floor. Asserts
nothing. ``measure`` is what ``benchmarks/run.py`` calls.
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


async def _times(pipeline, context, call, commands: list[str], rounds: int) -> list[float]:
    samples: list[float] = []
    for _ in range(rounds):
        for command in commands:
            start = time.perf_counter()
            await pipeline.evaluate(call("execute_command", {"command": command}), context)
            samples.append(time.perf_counter() - start)
    return samples


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
    )]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    for row in measure(parser.parse_args().quick):
        print(Row.table([row]))
