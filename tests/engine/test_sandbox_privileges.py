"""The privilege rules hold by construction inside the sandbox, whatever the command line says.

No setuid effect (no_new_privs, nosuid mounts) and no setuid bit made, no capabilities, no
shutdown, and `rm -rf /` or `rm -rf ~` change nothing outside the project. These run the
real commands inside the real sandbox; the destructive ones first check, inside, that they
are confined, and stop if not.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import CommandSandbox
from tests.engine.sandbox_helpers import BWRAP, needs_bwrap, run

pytestmark = needs_bwrap

IS_ROOT = os.geteuid() == 0
MARKER = "MARKER-OUTSIDE-THE-PROJECT-0d7e"


@pytest.fixture
def project(home: Path) -> Path:
    proj = home / "proj"
    proj.mkdir()
    (proj / "src").mkdir()
    (proj / "src" / "app.py").write_text("print('hi')\n")
    return proj


def _special_bits(path: Path) -> int:
    return path.stat().st_mode & (stat.S_ISUID | stat.S_ISGID)


async def test_setuid_and_setgid_bits_cannot_be_set(sb: CommandSandbox, project: Path) -> None:
    result = await run(
        sb,
        "cp /bin/true t1; cp /bin/true t2; cp /bin/true t3; cp /bin/true t4; chmod u+s t1; chmod 2755 t2; "
        "install -m 4755 /bin/true t5; "
        "python3 -c 'import os; os.chmod(\"t3\", 0o4755)'; "
        "python3 -c 'import os; os.close(os.open(\"t6\", os.O_CREAT | os.O_WRONLY, 0o6755))'; "
        "python3 -c 'import os; os.mknod(\"t7\", 0o104755)'; "
        "chmod 700 t4 && echo plain-chmod-ok",
    )
    made = [project / f"t{n}" for n in range(1, 8)]
    assert [path.name for path in made if path.exists() and _special_bits(path)] == [], result
    # Controls: an ordinary chmod inside works, and this filesystem does keep setuid bits.
    assert "plain-chmod-ok" in result.out and stat.S_IMODE((project / "t4").stat().st_mode) == 0o700
    os.chmod(project / "t4", 0o4755)
    assert _special_bits(project / "t4")


@pytest.mark.skipif(not IS_ROOT, reason="making a setuid binary owned by another user needs root")
async def test_setuid_binary_runs_as_the_caller(sb: CommandSandbox, project: Path) -> None:
    binary = project / "id-as-nobody"
    shutil.copy("/usr/bin/id", binary)
    os.chown(binary, 65534, 65534)
    os.chmod(binary, 0o4755)
    outside = subprocess.run([str(binary), "-u"], capture_output=True, text=True)
    if outside.stdout.strip() != "65534":
        pytest.skip(f"{project} is mounted nosuid on the host: the control cannot show a setuid effect")
    inside = await run(sb, "./id-as-nobody -u; sudo -n id -u; echo done")
    assert inside.out.split()[0] == str(os.getuid()), inside
    assert "65534" not in inside.out and "done" in inside.out


async def test_sudo_cannot_raise_privileges(sb: CommandSandbox) -> None:
    if shutil.which("sudo") is None:
        pytest.skip("sudo is not installed")
    result = await run(sb, "sudo -n id -u && echo ESCALATED; sudo -n true; echo rc=$?")
    assert "ESCALATED" not in result.out or result.out.split()[0] == str(os.getuid())
    assert "rc=0" not in result.out


async def test_no_capability_left_in_any_set(sb: CommandSandbox) -> None:
    result = await run(sb, "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status")
    fields = dict(line.split(":\t") for line in result.out.splitlines())
    assert {name: value for name, value in fields.items() if name.startswith("Cap")} == {
        name: "0000000000000000" for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
    }
    assert fields["NoNewPrivs"] == "1" and fields["Seccomp"] == "2"


# reboot(2) with LINUX_REBOOT_CMD_CAD_OFF: needs CAP_SYS_BOOT like shutdown does, and inside a
# PID namespace a capable caller gets EINVAL instead of any effect, so the probe is harmless.
_REBOOT_PROBE = (
    "import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
    "print('reboot', libc.reboot(0), ctypes.get_errno())"
)


async def test_shutdown_and_reboot_fail(sb: CommandSandbox) -> None:
    result = await run(
        sb,
        f'python3 -c "{_REBOOT_PROBE}"; shutdown -h now; echo rc=$?; reboot; echo rc=$?; '
        # 'h' only prints SysRq help to the kernel log, should the write ever get through.
        "systemctl poweroff; echo rc=$?; echo h > /proc/sysrq-trigger; echo rc=$?; kill -TERM 1; echo still-here",
    )
    assert f"reboot -1 {errno.EPERM}" in result.out, result
    assert "still-here" in result.out and "rc=0" not in result.out, result


@pytest.mark.skipif(not IS_ROOT, reason="only root keeps CAP_SYS_BOOT in a bare bwrap for the control")
def test_reboot_probe_tells_a_capable_process() -> None:
    # Control for the probe above: with capabilities kept, the same call gets past the check.
    assert BWRAP is not None
    done = subprocess.run(
        [BWRAP, "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
         "python3", "-c", _REBOOT_PROBE],
        capture_output=True, text=True, timeout=20,
    )  # fmt: skip
    assert done.stdout.split() == ["reboot", "-1", str(errno.EINVAL)], done


_CONFINED_OR_STOP = (
    # Stop before deleting anything unless every sign says the command is confined.
    '[ "$(cat /proc/1/comm)" = bwrap ] || { echo UNCONFINED; exit 99; }; '
    'for probe in /etc/.codingcode-probe "$HOME/.codingcode-probe" /usr/.codingcode-probe; do '
    '  if touch "$probe" 2>/dev/null; then rm -f "$probe"; echo UNCONFINED; exit 99; fi; done; '
)


@pytest.mark.slow
async def test_rm_rf_home_and_root_change_nothing_outside_the_project(
    sb: CommandSandbox, project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / "marker.txt").write_text(MARKER)
    sibling = home.parent / "sibling"
    sibling.mkdir()
    (sibling / "marker.txt").write_text(MARKER)
    (project / ".codingcode").mkdir()
    (project / ".codingcode" / "settings.json").write_text("{}")
    (project / ".mcp.json").write_text("{}")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    monkeypatch.setenv("HOME", str(home))
    result = await run(sb, _CONFINED_OR_STOP + "rm -rf ~; rm -rf --no-preserve-root /; echo finished", timeout=300)
    assert "UNCONFINED" not in result.out and "finished" in result.out, result
    assert (home / "marker.txt").read_text() == MARKER and (sibling / "marker.txt").read_text() == MARKER
    assert (home / ".ssh" / "id_rsa").exists() and (home / ".bashrc").read_text() == "# original\n"
    assert Path("/etc/hostname").exists() or Path("/etc/os-release").exists()
    # The protected files of the project survive too; its ordinary files did not (rm really ran).
    assert (project / ".codingcode" / "settings.json").read_text() == "{}"
    # .git is writable as the project is (git commit works), but for what git runs: that stays.
    assert (project / ".mcp.json").read_text() == "{}" and (project / ".git" / "config").exists()
    assert not (project / "src").exists()
