"""Run every benchmark and print one table of ratios measured side by side in the same run.

    python benchmarks/run.py            # full sizes; writes benchmarks/results.md
    python benchmarks/run.py --quick    # small sizes, for CI: it must keep working, figures never fail

Each ``bench_*.py`` module exposes ``measure(quick: bool) -> list[Row]``. A row compares our
figure with a baseline taken in the same run on the same machine; the target is stated
with it and whether it was met, never asserted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import Row  # noqa: E402

MODULES = [
    "bench_search",
    "bench_loop",
    "bench_stream",
    "bench_text_latency",
    "bench_load_ext",
    "bench_first_cell",
    "bench_connection",
    "bench_mcp_start",
    "bench_session_open",
    "bench_parallel",
    "bench_approval",
    "bench_judge",
    "bench_replay",
    "bench_fork",
    "bench_redaction",
    "bench_sandbox",
    "bench_preview",
    "bench_outputs",
    "bench_questions",
    "bench_hub_soak",
    "bench_suite",
]


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.system()} {platform.release()}, {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (CI)")
    parser.add_argument("--only", nargs="*", help="module names to run")
    parser.add_argument("--output", type=Path, default=HERE / "results.md")
    args = parser.parse_args(argv)

    rows: list[Row] = []
    failures: list[str] = []
    for name in args.only or MODULES:
        if not (HERE / f"{name}.py").exists():
            continue
        started = time.perf_counter()
        print(f"[{name}] ...", file=sys.stderr, flush=True)
        try:
            module = importlib.import_module(name)
            rows.extend(module.measure(args.quick))
        except Exception:
            failures.append(name)
            traceback.print_exc()
        print(f"[{name}] {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)

    header = (
        f"Measured {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} on {machine()}"
        f"{' (quick mode: small sizes)' if args.quick else ''}.\n\n"
    )
    table = Row.table(rows)
    methods = "\n".join(f"- **{row.name}**: {row.method}" for row in rows)
    notes = "\n".join(f"- **{row.name}**: {row.note}" for row in rows if row.note)
    text = f"# Benchmark results\n\n{header}{table}\n\n## Method\n\n{methods}\n"
    if notes:
        text += f"\n## Notes on missed targets\n\n{notes}\n"
    print(table)
    if notes:
        print("\n" + notes)
    args.output.write_text(text)
    if failures:
        print(f"benchmarks that failed to run: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
