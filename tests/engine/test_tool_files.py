"""read_file / write_file / edit_file contracts, run through ToolDefinition.run on a tmp project."""

from __future__ import annotations

import base64
import os
import stat

import pytest

from codingcode_jupyter.engine.tools.base import ToolContext
from codingcode_jupyter.engine.tools.files import edit_file_tool, read_file_tool, write_file_tool

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


read_file, write_file, edit_file = read_file_tool(), write_file_tool(), edit_file_tool()


# ---------------------------------------------------------------- read_file


async def test_read_numbers_lines_reports_total_and_next_offset(project, ctx):
    (project / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await read_file.run({"path": "a.txt", "offset": 3, "limit": 4}, ctx)
    text = result.text_content
    assert not result.is_error
    assert "   3| line 3" in text and "   6| line 6" in text
    assert "line 2" not in text and "line 7" not in text
    assert "of 10" in text
    assert "offset=7" in text
    assert str(project / "a.txt") in text


async def test_read_last_page_has_no_next_offset_and_counts_unterminated_line(project, ctx):
    (project / "a.txt").write_text("one\ntwo\nthree")
    result = await read_file.run({"path": "a.txt", "offset": 2}, ctx)
    assert "   2| two" in result.text_content and "   3| three" in result.text_content
    assert "of 3" in result.text_content
    assert "offset=" not in result.text_content


async def test_read_offset_past_end_is_clear_error(project, ctx):
    (project / "a.txt").write_text("one\ntwo\n")
    result = await read_file.run({"path": "a.txt", "offset": 3}, ctx)
    assert result.is_error and "past the end" in result.text_content and "2 lines" in result.text_content


async def test_read_limit_is_clamped_with_note_and_bad_values_rejected(project, ctx):
    (project / "a.txt").write_text("x\n" * 1000)
    result = await read_file.run({"path": "a.txt", "limit": 9999}, ctx)
    assert not result.is_error
    assert " 500| x" in result.text_content and " 501| x" not in result.text_content
    assert "clamped to 500" in result.text_content
    bad = await read_file.run({"path": "a.txt", "offset": 0}, ctx)
    assert bad.is_error and "offset" in bad.text_content
    bad = await read_file.run({"path": "a.txt", "limit": "lots"}, ctx)
    assert bad.is_error and "limit" in bad.text_content


async def test_read_long_line_is_cut_with_marker(project, ctx):
    (project / "min.js").write_text("a" * 50_000 + "\nnext\n")
    result = await read_file.run({"path": "min.js"}, ctx)
    text = result.text_content
    assert "line cut" in text
    assert "a" * 2001 not in text
    assert "   2| next" in text and "of 2" in text


async def test_read_missing_file_names_close_matches(project, ctx):
    (project / "src").mkdir()
    (project / "src" / "config.py").write_text("x")
    result = await read_file.run({"path": "src/confg.py"}, ctx)
    assert result.is_error
    assert "not found" in result.text_content.lower()
    assert "src/config.py" in result.text_content


async def test_read_binary_refused_with_type_and_image_returned(project, ctx):
    (project / "blob.zip").write_bytes(b"PK\x03\x04\x00\x00" + bytes(range(256)))
    result = await read_file.run({"path": "blob.zip"}, ctx)
    assert result.is_error and "binary" in result.text_content and "application/zip" in result.text_content
    (project / "dot.png").write_bytes(PNG)
    image = await read_file.run({"path": "dot.png"}, ctx)
    assert not image.is_error
    blocks = [b for b in image.content if b["type"] == "image"]
    assert blocks and blocks[0]["source"]["media_type"] == "image/png"
    assert base64.b64decode(blocks[0]["source"]["data"]) == PNG


async def test_read_resolves_symlinks_and_dotdot_and_reports_real_path(project, ctx, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (project / "link.txt").symlink_to(outside)
    result = await read_file.run({"path": "sub/../link.txt"}, ctx)
    assert not result.is_error
    assert str(outside) in result.text_content
    absolute = await read_file.run({"path": str(outside)}, ctx)
    assert "secret" in absolute.text_content


async def test_read_directory_is_clear_error(project, ctx):
    (project / "d").mkdir()
    result = await read_file.run({"path": "d"}, ctx)
    assert result.is_error and "directory" in result.text_content


async def test_read_huge_file_last_page_streams(project, ctx):
    # 200k lines, ~3.4 MB: the window comes from the end without any line list of the whole file.
    path = project / "big.log"
    with open(path, "w") as fh:
        for i in range(1, 200_001):
            fh.write(f"row {i:07d}\n")
    result = await read_file.run({"path": "big.log", "offset": 199_999}, ctx)
    text = result.text_content
    assert "199999| row 0199999" in text and "200000| row 0200000" in text
    assert "of 200000" in text


# ---------------------------------------------------------------- write_file


async def test_write_creates_new_file_and_parents_without_prior_read(project, ctx):
    result = await write_file.run({"path": "deep/er/new.py", "content": "print(1)\n"}, ctx)
    assert not result.is_error, result.text_content
    assert (project / "deep/er/new.py").read_text() == "print(1)\n"
    assert "+print(1)" in result.text_content


async def test_write_refuses_unread_existing_file(project, ctx):
    (project / "a.txt").write_text("old\n")
    result = await write_file.run({"path": "a.txt", "content": "new\n"}, ctx)
    assert result.is_error and "read_file" in result.text_content
    assert (project / "a.txt").read_text() == "old\n"


async def test_write_refuses_stale_file_then_works_after_reread(project, ctx):
    path = project / "a.txt"
    path.write_text("old\n")
    await read_file.run({"path": "a.txt"}, ctx)
    path.write_text("changed by someone else\n")
    os.utime(path, ns=(1, 1))  # make sure the stamp differs even on coarse clocks
    stale = await write_file.run({"path": "a.txt", "content": "mine\n"}, ctx)
    assert stale.is_error and "changed on disk" in stale.text_content and "read" in stale.text_content
    assert path.read_text() == "changed by someone else\n"
    await read_file.run({"path": "a.txt"}, ctx)
    ok = await write_file.run({"path": "a.txt", "content": "mine\n"}, ctx)
    assert not ok.is_error
    assert "-changed by someone else" in ok.text_content and "+mine" in ok.text_content
    # The write refreshed the stamp: a second write in a row needs no re-read.
    again = await write_file.run({"path": "a.txt", "content": "mine 2\n"}, ctx)
    assert not again.is_error


async def test_write_keeps_mode_and_leaves_no_temp_files(project, ctx):
    path = project / "run.sh"
    path.write_text("echo hi\n")
    path.chmod(0o755)
    await read_file.run({"path": "run.sh"}, ctx)
    await write_file.run({"path": "run.sh", "content": "echo bye\n"}, ctx)
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert sorted(p.name for p in project.iterdir()) == ["run.sh"]


async def test_write_through_symlink_changes_target_and_keeps_link(project, ctx):
    real = project / "real.txt"
    real.write_text("a\n")
    (project / "alias.txt").symlink_to(real)
    await read_file.run({"path": "alias.txt"}, ctx)
    result = await write_file.run({"path": "alias.txt", "content": "b\n"}, ctx)
    assert not result.is_error
    assert (project / "alias.txt").is_symlink() and real.read_text() == "b\n"


async def test_write_without_state_skips_read_check(project):
    bare = ToolContext.standalone(project, session_id="s", turn_id=1)
    (project / "a.txt").write_text("old\n")
    result = await write_file.run({"path": "a.txt", "content": "new\n"}, bare)
    assert not result.is_error and (project / "a.txt").read_text() == "new\n"


async def test_write_preview_is_diff_and_writes_nothing(project, ctx):
    (project / "a.txt").write_text("old\n")
    preview = await write_file.preview(write_file.validate({"path": "a.txt", "content": "new\n"}), ctx)
    assert "-old" in preview and "+new" in preview
    assert (project / "a.txt").read_text() == "old\n"


# ---------------------------------------------------------------- edit_file


async def test_edit_replaces_unique_string_and_returns_diff(project, ctx):
    (project / "m.py").write_text("def f():\n    return 1\n")
    await read_file.run({"path": "m.py"}, ctx)
    result = await edit_file.run({"path": "m.py", "old_string": "return 1", "new_string": "return 2"}, ctx)
    assert not result.is_error, result.text_content
    assert (project / "m.py").read_text() == "def f():\n    return 2\n"
    assert "-    return 1" in result.text_content and "+    return 2" in result.text_content
    assert "@@" in result.text_content


async def test_edit_absent_old_string_is_error(project, ctx):
    (project / "m.py").write_text("x = 1\n")
    await read_file.run({"path": "m.py"}, ctx)
    result = await edit_file.run({"path": "m.py", "old_string": "y = 1", "new_string": "y = 2"}, ctx)
    assert result.is_error and "not found" in result.text_content
    assert (project / "m.py").read_text() == "x = 1\n"


async def test_edit_ambiguous_names_count_and_lines_then_replace_all(project, ctx):
    (project / "m.py").write_text("a = 1\nb = 2\na = 1\nc = 3\na = 1\n")
    await read_file.run({"path": "m.py"}, ctx)
    result = await edit_file.run({"path": "m.py", "old_string": "a = 1", "new_string": "a = 9"}, ctx)
    assert result.is_error
    assert "3 times" in result.text_content and "1, 3, 5" in result.text_content
    ok = await edit_file.run({"path": "m.py", "old_string": "a = 1", "new_string": "a = 9", "replace_all": True}, ctx)
    assert not ok.is_error and "3 replacements" in ok.text_content
    assert (project / "m.py").read_text() == "a = 9\nb = 2\na = 9\nc = 3\na = 9\n"


async def test_edit_requires_read_and_rejects_empty_old_string(project, ctx):
    (project / "m.py").write_text("x = 1\n")
    unread = await edit_file.run({"path": "m.py", "old_string": "x", "new_string": "y"}, ctx)
    assert unread.is_error and "read_file" in unread.text_content
    empty = await edit_file.run({"path": "m.py", "old_string": "", "new_string": "y"}, ctx)
    assert empty.is_error and "old_string" in empty.text_content


async def test_edit_missing_file_is_clear_error(project, ctx):
    result = await edit_file.run({"path": "nope.py", "old_string": "x", "new_string": "y"}, ctx)
    assert result.is_error and "not found" in result.text_content.lower()


async def test_edit_crlf_file_keeps_line_endings(project, ctx):
    (project / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await read_file.run({"path": "w.txt"}, ctx)
    result = await edit_file.run({"path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2"}, ctx)
    assert not result.is_error, result.text_content
    assert (project / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_edit_preview_shows_diff_or_failure_without_writing(project, ctx):
    (project / "m.py").write_text("x = 1\n")
    args = edit_file.validate({"path": "m.py", "old_string": "x = 1", "new_string": "x = 2"})
    preview = await edit_file.preview(args, ctx)
    assert "-x = 1" in preview and "+x = 2" in preview
    assert (project / "m.py").read_text() == "x = 1\n"
    failing = await edit_file.preview(edit_file.validate({"path": "m.py", "old_string": "zz", "new_string": "q"}), ctx)
    assert "would fail" in failing


async def test_write_under_a_file_parent_is_clear_error(project, ctx):
    (project / "plain").write_text("x")
    result = await write_file.run({"path": "plain/child.txt", "content": "y"}, ctx)
    assert result.is_error and "Could not write" in result.text_content


@pytest.mark.parametrize("tool,extra", [(read_file, {}), (write_file, {"content": "x"}),
                                        (edit_file, {"old_string": "a", "new_string": "b"})])
async def test_nul_byte_path_is_clear_error(ctx, tool, extra):
    result = await tool.run({"path": "a\x00b", **extra}, ctx)
    assert result.is_error and "Invalid path" in result.text_content
