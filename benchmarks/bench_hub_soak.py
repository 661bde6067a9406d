"""JupyterHub soak: 10 users' kernels, 20 ``%%agent`` turns each, all at once, through a real hub
and configurable-http-proxy (tests/hub/hub_harness.py), against the local Messages API.

Each turn is the same: the model asks to run a command the admin's managed policy denies, then
answers. Measured: each turn's time as the notebook's page sees it (execute request to idle over
the kernel's websocket), with every user's turns running together, against the same turns of one
user alone on the same hub in the same run. The suite (tests/hub/test_hub.py) checks what must
hold: no audit line lost, no turn stuck, each user's policy and audit their own. The figures here
are never asserted. Skipped where scripts/test.sh has not made the hub's venv and the proxy.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
from pathlib import Path

from common import Row

from tests.hub.hub_harness import hub_missing
from tests.hub.test_hub import run_users


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def measure(quick: bool) -> list[Row]:
    missing = hub_missing()
    if missing is not None:
        return [Row("JupyterHub soak", "skipped", "", "", "", None, missing)]
    users, turns = (3, 3) if quick else (10, 20)
    with tempfile.TemporaryDirectory() as alone_dir, tempfile.TemporaryDirectory() as many_dir:
        alone = asyncio.run(run_users(Path(alone_dir), ["solo"], turns, turn_timeout=300))
        many = asyncio.run(run_users(Path(many_dir), [f"user{i:02d}" for i in range(users)], turns, turn_timeout=600))
    solo = alone["outputs"]["solo"]["seconds"]
    loaded = [second for result in many["outputs"].values() for second in result["seconds"]]
    ratio = statistics.median(loaded) / statistics.median(solo)
    return [Row(
        f"JupyterHub: {users} kernels x {turns} turns at once",
        f"median {statistics.median(loaded) * 1000:.0f} ms, p95 {_p95(loaded) * 1000:.0f} ms, "
        f"{len(loaded)} turns, {many['requests']} API requests",
        f"one kernel alone: median {statistics.median(solo) * 1000:.0f} ms",
        f"{ratio:.1f}x",
        f"<= {users}x (the turns share {os.cpu_count()} cores)",
        ratio <= users,
        "each turn timed from the execute request to idle over the kernel's websocket through the proxy; "
        "every user's turns together against one user's alone, same hub build, same run",
    )]
