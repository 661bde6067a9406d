"""Session open on a large project: 20,000 files and a settings file of 2,000 rules.

The large project is a temp directory of 20,000 small files (200 folders of 100) whose
``.codingcode/settings.json`` holds 2,000 permission rules (1,000 ``execute_command``
allow rules, 500 ``read_file`` path allows, 300 ``fetch_url`` domain denies, 200
``edit_file`` asks); the baseline is an empty project. Each sample is a fresh Python process
(this venv) that imports the engine and runs ``runtime.warm_up()`` first, as the notebook's
prewarm does, then times one ``runtime.open_session(project)`` plus ``session.start()`` under
an event loop — settings read and every rule parsed, sandbox, MCP, tools, prompt — with
``time.perf_counter()``. Both projects are trusted with CODINGCODE_TRUST=1, so every rule counts.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import Row, spread

FILES, FOLDERS = 20_000, 200

OPEN = '''
import asyncio, sys, time
from codingcode_jupyter.engine import runtime
runtime.warm_up()

async def main():
    started = time.perf_counter()
    session = runtime.open_session(sys.argv[1])
    await session.start()
    took = time.perf_counter() - started
    rules = len(session.settings.current().rules)
    await session.aclose()
    print(took, rules)

asyncio.run(main())
'''


def _large_project(root: Path) -> Path:
    project = root / "large"
    for folder in range(FOLDERS):
        directory = project / "src" / f"d{folder:03d}"
        directory.mkdir(parents=True)
        for index in range(FILES // FOLDERS):
            (directory / f"m{index:03d}.py").write_text(f"VALUE = {folder * 1000 + index}\n")
    rules = {
        "allow": [f"execute_command(tool-{n} *)" for n in range(1000)] + [f"read_file(src/d{n % FOLDERS:03d}/m{n:03d}*.py)" for n in range(500)],
        "deny": [f"fetch_url(domain:h{n}.example.com)" for n in range(300)],
        "ask": [f"edit_file(docs/s{n}/*.md)" for n in range(200)],
    }
    (project / ".codingcode").mkdir()
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"permissions": rules}, indent=1))
    return project


def _open_once(project: Path, env: dict[str, str]) -> tuple[float, int]:
    """Seconds the open took and how many rules the session's settings hold."""
    done = subprocess.run([sys.executable, "-c", OPEN, str(project)], capture_output=True, text=True, env=env, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    seconds, rules = done.stdout.split()
    return float(seconds), int(rules)


def measure(quick: bool) -> list[Row]:
    repeat = 3 if quick else 7
    large, empty = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project = _large_project(root)
        bare = root / "empty"
        bare.mkdir()
        env = {**os.environ, "CODINGCODE_TRUST": "1", "CODINGCODE_USER_DIR": str(root / "user"),
               "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")])}
        for _ in range(repeat):
            empty.append(_open_once(bare, env)[0])
            seconds, rules = _open_once(project, env)
            large.append(seconds)
    ratio = statistics.median(large) / max(statistics.median(empty), 1e-9)
    extra = (statistics.median(large) - statistics.median(empty)) * 1000
    return [Row(
        name=f"session open, {FILES:,} files and 2,000 rules",
        ours=spread(large) + f"; {rules:,} rules in effect",
        baseline=spread(empty) + " empty project",
        result=f"{ratio:.2f}x ({extra:+.1f} ms)",
        target="— (reported)",
        met=None,
        method=__doc__.strip().replace("\n", " "),
    )]
