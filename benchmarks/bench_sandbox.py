"""Sandbox start-up overhead per command: median wall time of `true`, sandboxed vs not.

    python benchmarks/bench_sandbox.py            # 200 runs each
    python benchmarks/bench_sandbox.py --quick    # 20 runs each, for CI

Prints a markdown table row (target: under 30 ms extra); asserts nothing. ``measure`` is
what ``benchmarks/run.py`` calls.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import Row, spread  # noqa: E402

from codingcode_jupyter.engine.sandbox import CommandSandbox  # noqa: E402
from codingcode_jupyter.engine.settings import SandboxSettings  # noqa: E402

TARGET_MS = 30.0


async def _once(argv: list[str]) -> float:
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    await proc.wait()
    return time.perf_counter() - start


async def _samples(make_argv, runs: int) -> list[float]:
    await _once(make_argv())  # warm caches
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        argv = make_argv()  # building the mount plan is part of the cost
        await _once(argv)
        samples.append(time.perf_counter() - start)
    return samples


async def _measure(runs: int) -> Row:
    name = "sandbox start-up (`true`)"
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        sandbox = CommandSandbox.create(project, SandboxSettings())
        if not sandbox.active:
            return Row(name, "—", "—", f"skipped: {sandbox.unavailable_reason}", f"< {TARGET_MS:.0f} ms extra",
                       None, "bubblewrap unavailable")  # fmt: skip
        try:
            plain = await _samples(lambda: ["bash", "-c", "true"], runs)
            confined = await _samples(lambda: sandbox.argv_for("true", project), runs)
        finally:
            await sandbox.aclose()
    extra_ms = (statistics.median(confined) - statistics.median(plain)) * 1000
    ratio = statistics.median(confined) / statistics.median(plain)
    return Row(
        name=name,
        ours=spread(confined),
        baseline=spread(plain),
        result=f"+{extra_ms:.1f} ms ({ratio:.1f}x)",
        target=f"< {TARGET_MS:.0f} ms extra",
        met=extra_ms < TARGET_MS,
        method=f"median of {runs} runs: argv_for + bwrap ... bash -c true vs bash -c true, own session",
    )


def measure(quick: bool) -> list[Row]:
    """Rows for benchmarks/run.py."""
    return [asyncio.run(_measure(20 if quick else 200))]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 runs instead of 200")
    options = parser.parse_args()
    print(Row.table(measure(options.quick)))
