"""A malicious repository against the trust boundary: each attack of tests/data/trust_attacks gains nothing
before the person trusts the project, and what it asks for does take effect once trusted (so each check
can fail). The format of the data is described at the top of attacks.yaml.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import yaml

from codingcode_jupyter.engine.agents.profiles import load_profiles
from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
from codingcode_jupyter.engine.claude.files import claude_dir
from codingcode_jupyter.engine.mcp.config import McpConfigError, read_mcp_config
from codingcode_jupyter.engine.project_settings import ProjectSettings
from codingcode_jupyter.engine.prompts import build_system_prompt
from codingcode_jupyter.engine.settings import SettingsError
from codingcode_jupyter.engine.tools.base import ToolCall
from codingcode_jupyter.engine.tools.builtin import builtin_tools
from codingcode_jupyter.engine.tools.shell import execute_command_tool
from codingcode_jupyter.engine.user_dir import user_dir
from tests.engine.approval_helpers import context
from tests.engine.helpers import tool_context

DATA = Path(__file__).resolve().parents[1] / "data" / "trust_attacks" / "attacks.yaml"
ATTACKS: list[dict[str, Any]] = yaml.safe_load(DATA.read_text(encoding="utf-8"))
TOOLS = {tool.name: tool for tool in builtin_tools()}
# /dev/zero and /proc/self/environ are what some attacks aim at.
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux only")


@pytest.fixture(autouse=True)
def untrusted(monkeypatch, tmp_path):
    monkeypatch.delenv("CODINGCODE_TRUST", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))


class Place:
    """Where an attack's files go: the project, a directory beside it, the person's home and own directory."""

    def __init__(self, root: Path) -> None:
        self.project = (root / "proj").resolve()
        self.outside = (root / "outside").resolve()
        self.home = Path(os.environ["HOME"]).resolve()
        for directory in (self.project, self.outside):
            directory.mkdir(parents=True, exist_ok=True)
        # One live view, as a session keeps: what it caches must follow every change.
        self.settings = ProjectSettings(self.project)

    def fill(self, text: str) -> str:
        for name, value in (("{project}", self.project), ("{outside}", self.outside), ("{user}", user_dir()),
                            ("{claude}", claude_dir())):
            text = text.replace(name, str(value))
        return text

    def path(self, name: str, base: Path | None = None) -> Path:
        name = self.fill(name)
        if name.startswith("@outside/"):
            return self.outside / name[len("@outside/"):]
        if name.startswith("~/"):
            return self.home / name[2:]
        return (base or self.project) / name

    def write(self, files: dict[str, Any] | None, base: Path | None = None) -> None:
        for name, content in (files or {}).items():
            path = self.path(name, base)
            path.parent.mkdir(parents=True, exist_ok=True)
            text = content if isinstance(content, str) else json.dumps(content)
            if path.is_symlink():
                path.unlink()
            path.write_text(self.fill(text), encoding="utf-8")
            if path.suffix == ".sh":
                path.chmod(0o755)

    def link(self, links: dict[str, str] | None) -> None:
        for name, target in (links or {}).items():
            path = self.path(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            resolved = target if target.startswith("/") or not target.startswith(("@", "~")) else str(self.path(target))
            os.symlink(resolved, path)


def lay_out(place: Place, attack: dict[str, Any]) -> None:
    place.write(attack.get("home"), place.home)
    place.write(attack.get("user"), user_dir())
    place.write(_filled(place, attack.get("files")))
    place.link(attack.get("links"))
    forged = [name for name in attack.get("files") or {} if name.endswith("trusted.json")]
    if forged:
        # A forgery at its best: the fingerprints of exactly what the project asks for.
        real = [item.fingerprint for item in ProjectSettings(place.project).current().items]
        for name in forged:
            path = place.path(name)
            path.write_text(path.read_text().replace('"{all}"', ", ".join(json.dumps(f) for f in real)))


def _hides(summaries: list[str], what: str) -> bool:
    if what == "control":
        return any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") or (unicodedata.category(c) == "Zs" and c != " ")
                   for text in summaries for c in text)
    if what == "lookalike":
        return any(ord(c) > 127 for text in summaries for c in text)
    return not any(what in text for text in summaries)  # a variable the item would send, not named on the card


async def _decision(place: Place, spec: dict[str, Any]) -> str:
    project = place.project
    pipeline = ApprovalPipeline(project, settings=place.settings, python_hooks=[], audit=False)
    call = ToolCall(tool_use_id="t", tool=TOOLS[spec["tool"]], input=spec["input"])
    return (await pipeline.evaluate(call, context(project, mode=spec.get("mode", "default")))).kind


async def _command_env(project: Path, name: str) -> bool:
    ctx = tool_context(project)
    result = await execute_command_tool().run({"command": f"echo \"[${name}]\""}, ctx)
    return "[set-by-the-project]" in result.text_content


def _loads_slowly(project: Path, seconds: float) -> bool:
    # The clock (an alarm that kills the process) starts after the imports: on a loaded machine
    # starting Python and importing the package alone can take longer than ``seconds``.
    code = ("import resource, signal, sys; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
            "from codingcode_jupyter.engine.project_settings import ProjectSettings\n"
            "from codingcode_jupyter.engine.settings import SettingsError\n"
            f"signal.alarm({max(1, round(seconds))})\n"
            "try:\n    ProjectSettings(sys.argv[1]).current()\nexcept SettingsError as e:\n    print(e)\n")
    try:
        run = subprocess.run([sys.executable, "-c", code, str(project)], capture_output=True, text=True, timeout=300,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    except subprocess.TimeoutExpired:
        return True
    return run.returncode != 0  # killed by the alarm, or a MemoryError: not a settings error the person is shown


async def _runs_at_start(place: Place) -> bool:
    from codingcode_jupyter.engine.runtime import open_session

    before = set(place.outside.iterdir())
    session = open_session(place.project, model="demo")
    try:
        await session.start()
        await session.deps.hooks.session_start(session_id=session.id, source="startup")
    finally:
        await session.aclose()
    return set(place.outside.iterdir()) != before


async def gained(place: Place, check: dict[str, Any]) -> bool:
    """Whether the attack got what ``check`` names."""
    ((kind, arg),) = check.items()
    project = place.project
    if kind == "loads_slowly":
        return _loads_slowly(project, arg)
    if kind == "prompt_contains":
        return arg in build_system_prompt(project)
    if kind == "runs_at_start":
        return await _runs_at_start(place)
    effective = place.settings.current()
    merged = effective.merged
    if kind == "mode":
        return effective.default_mode == arg
    if kind in ("allows", "asks"):
        return await _decision(place, arg) == kind[:-1]
    if kind == "hook":
        return bool(effective.hooks_for(arg))
    if kind == "env":
        return arg in merged.env
    if kind == "command_env":
        return await _command_env(project, arg)
    if kind == "domain":
        return arg in effective.allowed_domains
    if kind == "write":
        return arg in merged.sandbox.filesystem.allowWrite
    if kind == "sandbox_env":
        return arg in merged.sandbox.env
    if kind == "sandbox_off":
        return not merged.sandbox.enabled
    if kind == "sandbox_auto_allow":
        return merged.sandbox.autoAllow
    if kind == "web_search":
        return merged.webSearch.backend == arg
    if kind == "server":
        try:
            servers = read_mcp_config(project).servers
        except McpConfigError:
            return False
        return arg in servers and arg not in effective.untrusted_servers
    if kind == "profile_mode":
        catalog = load_profiles(project, untrusted_modes=effective.untrusted_profile_modes)
        return arg in catalog.profiles and catalog.profiles[arg].mode_trusted
    if kind == "card_hides":
        return _hides([item.summary for item in effective.items], place.fill(arg))
    raise AssertionError(f"unknown check {kind}")


async def gains(place: Place, checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [check for check in checks if await gained(place, check)]


def _filled(place: Place, value: Any) -> Any:
    if isinstance(value, str):
        return place.fill(value)
    if isinstance(value, list):
        return [_filled(place, item) for item in value]
    if isinstance(value, dict):
        return {key: _filled(place, item) for key, item in value.items()}
    return value


def trust(place: Place) -> None:
    try:
        place.settings.trust()
    except SettingsError:
        pass  # a file that cannot be read is reported, and trusts nothing


def _case(attack: dict[str, Any]) -> Any:
    # A hole knowingly left open still runs: strict, so the day it closes the test says so (XPASS
    # fails the run) and the `open:` note comes out of the corpus. AssertionError only: an attack
    # that breaks the harness is not "expected".
    if attack.get("open"):
        mark = pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"left open: {attack['open']}")
        return pytest.param(attack, id=attack["id"], marks=mark)
    return pytest.param(attack, id=attack["id"])


@pytest.mark.slow
@pytest.mark.parametrize("attack", [_case(attack) for attack in ATTACKS])
async def test_an_attack_gains_nothing_before_trust(attack, tmp_path):
    place = Place(tmp_path / "a")
    lay_out(place, attack)
    checks = [_filled(place, check) for check in attack["gains"]]
    assert await gains(place, checks) == [], "gained before the person trusted it"
    if "change" in attack:
        trust(place)
        assert await gains(place, checks) == checks, "the positive control: trusted, the attack's config applies"
        place.write(attack["change"])
        assert await gains(place, checks) == [], "a change after trust took effect without being asked"
        trust(place)
        assert await gains(place, checks) == checks, "the change, once trusted, applies"
    elif attack.get("never"):
        trust(place)
        assert await gains(place, checks) == [], "no trust may give this"
        control = attack["control"]
        benign = Place(tmp_path / "control")
        lay_out(benign, control)
        trust(benign)
        wanted = [_filled(benign, check) for check in control["gains"]]
        assert await gains(benign, wanted) == wanted, "the positive control: the benign variant works"
    else:
        trust(place)
        assert await gains(place, checks) == checks, "the positive control: trusted, the attack's config applies"


def test_every_attack_is_well_formed():
    ids = [a["id"] for a in ATTACKS]
    assert len(ids) == len(set(ids))
    for attack in ATTACKS:
        assert attack["gains"] and ("control" in attack) == bool(attack.get("never")), attack["id"]
        assert not ("change" in attack and attack.get("never")), attack["id"]
