"""A process that confines itself (the kernel's fork for run_python): the plan's project is writable,
everything else it does not grant is refused, no socket opens, and a failed step runs nothing."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import landlock
from codingcode_jupyter.engine.sandbox.seccomp import sandbox_filter
from codingcode_jupyter.engine.sandbox.self_confine import confine_current_process

pytestmark = pytest.mark.skipif(landlock.landlock_abi() < 1 or sandbox_filter("none") is None,
                                reason="this machine offers no Landlock")


def _plan(project: Path) -> landlock.Plan:
    plan = landlock.Plan()
    for path in (*landlock.SYSTEM_READ, "/etc", *landlock.python_roots()):
        plan.grant(landlock.READ, path)
    for path in landlock.DEVICES:
        plan.grant(landlock.READ_FILE | landlock.WRITE_FILE, path)
    plan.grant(landlock.READ | landlock.WRITE, project)
    return plan


def _in_child(plan: landlock.Plan | None, attempts: dict[str, object]) -> dict[str, str]:
    """Run each attempt in a fork that confines itself by ``plan`` (None: not confined)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        results = []
        try:
            if plan is not None:
                confine_current_process(plan, abi=landlock.landlock_abi(), seccomp=sandbox_filter("none") or b"")
            for name, attempt in attempts.items():
                try:
                    attempt()  # type: ignore[operator]
                    results.append(f"{name}=ok")
                except OSError as error:
                    results.append(f"{name}={type(error).__name__}")
        finally:
            os.write(write, ";".join(results).encode())
            os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 4096):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return dict(item.split("=", 1) for item in data.decode().split(";") if item)


def test_the_plan_holds_and_its_control_does_not(tmp_path: Path):
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    attempts = {
        "project": lambda: (project / "a.txt").write_text("x"),
        "outside": lambda: (outside / "b.txt").write_text("x"),
        "home": lambda: os.listdir(os.path.expanduser("~")),
        "socket": lambda: socket.socket().close(),
    }
    confined = _in_child(_plan(project), attempts)
    assert confined == {"project": "ok", "outside": "PermissionError", "home": "PermissionError",
                        "socket": "PermissionError"}, confined
    assert _in_child(None, attempts)["outside"] == "ok"  # control: unconfined, the same write succeeds
