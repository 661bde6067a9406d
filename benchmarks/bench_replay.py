"""The judge on real agent traffic: time per call (p50/p99) and the read-only commands it asks about.

    python benchmarks/bench_replay.py                       # the committed corpus (tests/data/replay)
    python benchmarks/bench_replay.py --corpus rows.jsonl   # any file of the same rows
    python benchmarks/bench_replay.py --quick               # one row in four, for CI

Each row is judged by one ApprovalPipeline (built once, as a session does) in default mode, in
a small git repository. Reported side by side in one run:

- time per call, median and p99, against the same pipeline on `ls -la` (the cheapest command);
- the share of the corpus' read-only commands inside the project (by the corpus' own classifier,
  which knows nothing of the judge) that default mode asks about: each is a needless card;
- calls the judge could not judge (an internal error or its budget spent): a crash before.

Asserts nothing. ``measure`` is what ``benchmarks/run.py`` calls.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import Row  # noqa: E402

P99_TARGET_MS = 20.0
ASKED_TARGET = 0.05


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def _judge_all(pipeline, ctx, rows) -> tuple[list[float], list[tuple[object, object]]]:
    from tests.data.replay.corpus import call_of
    from tests.engine.approval_helpers import call

    times, verdicts = [], []
    for row in rows:
        tool, tool_input = call_of(row)
        start = time.perf_counter()
        verdict = await pipeline.evaluate(call(tool, tool_input), ctx)
        times.append(time.perf_counter() - start)
        verdicts.append((row, verdict))
    return times, verdicts


def replay(corpus: Path | None = None, quick: bool = False) -> dict[str, object]:
    """Judge the corpus; the figures as a dict (also used by the command line below)."""
    from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
    from tests.data.replay.corpus import CORPUS, load, make_project, reads_in_project
    from tests.engine.approval_helpers import call, context

    rows = load(corpus or CORPUS)[:: 4 if quick else 1]
    with tempfile.TemporaryDirectory() as tmp:
        project = make_project(Path(tmp))
        pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
        ctx = context(project, mode="default")
        asyncio.run(pipeline.evaluate(call("execute_command", {"command": "ls"}), ctx))  # tables checked once
        times, verdicts = asyncio.run(_judge_all(pipeline, ctx, rows))
        floor, _ = asyncio.run(_judge_all(pipeline, ctx, [type(rows[0])("bash", "ls -la", "", "", "")] * 200))
    unjudged = Counter(v.reason.split("(")[0].strip() for _, v in verdicts if v.rule == "builtin:unjudged")
    reading = [(row, v) for row, v in verdicts if row.tool == "bash" and reads_in_project(row.input)]
    asked = [(row, v) for row, v in reading if v.kind != "allow"]
    return {"rows": len(rows), "times": times, "floor": floor, "unjudged": unjudged, "reading": len(reading),
            "asked": asked, "decisions": Counter(str(v.kind) for _, v in verdicts)}


def measure(quick: bool) -> list[Row]:
    """Rows for benchmarks/run.py."""
    found = replay(quick=quick)
    times, floor = found["times"], found["floor"]
    assert isinstance(times, list) and isinstance(floor, list)
    median, p99, base = statistics.median(times) * 1000, _p99(times) * 1000, statistics.median(floor) * 1000
    asked = found["asked"]
    assert isinstance(asked, list)
    reading = int(found["reading"])  # type: ignore[call-overload]
    share = len(asked) / reading if reading else 0.0
    unjudged = sum(found["unjudged"].values())  # type: ignore[union-attr]
    method = ("ApprovalPipeline.evaluate (default mode, built once) per row of tests/data/replay/commands.jsonl in "
              "a small git repository, perf_counter around each call")
    return [
        Row(name=f"judge, real agent traffic ({found['rows']} tool inputs)",
            ours=f"median {median:.2f} ms, p99 {p99:.1f} ms, max {max(times) * 1000:.0f} ms; {unjudged} not judged",
            baseline=f"median {base:.2f} ms, p99 {_p99(floor) * 1000:.1f} ms (`ls -la`)",
            result=f"{median / base:.1f}x", target=f"p99 < {P99_TARGET_MS:.0f} ms",
            met=p99 < P99_TARGET_MS, method=method + "; baseline the same pipeline on `ls -la`"),
        Row(name=f"needless questions on read-only commands ({reading} of the corpus)",
            ours=f"{len(asked)} asked ({share:.1%})", baseline="0 (each only reads inside the project)",
            result=f"{share:.1%}", target=f"< {ASKED_TARGET:.0%}", met=share < ASKED_TARGET,
            method=method + "; read-only by the corpus' own classifier (readers only, no redirect but /dev/null, "
                            "relative paths, no file named for secrets)"),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--show-asked", type=int, default=0, help="print this many read-only commands that were asked")
    options = parser.parse_args()
    if options.corpus is None:
        for row in measure(options.quick):
            print(Row.table([row]))
    else:
        found = replay(options.corpus, options.quick)
        times = found["times"]
        assert isinstance(times, list)
        print(f"rows {found['rows']}: median {statistics.median(times) * 1000:.2f} ms, p99 {_p99(times) * 1000:.1f} "
              f"ms, max {max(times) * 1000:.0f} ms; decisions {dict(found['decisions'])}")  # type: ignore[call-overload]
        print(f"not judged: {dict(found['unjudged'])}")  # type: ignore[call-overload]
        asked = found["asked"]
        assert isinstance(asked, list)
        print(f"read-only inside the project: {found['reading']}, asked {len(asked)}")
        for row, verdict in asked[: options.show_asked]:
            print(f"  {row.input[:140]!r}\n      -> {verdict.layer}: {verdict.reason[:160]}")
