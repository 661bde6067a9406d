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
