"""A command's Preview and undo's record of the variables: what each costs.

    python benchmarks/bench_preview.py            # 10 runs; a 100 MB namespace
    python benchmarks/bench_preview.py --quick    # 3 runs; a 20 MB namespace, for CI

Rows, each measured side by side in one run (medians):

- a preview of a command that changes one file of a 20,000-file project (engine/sandbox/preview.py:
  the throwaway copy or overlay, the run, the comparison) against running the same command in the
  same sandbox directly (as execute_command runs it: listed before, compared after), for each way a preview can run here: bubblewrap over an overlay (only with
  bubblewrap 0.9 or later, which mounts overlays; said when it cannot), bubblewrap over a copy,
  Landlock in a copy. The project lives in /dev/shm when there is one (a copy there is a real copy:
  tmpfs shares no extents, so this is the copy's worst case; btrfs or XFS reflink it);
- the memory undo's record of the namespace takes (notebook/kernel/undo_names.py) while the code
  runs (deep copies of every value it could reach), against the namespace's own size; and once
  the turn is over and changed one small dict, what the record keeps; the time to take the record
  against a plain ``copy.deepcopy`` of the same values (the record also digests each value's pickle).

Prints a markdown table; asserts nothing. ``measure`` is what ``benchmarks/run.py`` calls.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_sandbox import make_project  # noqa: E402
from common import Row, spread  # noqa: E402

import codingcode_jupyter.engine.sandbox.preview as preview_module  # noqa: E402
from codingcode_jupyter.engine.processes import run_process  # noqa: E402
from codingcode_jupyter.engine.sandbox import CommandSandbox  # noqa: E402
from codingcode_jupyter.engine.sandbox.preview import overlay_supported, run_preview  # noqa: E402
from codingcode_jupyter.engine.settings import SandboxSettings  # noqa: E402
from codingcode_jupyter.notebook.kernel.undo_names import NamespaceJournal, estimate_size  # noqa: E402

FILES = 20_000
COMMAND = "echo changed >> d2/f0.js"
ENV = {"PATH": "/usr/bin:/bin"}


def _scratch() -> str | None:
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


async def _direct(sandbox: CommandSandbox, project: Path) -> float:
    """The command as execute_command runs it: the host-executed files listed, the run, the compare."""
    started = time.perf_counter()
    with sandbox.command():
        watch = sandbox.watch_host()
        await run_process(sandbox.argv_for(COMMAND, project, watch=watch), cwd=project, env=ENV, timeout=120)
        watch.changes()
    return time.perf_counter() - started


async def _previewed(sandbox: CommandSandbox, project: Path) -> tuple[float, int]:
    started = time.perf_counter()
    result = await run_preview(sandbox, COMMAND, project, env=ENV, timeout=120)
    elapsed = time.perf_counter() - started
    if result.error is not None or [f.path for f in result.files] != ["d2/f0.js"]:
        raise RuntimeError(f"the preview did not find the one change: {result}")
    return elapsed, len(result.files)


async def _preview_rows(project: Path, runs: int) -> list[Row]:
    rows: list[Row] = []
    variants: list[tuple[str, str, bool]] = [
        ("bubblewrap, overlay", "bwrap", True),
        ("bubblewrap, copy", "bwrap", False),
        ("Landlock, copy", "landlock", False),
    ]
    for label, backend, overlay in variants:
        sandbox = CommandSandbox.create(project, SandboxSettings(backend=backend))  # type: ignore[arg-type]
        name = f"preview of a one-file change, {FILES:,}-file project ({label})"
        if not sandbox.active:
            rows.append(
                Row(
                    name,
                    "—",
                    "—",
                    "not measured",
                    "under 3x the command run directly",
                    None,
                    "preview vs direct run",
                    f"{backend} cannot run here: {sandbox.unavailable_reason}",
                )
            )
            continue
        if overlay and not overlay_supported(sandbox.bwrap):
            rows.append(
                Row(
                    name,
                    "—",
                    "—",
                    "not measured",
                    "under 3x the command run directly",
                    None,
                    "preview vs direct run",
                    "this bubblewrap mounts no overlays (it needs 0.9 or later): previews copy the project",
                )
            )
            await sandbox.aclose()
            continue
        saved = preview_module._overlay_cache.copy()
        if not overlay and sandbox.bwrap is not None:
            preview_module._overlay_cache[sandbox.bwrap] = False  # the copy, where the overlay would be chosen
        copied: list[float] = []
        try:
            await _direct(sandbox, project)
            await _previewed(sandbox, project)  # warm caches
            direct: list[float] = []
            previewed: list[float] = []
            for _ in range(runs):
                direct.append(await _direct(sandbox, project))
                previewed.append((await _previewed(sandbox, project))[0])
                if not overlay:
                    copied.append(_cp(project))
        finally:
            preview_module._overlay_cache.clear()
            preview_module._overlay_cache.update(saved)
            await sandbox.aclose()
        ratio = statistics.median(previewed) / statistics.median(direct)
        if overlay:
            rows.append(
                Row(
                    name,
                    spread(previewed),
                    spread(direct),
                    f"{ratio:.1f}x",
                    "under 3x the command run directly",
                    ratio < 3,
                    "preview (overlay, run, read the upper layer) vs the same command in the same sandbox",
                )
            )
            continue
        over_cp = statistics.median(previewed) / statistics.median(copied)
        rows.append(
            Row(
                name,
                spread(previewed),
                spread(direct),
                f"{ratio:.1f}x (copying alone: {spread(copied)}; preview/copy {over_cp:.1f}x)",
                "within 2x of copying the project with cp -a",
                over_cp < 2,
                "preview (copy, run, compare) vs the same command in the same sandbox, and vs `cp -a "
                "--reflink=auto` of the project alone",
                "a copy's cost grows with the project: an overlay (bubblewrap 0.9) or a reflinking "
                "filesystem (btrfs, XFS) takes it away"
                + ("" if over_cp < 2 else "; beyond the copy, the two walks that compare the trees"),
            )
        )
    return rows


def _cp(project: Path) -> float:
    with tempfile.TemporaryDirectory(dir=project.parent) as target:
        started = time.perf_counter()
        subprocess.run(["cp", "-a", "--reflink=auto", f"{project}/.", target], check=True)
        return time.perf_counter() - started


def _namespace(megabytes: int) -> dict[str, object]:
    import numpy as np
    import pandas as pd

    quarter = megabytes * 1024 * 1024 // 4
    return {
        "frame": pd.DataFrame({"x": np.arange(quarter // 16, dtype="float64"), "y": np.arange(quarter // 16)}),
        "array": np.ones(quarter // 8),
        "records": [{"id": i, "name": f"row{i}", "score": i * 0.5} for i in range(quarter // 400)],
        "settings": {"rate": 0.5, "labels": [f"l{i}" for i in range(1000)]},
        "small": {"a": 1},
    }


def _undo_rows(megabytes: int, runs: int) -> list[Row]:
    try:
        namespace = _namespace(megabytes)
    except ImportError as error:
        return [
            Row(
                "undo record of the namespace",
                "—",
                "—",
                "not measured",
                "",
                None,
                "",
                f"needs numpy and pandas: {error}",
            )
        ]
    size = sum(estimate_size(value, 10**12) for value in namespace.values())
    took: list[float] = []
    plain: list[float] = []
    peak = retained = 0
    for turn in range(runs):
        started = time.perf_counter()
        NamespaceJournal().before_code(namespace, "bench", turn, code="small['b'] = 2", budget_mb=megabytes * 4)
        took.append(time.perf_counter() - started)
        started = time.perf_counter()
        copy.deepcopy(dict(namespace))
        plain.append(time.perf_counter() - started)
        # The memory apart: tracemalloc slows every allocation down.
        journal = NamespaceJournal()
        tracemalloc.start()
        journal.before_code(namespace, "bench", turn, code="small['b'] = 2", budget_mb=megabytes * 4)
        current, _peak = tracemalloc.get_traced_memory()
        peak = max(peak, current)
        namespace["small"]["b"] = 2  # type: ignore[index]  # what the turn's code did
        journal.finish(namespace)
        retained = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        del namespace["small"]["b"]  # type: ignore[attr-defined]
    mb = 1024 * 1024
    ratio = peak / size
    return [
        Row(
            f"undo record of a {size / mb:.0f} MB namespace, while the code runs",
            f"{peak / mb:.1f} MB",
            f"{size / mb:.1f} MB",
            f"{ratio:.2f}x",
            "at most 1.1x the namespace (a copy of each value, digests streamed)",
            ratio <= 1.1,
            "tracemalloc: memory held by the record after it is taken, vs the values' own size",
        ),
        Row(
            "undo record once the turn is over (it changed one small dict)",
            f"{retained / 1024:.0f} KB",
            f"{size / mb:.1f} MB",
            f"{retained / size:.4f}x",
            "under 0.01x: copies of untouched names given back",
            retained / size < 0.01,
            "tracemalloc after the turn's names are classified",
        ),
        Row(
            "time to take the record",
            spread(took),
            spread(plain),
            f"{statistics.median(took) / statistics.median(plain):.1f}x",
            "under 3x a plain deep copy",
            statistics.median(took) / statistics.median(plain) < 3,
            "before_code (copies, digests, size estimates) vs copy.deepcopy of the same values",
            "the digest of each value's pickle (what finds an in-place change without comparing copies) and the "
            "size walk of containers of many small objects (a list of dicts) come on top of the copy",
        ),
    ]


def measure(quick: bool) -> list[Row]:
    """Rows for benchmarks/run.py."""
    runs = 3 if quick else 10
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(dir=_scratch(), prefix="codingcode-bench-") as tmp:
        project = make_project(Path(tmp) / "project", FILES)
        rows += asyncio.run(_preview_rows(project, runs))
    rows += _undo_rows(20 if quick else 100, 3 if quick else 5)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs, a 20 MB namespace")
    options = parser.parse_args()
    print(Row.table(measure(options.quick)))
