"""IPython started from the project's virtualenv runs nothing the agent planted there without a card.

A virtualenv inside the project runs, at every start of its Python, the ``.pth`` files and the
``sitecustomize.py`` of its site-packages, and IPython started from it reads
``<venv>/etc/ipython/ipython_config.py``. Here the agent plants all three through a real turn
(fake Messages API, real SDK, loop, approval pipeline, sandbox): with ``write_file`` in bypass
mode, where each write brings a card (declined), and with a sandboxed script whose command line
names none of them, which the sandbox's read-only mount of the venv refuses. Then IPython is
started from the venv, as the person would, and nothing planted runs. The control: the same
three files written on the host do run when IPython starts, so the trigger is real.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.engine.sandbox_helpers import needs_sandbox
from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.fakes.front import ScriptedFront

# Each test starts IPython from a fresh virtualenv (~10-20 s under load): in the full run only.
pytestmark = pytest.mark.slow

PY = f"python{sys.version_info.major}.{sys.version_info.minor}"
SITE = f".venv/lib/{PY}/site-packages"
PLANTS = {
    ".venv/etc/ipython/ipython_config.py": "ipython_config",
    f"{SITE}/sitecustomize.py": "sitecustomize",
    f"{SITE}/zz_planted.pth": "pth",
}


def _payload(rel: str, marker: Path, what: str) -> str:
    line = f"open({str(marker)!r}, 'a').write({what + chr(10)!r})"
    return f"import os; {line}\n" if rel.endswith(".pth") else f"{line}\n"


@pytest.fixture
def venv_project(tmp_path: Path) -> tuple[Path, Path]:
    """A project whose ``.venv`` is a real virtualenv that can start IPython (this test run's
    site-packages added through a .pth the person wrote), and the marker file outside it."""
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")], check=True)
    (project / SITE / "_person_ipython.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return project, tmp_path / "MARK"


def _start_ipython(project: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "IPYTHONDIR": str(tmp / "ipythondir")}
    env.pop("PYTHONPATH", None)
    return subprocess.run([str(project / ".venv/bin/python"), "-m", "IPython", "--no-banner", "-c", "print('IPY-UP')"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=120)


def _ran(marker: Path) -> list[str]:
    return marker.read_text().split() if marker.exists() else []


def _plant_script(project: Path, marker: Path) -> None:
    """plant.sh: writes the three plants with names built at run time (no command line names them)."""
    script = ["set -u"]
    for rel, what in PLANTS.items():
        hidden = rel.replace(".venv", "${v}")
        body = shlex.quote(_payload(rel, marker, what).rstrip())
        script.append(f'mkdir -p "$(dirname "{hidden}")"; printf "%s\\n" {body} > "{hidden}"')
    (project / "plant.sh").write_text("v=.ve; v=${v}nv\n" + "\n".join(script) + "\n")


def test_control_the_plants_run_when_written_on_the_host(venv_project, tmp_path):
    # The same script the sandboxed test runs, run here on the host: the plants land and fire.
    project, marker = venv_project
    _plant_script(project, marker)
    subprocess.run(["sh", "plant.sh"], cwd=project, check=True)
    assert all((project / rel).exists() for rel in PLANTS)
    started = _start_ipython(project, tmp_path)
    assert "IPY-UP" in started.stdout, started.stderr[-2000:]
    assert set(_ran(marker)) == set(PLANTS.values()), "each plant runs when IPython starts from the venv"


async def _turn(project: Path, front: ScriptedFront, calls: list[tuple[str, dict]], fake_api, mode: str) -> None:
    from codingcode_jupyter.engine.runtime import open_session
    from codingcode_jupyter.engine.session import TurnOptions

    for number, (tool, args) in enumerate(calls):
        fake_api.add(Reply([tool_use(tool, args, id=f"c{number}")]))
    fake_api.add(Reply([text("done")]))
    session = open_session(project, model="claude-sonnet-5")
    try:
        await session.run_turn("set up the venv", front, options=TurnOptions(mode=mode))
    finally:
        await session.aclose()


@pytest.mark.parametrize("mode", ["bypass", "acceptEdits"])
async def test_write_file_plants_are_asked_and_declined_ones_never_run(venv_project, tmp_path, fake_api, mode):
    project, marker = venv_project
    calls = [("write_file", {"path": rel, "content": _payload(rel, marker, what)}) for rel, what in PLANTS.items()]
    front = ScriptedFront(["deny"] * len(calls))
    await _turn(project, front, calls, fake_api, mode)
    assert [r.input.get("path") for r in front.asked] == list(PLANTS), "one card per planted file"
    assert all(r.forced for r in front.asked), "Always cannot be saved for a file the host runs"
    assert not any((project / rel).exists() for rel in PLANTS)
    started = _start_ipython(project, tmp_path)
    assert "IPY-UP" in started.stdout and _ran(marker) == [], started.stderr[-2000:]


@needs_sandbox
async def test_a_sandboxed_script_cannot_plant_them(venv_project, tmp_path, fake_api):
    project, marker = venv_project
    # Names built at run time: the approval layer sees only `sh plant.sh` and allows it in bypass.
    _plant_script(project, marker)
    front = ScriptedFront(["allow"] * 5)  # were a card shown, it would be accepted: only the sandbox holds
    await _turn(project, front, [("execute_command", {"command": "sh plant.sh"})], fake_api, "bypass")
    assert front.asked == [], "neither the command nor a host-files card is asked: the mount refused the writes"
    assert not any((project / rel).exists() for rel in PLANTS)
    started = _start_ipython(project, tmp_path)
    assert "IPY-UP" in started.stdout and _ran(marker) == [], started.stderr[-2000:]
