"""An organisation deploys it: a real JupyterHub with configurable-http-proxy, users' kernels running
``%%agent`` turns against the fake Messages API at the same time, the admin's managed policy holding
for each of them, and each user's audit log their own. The soak: 10 kernels x 20 turns at once, no
audit line lost, no turn stuck (its figures: benchmarks/bench_hub_soak.py)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.hub.hub_harness import Hub, UserKernel, hub_missing

pytestmark = [pytest.mark.slow, pytest.mark.skipif(hub_missing() is not None, reason=hub_missing() or "")]

# The admin's policy: no curl, no bypass mode, whatever a user's own files say.
POLICY = {"permissions": {"deny": ["Bash(curl:*)"], "disableBypassPermissionsMode": "disable"}}
# What each user's own settings try: allow curl, bypass everything.
LOOSER = {"permissions": {"allow": ["execute_command(curl *)"], "defaultMode": "bypass"}}
COMMAND = "curl https://example.com/data.csv"


def model_answer(body: dict[str, Any]) -> Reply:
    """Stateless, so any number of kernels may share the fake: a new request runs curl; its result ends the turn."""
    content = body["messages"][-1]["content"]
    if isinstance(content, list) and any(block.get("type") == "tool_result" for block in content):
        return Reply([text("That is all.")])
    return Reply([tool_use("execute_command", {"command": COMMAND})])


def environment(fake: FakeAnthropic, managed: Path, claude_managed: Path) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
            "CODINGCODE_MANAGED_DIR": str(managed), "CODINGCODE_CLAUDE_MANAGED_DIR": str(claude_managed),
            # No background loading: ten kernels start at once on two cores.
            "CODINGCODE_PREWARM": "0"}


async def run_users(tmp_path: Path, users: list[str], turns: int, *, turn_timeout: float) -> dict[str, Any]:
    """Every user's server and kernel, ``turns`` turns each, all users at once; what came of it."""
    managed, claude_managed = tmp_path / "etc-codingcode", tmp_path / "etc-claude-code"
    managed.mkdir()
    claude_managed.mkdir()
    (managed / "managed-settings.json").write_text(json.dumps(POLICY))  # installed by the admin
    with FakeAnthropic(default=model_answer) as fake:
        hub = Hub(tmp_path / "hub", environment(fake, managed, claude_managed))
        hub.directory.mkdir()
        hub.start(users)
        kernels: list[UserKernel] = []
        try:
            await hub.wait_ready()
            for user in users:
                user_dir = hub.home(user) / ".codingcode"
                user_dir.mkdir(parents=True)
                (user_dir / "settings.json").write_text(json.dumps(LOOSER))
            await asyncio.gather(*(hub.start_server(user) for user in users))
            kernels = [UserKernel(hub, user) for user in users]
            # One kernel after another: each server picks its kernel's ports by binding and releasing them,
            # and ten servers doing so at once can hand two kernels one port ("Address already in use",
            # Jupyter's race, not ours). The turns still all run at once.
            for kernel in kernels:
                await kernel.start()
            outputs = await asyncio.gather(*(_one_user(kernel, turns, turn_timeout) for kernel in kernels))
            return {"hub": hub, "outputs": dict(zip(users, outputs)), "requests": len(fake.requests)}
        finally:
            await asyncio.gather(*(kernel.close() for kernel in kernels), return_exceptions=True)
            hub.stop()


async def _one_user(kernel: UserKernel, turns: int, turn_timeout: float) -> dict[str, Any]:
    loaded = await kernel.execute("%load_ext codingcode_jupyter\n%config CodingCode.headless_timeout = 5", 120)
    assert loaded["status"] == "ok", loaded["output"]
    outputs, seconds = [], []
    for _ in range(turns):
        started = time.perf_counter()
        reply = await kernel.execute("%%agent --mode bypass\nfetch the data", turn_timeout)
        seconds.append(time.perf_counter() - started)
        assert reply["status"] == "ok", reply["output"]
        outputs.append(reply["output"])
    status = await kernel.execute("%agent status", 60)
    return {"turns": outputs, "status": status["output"], "seconds": seconds}


def audit(home: Path) -> list[dict[str, Any]]:
    path = home / "work" / ".codingcode" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check_user(hub: Hub, user: str, result: dict[str, Any], turns: int, others: list[str]) -> set[str]:
    """The policy held for ``user`` in every turn, and their audit log has every decision, theirs only."""
    records = audit(hub.home(user))
    decisions = [r for r in records if r["event"] == "decision"]
    # Every decided call's outcome is there too: no line lost between the two.
    assert sorted(r["tool_use_id"] for r in records if r["event"] == "outcome") == sorted(
        r["tool_use_id"] for r in decisions)
    assert len(decisions) == turns, (user, len(decisions))
    assert all(r["decision"] == "deny" and r["rule"] == "Bash(curl:*)" for r in decisions), decisions[:2]
    assert all(r["mode"] != "bypass" for r in decisions)
    assert "managed settings" in result["status"] and "policy" in result["status"]
    sessions = {r["session_id"] for r in decisions}
    assert len(sessions) == 1, sessions  # one kernel, one session: no other user's lines
    for other in others:
        assert not (hub.home(other) / "work" / ".codingcode" / "sessions" / f"{next(iter(sessions))}.jsonl").exists()
    return sessions


async def test_three_users_each_under_the_policy_with_their_own_audit(tmp_path):
    users = ["ada", "grace", "linus"]
    done = await run_users(tmp_path, users, turns=3, turn_timeout=120)
    seen: set[str] = set()
    for user in users:
        sessions = check_user(done["hub"], user, done["outputs"][user], 3, [u for u in users if u != user])
        assert not sessions & seen
        seen |= sessions
    assert done["requests"] == 3 * 3 * 2  # each turn: the call, then the answer after its denial


async def test_soak_ten_kernels_twenty_turns_at_once(tmp_path):
    users = [f"user{i:02d}" for i in range(10)]
    done = await run_users(tmp_path, users, turns=20, turn_timeout=300)
    for user in users:
        check_user(done["hub"], user, done["outputs"][user], 20, [])
    assert done["requests"] == 10 * 20 * 2
