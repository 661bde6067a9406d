"""The session's sandbox honours the person's settings: allowed .env files stay visible."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from codingcode_jupyter.engine.runtime import open_session

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


async def _run(sandbox, command: str, cwd) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *sandbox.argv_for(command, cwd), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    out, _ = await process.communicate()
    return process.returncode, out.decode()


async def test_an_allowed_env_file_is_visible_and_the_others_are_not(tmp_path):
    (tmp_path / ".env").write_text("SECRET=1\n")
    (tmp_path / ".env.example").write_text("SECRET=changeme\n")
    (tmp_path / ".codingcode").mkdir()
    (tmp_path / ".codingcode" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["read_file(.env.example)"]}})
    )
    session, parts = open_session(tmp_path)
    try:
        assert parts.sandbox.active, parts.sandbox.unavailable_reason
        code, out = await _run(parts.sandbox, "cat .env.example", tmp_path)
        assert code == 0 and "changeme" in out
        code, out = await _run(parts.sandbox, "cat .env", tmp_path)
        assert "SECRET=1" not in out
    finally:
        await parts.aclose()
