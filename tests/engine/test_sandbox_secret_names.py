"""A hidden secret stays hidden under another name: a hard link, a rename, a copy a later command
makes of either, /proc/self/fd, a directory renamed. Landlock grants by hierarchy and path, so a
name made for a secret in the same directory would be granted to the next command; the plan hides
every name of a known secret's inode (sandbox/project_scan.py). bubblewrap refuses the link or the
rename of its masks outright. Each attack is followed by its control: the same steps on an ordinary
file show its content, so a sandbox that shows nothing at all fails too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import landlock
from tests.engine.sandbox_helpers import BWRAP_PROBLEM, SECRET, make_sandbox, run

VISIBLE = "VISIBLE-NAMES-CONTROL-91e2"
BACKENDS = [
    pytest.param("landlock", marks=pytest.mark.skipif(landlock.landlock_abi() < 1, reason="no Landlock here")),
    pytest.param("bwrap", marks=pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bubblewrap: {BWRAP_PROBLEM}")),
]


@pytest.fixture(params=BACKENDS)
async def box(request, project: Path, home: Path):
    (project / "config").mkdir()
    (project / "config" / ".env").write_text(f"KEY={SECRET}\n")
    (project / "config" / "plain.txt").write_text(VISIBLE)
    (project / "src").mkdir()
    sandbox = make_sandbox(project, home, backend=request.param)
    assert sandbox.active, sandbox.unavailable_reason
    yield sandbox
    await sandbox.aclose()


async def _both(sandbox, steps: list[str]) -> tuple[str, str]:
    """Run ``steps`` (one command each) on the secret, then on the ordinary file: the last outputs."""
    outs = []
    for source, tag in (("config/.env", "s"), ("config/plain.txt", "c")):
        result = None
        for step in steps:
            result = await run(sandbox, step.format(src=source, tag=tag))
        assert result is not None
        outs.append(result.out + result.err)
    return outs[0], outs[1]


async def test_a_hard_link_made_by_one_command_is_hidden_from_the_next(box) -> None:
    secret, control = await _both(box, ["ln {src} config/link-{tag}", "cat config/link-{tag}"])
    assert SECRET not in secret
    assert VISIBLE in control


async def test_a_rename_made_by_one_command_is_hidden_from_the_next(box) -> None:
    secret, control = await _both(box, ["mv {src} config/notes-{tag}", "cat config/notes-{tag}"])
    assert SECRET not in secret
    assert VISIBLE in control


async def test_a_copy_a_later_command_makes_is_hidden_too(box) -> None:
    secret, control = await _both(box, ["ln {src} config/link-{tag}", "cp config/link-{tag} src/copy-{tag}",
                                        "cat src/copy-{tag}"])
    assert SECRET not in secret
    assert VISIBLE in control


async def test_a_link_elsewhere_in_the_same_command_is_refused(box) -> None:
    secret, control = await _both(box, ['ln {src} "$TMPDIR/x-{tag}" 2>&1; ln {src} src/y-{tag} 2>&1; '
                                        'cat "$TMPDIR/x-{tag}" src/y-{tag}'])
    assert SECRET not in secret
    assert VISIBLE in control


_FD_READ = ("import os, sys\nfd = os.open(sys.argv[1], os.O_PATH)\n"
            "try:\n    print(open('/proc/self/fd/%d' % fd).read())\nexcept OSError as e:\n    print('refused', e.errno)")


async def test_a_path_descriptor_reopened_through_proc_is_refused(box) -> None:
    code = _FD_READ.replace("'", "'\\''")
    secret, control = await _both(box, [f"{sys.executable} -I -S -c '{code}' {{src}}"])
    assert SECRET not in secret, secret
    if box.backend == "landlock":
        assert "refused 13" in secret, secret  # Landlock checks the reopened file itself (bubblewrap: an empty mask)
    assert VISIBLE in control


async def test_a_link_made_before_the_session_is_hidden_from_the_first_command(project: Path, home: Path) -> None:
    (project / "config").mkdir()
    (project / "config" / ".env").write_text(f"KEY={SECRET}\n")
    (project / "config" / "plain.txt").write_text(VISIBLE)
    (project / "backup").mkdir()
    os.link(project / "config" / ".env", project / "backup" / "settings.txt")
    os.link(project / "config" / "plain.txt", project / "backup" / "plain-copy.txt")  # the control
    for backend in ("landlock", "bwrap"):
        sandbox = make_sandbox(project, home, backend=backend)
        if not sandbox.active:
            continue
        try:
            result = await run(sandbox, "cat backup/settings.txt; cat backup/plain-copy.txt")
        finally:
            await sandbox.aclose()
        assert SECRET not in result.out, backend
        assert VISIBLE in result.out, backend


async def test_a_renamed_secret_directory_stays_hidden(project: Path, home: Path) -> None:
    (project / "deploy.env").mkdir()
    (project / "deploy.env" / "key").write_text(SECRET)
    (project / "public").mkdir()
    (project / "public" / "key").write_text(VISIBLE)
    sandbox = make_sandbox(project, home, backend="landlock" if landlock.landlock_abi() >= 1 else "auto")
    try:
        await run(sandbox, "mv deploy.env deploy; mv public public2")
        result = await run(sandbox, "cat deploy/key public2/key")
    finally:
        await sandbox.aclose()
    assert SECRET not in result.out
    assert VISIBLE in result.out
