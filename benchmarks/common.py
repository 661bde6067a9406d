"""What every benchmark shares: a result row and a few timing helpers."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable


@dataclass
class Row:
    """One comparison: our figure against a baseline measured in the same run."""

    name: str
    ours: str
    baseline: str
    result: str  # the ratio or difference, e.g. "1.12x" or "+3.1 ms"
    target: str
    met: bool | None
    method: str
    # Why a target was missed and what would fix it (measured where the module can).
    note: str = ""

    @staticmethod
    def table(rows: list["Row"]) -> str:
        lines = [
            "| benchmark | ours | baseline | result | target | met |",
            "|---|---|---|---|---|---|",
        ]
        for r in rows:
            met = "—" if r.met is None else ("yes" if r.met else "**no**")
            lines.append(f"| {r.name} | {r.ours} | {r.baseline} | {r.result} | {r.target} | {met} |")
        return "\n".join(lines)


def spread(samples: list[float], unit: str = "ms", scale: float = 1000.0) -> str:
    """Median with min–max, e.g. '12.3 ms (11.9–14.0)'."""
    values = [s * scale for s in samples]
    return f"{statistics.median(values):.1f} {unit} ({min(values):.1f}–{max(values):.1f})"


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def kernel_cpu(pid: int) -> float:
    """User + system CPU seconds of a process and its children (psutil, else /proc)."""
    try:
        import psutil
    except ImportError:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        import os

        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    process = psutil.Process(pid)
    total = sum(process.cpu_times()[:2])
    for child in process.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.Error:
            pass
    return total


def start_kernel(project, env: dict[str, str]):
    """A real ipykernel (this venv's Python) in ``project``, driven as a browser drives it.

    Returns the test harness's ``Kernel`` (execute, IOPub messages, widget state, clicks).
    The kernelspec is written next to the project; the caller closes the kernel.
    """
    import sys
    from pathlib import Path

    from tests.notebook.kernel_harness import Kernel

    project = Path(project)
    return Kernel(sys.executable, project, env, project.parent / "jupyter")


def kernel_pid(kernel) -> int:
    """The kernel process id behind a harness ``Kernel``."""
    provisioner = getattr(kernel.km, "provisioner", None)
    process = getattr(provisioner, "process", None)
    if process is not None:
        return process.pid
    return kernel.km.kernel.pid
