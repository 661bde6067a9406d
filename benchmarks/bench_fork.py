"""run_python in a confined fork of the kernel against the same code run in the kernel itself.

    python benchmarks/bench_fork.py            # a 1 GB namespace, 20 calls each
    python benchmarks/bench_fork.py --quick    # 100 MB, 5 calls

Two rows, each side by side in one run:

- a call that computes a little on a namespace holding a large numpy array: the fork (fork,
  Landlock, seccomp, run, pipes, exit) against ``exec`` of the same code in this process;
- bringing back a 100 MB pandas frame with ``keep`` (pickle in the fork, the pipe, the data-only
  unpickler here) against pickling and loading it in this process with plain pickle.

Asserts nothing. ``measure`` is what ``benchmarks/run.py`` calls.
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import Row  # noqa: E402

TARGET_MS = 20.0


def _plan(project: Path):
    from codingcode_jupyter.engine.sandbox import landlock

    plan = landlock.Plan()
    for path in (*landlock.SYSTEM_READ, "/etc", *landlock.python_roots()):
        plan.grant(landlock.READ, path)
    for path in landlock.DEVICES:
        plan.grant(landlock.READ_FILE | landlock.WRITE_FILE, path)
    plan.grant(landlock.READ | landlock.WRITE, project)
    return plan


async def _fork_times(namespace: dict, code: str, runs: int, plan, keep: list[str]) -> tuple[list[float], object]:
    from codingcode_jupyter.notebook.kernel.fork import run_in_fork

    times, last = [], None
    for _ in range(runs):
        start = time.perf_counter()
        last = await run_in_fork(namespace, None, code, timeout=60, keep=keep, plan=plan, progress=lambda line: None)
        times.append(time.perf_counter() - start)
    return times, last


def measure(quick: bool) -> list[Row]:
    from codingcode_jupyter.notebook.kernel.fork import fork_unavailable

    why = fork_unavailable()
    if why is not None:
        return [Row("run_python in a confined fork", "—", "—", f"skipped: {why}", f"< {TARGET_MS:.0f} ms", None, "")]
    import numpy as np
    import pandas as pd

    size = (100 if quick else 1024) << 20
    runs = 5 if quick else 20
    namespace: dict = {"big": np.ones(size // 8), "rows": list(range(1000))}
    code = "total = sum(rows) + int(big[:10].sum())\ntotal"
    with tempfile.TemporaryDirectory() as tmp:
        plan = _plan(Path(tmp))
        forked, _ = asyncio.run(_fork_times(namespace, code, runs, plan, []))
        inline = []
        compiled = compile(code.replace("\ntotal", ""), "<bench>", "exec")
        for _ in range(runs):
            start = time.perf_counter()
            exec(compiled, namespace)
            inline.append(time.perf_counter() - start)
        frame_rows = (100 << 20) // 16
        namespace["frame"] = pd.DataFrame({"a": np.arange(frame_rows, dtype=np.int64),
                                           "b": np.random.default_rng(0).random(frame_rows)})
        kept, result = asyncio.run(_fork_times(namespace, "frame = frame", 1 if quick else 3, plan, ["frame"]))
        local = []
        for _ in range(1 if quick else 3):
            start = time.perf_counter()
            pickle.loads(pickle.dumps(namespace["frame"], protocol=5))
            local.append(time.perf_counter() - start)
    overhead = (statistics.median(forked) - statistics.median(inline)) * 1000
    megabytes = size >> 20
    rows = [
        Row(name=f"run_python in a confined fork, {megabytes:,} MB namespace",
            ours=f"median {statistics.median(forked) * 1000:.1f} ms", baseline=f"median {statistics.median(inline) * 1000:.3f} ms (exec in the kernel)",
            result=f"+{overhead:.1f} ms", target=f"< +{TARGET_MS:.0f} ms", met=overhead < TARGET_MS,
            method=f"run_in_fork (fork, Landlock + seccomp, run, pipes, exit) of a small computation on a namespace "
                   f"holding a {megabytes:,} MB numpy array, {runs} calls; baseline exec of the same code here"),
        Row(name="keep a 100 MB pandas frame from the fork",
            ours=f"median {statistics.median(kept) * 1000:.0f} ms", baseline=f"median {statistics.median(local) * 1000:.0f} ms (pickle round trip here)",
            result=f"{statistics.median(kept) / statistics.median(local):.1f}x", target="—", met=None,
            method="run_in_fork with keep=['frame'] (pickle in the fork, pipe, data-only unpickler) against "
                   "pickle.dumps + pickle.loads of the same frame in this process"),
    ]
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    print(Row.table(measure(parser.parse_args().quick)))
