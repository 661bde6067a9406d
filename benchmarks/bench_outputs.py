"""Recorded outputs stay within their memory budget: N cells, each displaying a fresh 1 MB image.

Two fresh kernels (this venv's ipykernel) run the same cells side by side: the baseline
without the extension, ours with ``%load_ext codingcode_jupyter`` (which records every
cell's outputs) and the budget set with ``%config OutputHistory.max_bytes``. Each cell
displays a new, incompressible 1 MB PNG (random pixels stored uncompressed, so no two cells
share bytes). The client reads every IOPub message as a browser would, and drops it.
Reported: the bytes the recorder says it keeps and the cells it keeps (read in the kernel),
the kernel's RSS growth over the run (after ``gc.collect()``) against the baseline's, and
the median in-kernel time of one ``display()`` with and without recording.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from common import Row, kernel_pid, start_kernel

MARK = "__bench_outputs__"

SETUP = '''
import gc, os, struct, time, zlib
from IPython.display import Image, display

def __bench_png(size=1_000_000):
    side = int((size / 3) ** 0.5)
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = b"".join(b"\\x00" + os.urandom(side * 3) for _ in range(side))
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b"")

__bench_times = []

def __bench_show():
    image = Image(__bench_png())
    started = time.perf_counter()
    display(image)
    __bench_times.append(time.perf_counter() - started)
'''

REPORT = '''
import gc, statistics
gc.collect()
try:
    from codingcode_jupyter.notebook.kernel.outputs import output_history
    __h = output_history(get_ipython())
except ImportError:
    __h = None
print({mark!r}, statistics.median(__bench_times), __h.size if __h else 0, len(__h.cells()) if __h else 0)
'''


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def _run_quiet(kernel, code: str, timeout: float = 120) -> str:
    """Execute and read IOPub until idle, keeping only stream text (images are dropped as read)."""
    msg_id = kernel.kc.execute(code)
    text = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = kernel.kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            text.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            raise RuntimeError("\n".join(msg["content"]["traceback"])[-2000:])
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    reply = kernel.kc.get_shell_msg(timeout=timeout)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"cell failed: {''.join(text)[-2000:]}")
    return "".join(text)


def _one_run(root: Path, name: str, cells: int, budget: int | None) -> dict[str, float]:
    project = root / name / "project"
    project.mkdir(parents=True)
    env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "CODINGCODE_MODEL": "claude-test"}
    kernel = start_kernel(project, env)
    try:
        if budget is not None:
            _run_quiet(kernel, f"%load_ext codingcode_jupyter\n%config OutputHistory.max_bytes = {budget}")
        _run_quiet(kernel, SETUP)
        _run_quiet(kernel, "__bench_show()")  # warm-up: first display, first PNG
        _run_quiet(kernel, "gc.collect()")
        pid = kernel_pid(kernel)
        before = _rss(pid)
        for _ in range(cells):
            _run_quiet(kernel, "__bench_show()")
        out = _run_quiet(kernel, REPORT.format(mark=MARK))
        after = _rss(pid)
    finally:
        kernel.close()
    line = next(line for line in out.splitlines() if line.startswith(MARK))
    _, median, kept, kept_cells = line.split()
    return {"growth": after - before, "display": float(median), "kept": int(kept), "cells": int(kept_cells)}


def measure(quick: bool) -> list[Row]:
    cells = 60 if quick else 500
    budget = (16 if quick else 64) * 1024 * 1024
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = _one_run(root, "baseline", cells, None)
        ours = _one_run(root, "ours", cells, budget)
    mb = 1024 * 1024
    extra = ours["growth"] - base["growth"]
    within = ours["kept"] <= budget and extra <= 1.25 * budget
    return [
        Row(
            name=f"recorded outputs, {cells} cells each displaying a fresh 1 MB image (budget {budget // mb} MB)",
            ours=(f"kept {ours['kept'] / mb:.1f} MB in {ours['cells']} cells; kernel RSS +{ours['growth'] / mb:.0f} MB; "
                  f"display() {ours['display'] * 1000:.2f} ms"),
            baseline=f"no extension: RSS +{base['growth'] / mb:.0f} MB; display() {base['display'] * 1000:.2f} ms",
            result=f"RSS +{extra / mb:.0f} MB over the baseline ({extra / budget:.2f}x the budget); "
                   f"display() {ours['display'] / base['display']:.2f}x",
            target="kept <= budget, RSS over baseline <= 1.25x budget",
            met=within,
            method=__doc__.strip().replace("\n", " "),
            note="" if within else (
                "the recorder keeps more than its budget or the kernel grows past it: check that dropped cells are "
                "released (no other reference to their bundles) and that one output over max_bytes/4 is refused."
            ),
        )
    ]
