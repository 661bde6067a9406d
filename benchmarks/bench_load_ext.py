"""``%load_ext codingcode_jupyter`` in a fresh kernel against ``%load_ext`` of a trivial extension.

Each sample starts two fresh kernels (this venv's ipykernel, a temp project as working
directory): one loads a one-function extension written to a temp dir on the path, the other
loads codingcode_jupyter. The time is taken inside the kernel with ``time.perf_counter()``
around ``run_line_magic("load_ext", ...)``, after a warm-up cell, so kernel start-up and
message transport are outside both figures. The difference of medians is what loading the
extension costs beyond loading any extension.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

from common import Row, spread, start_kernel

TRIVIAL = "bench_trivial_ext"
MARK = "__bench_load_ext__"

CELL = '''
import sys as __bench_sys, time as __bench_time
__bench_before = set(__bench_sys.modules)
__bench_t0 = __bench_time.perf_counter()
get_ipython().run_line_magic("load_ext", {name!r})
__bench_dt = __bench_time.perf_counter() - __bench_t0
__bench_new = set(__bench_sys.modules) - __bench_before
print({mark!r}, __bench_dt, len(__bench_new), ",".join(sorted({{m.split(".")[0] for m in __bench_new}})))
'''

# Packages worth naming when the load is slow: what %load_ext should not need to import.
HEAVY = ("mcp", "numpy", "rank_bm25", "bashlex", "bs4", "markdownify", "anthropic", "httpx2", "uvicorn", "starlette", "pydantic", "yaml")

# Where each heavy package came from when this benchmark was written (checked with -X importtime).
WHY = {
    "mcp": "`notebook.magics.load()` imports `engine.runtime` to register the kernel tools, and the runtime imports "
           "the MCP client at module level, which pulls in the `mcp` server side (starlette, uvicorn) — about half the time.",
    "numpy": "`rank_bm25` (tool_search) imports numpy.",
    "bashlex": "The shell rules import bashlex's parser at module level.",
    "bs4": "The fetch_url module imports bs4/markdownify at module level.",
}


def _load_time(root: Path, name: str, sample: int, env: dict[str, str]) -> tuple[float, int, list[str]]:
    """Seconds the load took, how many modules it imported, and their top-level packages."""
    project = root / f"{name}-{sample}" / "project"
    project.mkdir(parents=True)
    kernel = start_kernel(project, env)
    try:
        warm = kernel.run("1 + 1")
        if warm["status"] != "ok":
            raise RuntimeError("warm-up cell failed")
        msg_id = kernel.execute(CELL.format(name=name, mark=MARK))
        reply = kernel.reply(msg_id)
        out = kernel.text_output(msg_id)
        if reply["status"] != "ok":
            raise RuntimeError(f"%load_ext {name} failed: {out[-2000:]}")
        line = next((row for row in out.splitlines() if row.startswith(MARK)), None)
        if line is None:
            raise RuntimeError(f"no timing printed by the %load_ext {name} cell: {out[-2000:]}")
        fields = line.split()
        return float(fields[1]), int(fields[2]), (fields[3].split(",") if len(fields) > 3 else [])
    finally:
        kernel.close()


def measure(quick: bool) -> list[Row]:
    repeat = 2 if quick else 5
    ours, baseline = [], []
    imported, packages = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ext_dir = root / "ext"
        ext_dir.mkdir()
        (ext_dir / f"{TRIVIAL}.py").write_text(
            '"""A trivial IPython extension: the baseline."""\n\n\ndef load_ipython_extension(ip):\n    ip.user_ns["loaded"] = True\n'
        )
        # No server is needed to load; the key and URL are what a user's kernel would have.
        env = {
            # The trivial extension's folder first, then whatever tree the benchmarks run against.
            "PYTHONPATH": os.pathsep.join(p for p in (str(ext_dir), os.environ.get("PYTHONPATH", "")) if p),
            "ANTHROPIC_API_KEY": "test-key",
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
            "CODINGCODE_MODEL": "claude-test",
        }
        for sample in range(repeat):
            baseline.append(_load_time(root, TRIVIAL, sample, env)[0])
            seconds, imported, packages = _load_time(root, "codingcode_jupyter", sample, env)
            ours.append(seconds)
    extra_ms = (statistics.median(ours) - statistics.median(baseline)) * 1000
    heavy = [p for p in HEAVY if p in packages]
    note = ""
    if extra_ms >= 300:
        why = [reason for package, reason in WHY.items() if package in packages]
        note = (
            f"the load imported {imported} modules from {len(packages)} packages, among them {', '.join(heavy) or 'none of the usual heavy ones'}. "
            + (" ".join(why) + " " if why else "")
            + "Fix: `%load_ext` should only register the magics, the transformer and the config; import the engine "
            "(and each of these libraries) where it is first used, so the cost moves to the first `%%agent` cell."
        )
    return [
        Row(
            name="%load_ext codingcode_jupyter in a fresh kernel",
            ours=spread(ours),
            baseline=spread(baseline) + " trivial extension",
            result=f"{extra_ms:+.1f} ms",
            target="< 300 ms extra",
            met=extra_ms < 300,
            method=__doc__.strip().replace("\n", " "),
            note=note,
        )
    ]
