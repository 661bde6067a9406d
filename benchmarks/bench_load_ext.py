"""``%load_ext codingcode_jupyter`` in a fresh kernel against ``%load_ext`` of a trivial extension.

Each sample starts two fresh kernels (this venv's ipykernel, a temp project as working
directory): one loads a one-function extension written to a temp dir on the path, the other
loads codingcode_jupyter. The time is taken inside the kernel with ``time.perf_counter()``
around ``run_line_magic("load_ext", ...)``, after a warm-up cell, so kernel start-up and
message transport are outside both figures. The difference of medians is what loading the
extension costs beyond loading any extension.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from common import Row, spread, start_kernel

TRIVIAL = "bench_trivial_ext"
MARK = "__bench_load_ext__"

CELL = '''
import time as __bench_time
__bench_t0 = __bench_time.perf_counter()
get_ipython().run_line_magic("load_ext", {name!r})
__bench_dt = __bench_time.perf_counter() - __bench_t0
print({mark!r}, __bench_dt)
'''


def _load_time(root: Path, name: str, sample: int, env: dict[str, str]) -> float:
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
        line = next((l for l in out.splitlines() if l.startswith(MARK)), None)
        if line is None:
            raise RuntimeError(f"no timing printed by the %load_ext {name} cell: {out[-2000:]}")
        return float(line.split()[1])
    finally:
        kernel.close()


def measure(quick: bool) -> list[Row]:
    repeat = 2 if quick else 5
    ours, baseline = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ext_dir = root / "ext"
        ext_dir.mkdir()
        (ext_dir / f"{TRIVIAL}.py").write_text(
            '"""A trivial IPython extension: the baseline."""\n\n\ndef load_ipython_extension(ip):\n    ip.user_ns["loaded"] = True\n'
        )
        # No server is needed to load; the key and URL are what a user's kernel would have.
        env = {
            "PYTHONPATH": str(ext_dir),
            "ANTHROPIC_API_KEY": "test-key",
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
            "CODINGCODE_MODEL": "claude-test",
        }
        for sample in range(repeat):
            baseline.append(_load_time(root, TRIVIAL, sample, env))
            ours.append(_load_time(root, "codingcode_jupyter", sample, env))
    extra_ms = (statistics.median(ours) - statistics.median(baseline)) * 1000
    return [
        Row(
            name="%load_ext codingcode_jupyter in a fresh kernel",
            ours=spread(ours),
            baseline=spread(baseline) + " trivial extension",
            result=f"{extra_ms:+.1f} ms",
            target="< 300 ms extra",
            met=extra_ms < 300,
            method=__doc__.strip().replace("\n", " "),
        )
    ]
