"""search_code / search_files contracts, with ripgrep and with the pure-Python fallback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codingcode_jupyter.engine.tools import search
from codingcode_jupyter.engine.tools.search import find_rg, search_code_tool, search_files_tool

search_code, search_files = search_code_tool(), search_files_tool()


@pytest.fixture(params=["rg", "python"])
def engine(request, monkeypatch):
    if request.param == "rg":
        assert find_rg() is not None, "the ripgrep wheel's binary should be installed"
    else:
        monkeypatch.setattr(search, "find_rg", lambda: None)
    return request.param


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "a.py").write_text("import os\nTOKEN = 1\nTOKEN = 2\nTOKEN = 3\nprint(TOKEN)\n")
    (root / "src" / "b.js").write_text("const TOKEN = 'js';\n")
    (root / "README.md").write_text("no match here\n")
    (root / "build").mkdir()
    (root / "build" / "gen.py").write_text("TOKEN = 'generated'\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "debug.log").write_text("TOKEN in a log\n")
    (root / "blob.bin").write_bytes(b"TOKEN\x00\x01\x02binary")
    return root


async def test_search_code_finds_all_consecutive_matches(engine, project, ctx):
    result = await search_code.run({"pattern": r"TOKEN = \d"}, ctx)
    text = result.text_content
    assert not result.is_error, text
    for n in (2, 3, 4):
        assert f"src/pkg/a.py:{n}: TOKEN = {n - 1}" in text
    assert text.startswith("3 matching lines in 1 file")


async def test_search_code_respects_gitignore_and_skips_binaries(engine, project, ctx):
    text = (await search_code.run({"pattern": "TOKEN"}, ctx)).text_content
    assert "src/b.js:1:" in text and "src/pkg/a.py:5:" in text
    assert "build/gen.py" not in text and "debug.log" not in text and "blob.bin" not in text


async def test_search_code_glob_filters(engine, project, ctx):
    text = (await search_code.run({"pattern": "TOKEN", "glob": "*.js"}, ctx)).text_content
    assert "src/b.js:1:" in text and "a.py" not in text
    text = (await search_code.run({"pattern": "TOKEN", "glob": "src/pkg/*.py"}, ctx)).text_content
    assert "src/pkg/a.py" in text and "b.js" not in text


async def test_search_code_truncation_states_total_and_more(engine, project, ctx):
    (project / "many.txt").write_text("hit\n" * 250)
    result = await search_code.run({"pattern": "^hit$", "max_results": 10}, ctx)
    text = result.text_content
    assert text.startswith("250 matching lines in 1 file")
    assert text.count("many.txt:") == 10
    assert "240 more not shown" in text


async def test_search_code_max_results_clamped_with_note(engine, project, ctx):
    (project / "many.txt").write_text("hit\n" * 150)
    text = (await search_code.run({"pattern": "^hit$", "max_results": 1000}, ctx)).text_content
    assert "clamped to 100" in text
    assert text.count("many.txt:") == 100 and "50 more not shown" in text


async def test_search_code_invalid_regex_is_clear_error(engine, project, ctx):
    result = await search_code.run({"pattern": "foo(["}, ctx)
    assert result.is_error
    assert "search_code failed" in result.text_content and "regex" in result.text_content.lower()


async def test_search_code_no_match_and_bad_args(engine, project, ctx):
    none = await search_code.run({"pattern": "zzz_nothing_zzz"}, ctx)
    assert not none.is_error and "No matches" in none.text_content
    bad = await search_code.run({"pattern": ""}, ctx)
    assert bad.is_error and "pattern" in bad.text_content
    bad = await search_code.run({"pattern": "x", "max_results": 0}, ctx)
    assert bad.is_error and "max_results" in bad.text_content


async def test_search_code_pattern_starting_with_dash(engine, project, ctx):
    (project / "flags.txt").write_text("use --verbose here\n")
    text = (await search_code.run({"pattern": "--verbose"}, ctx)).text_content
    assert "flags.txt:1: use --verbose here" in text


async def test_search_files_newest_first_and_gitignore(engine, project, ctx):
    for i, name in enumerate(["old.py", "mid.py", "new.py"]):
        path = project / name
        path.write_text("x")
        os.utime(path, (1_000_000 + i * 1000, 1_000_000 + i * 1000))
    os.utime(project / "src" / "pkg" / "a.py", (2_000_000, 2_000_000))
    text = (await search_files.run({"pattern": "*.py"}, ctx)).text_content
    lines = text.splitlines()
    assert lines[0].startswith("4 files match")
    assert lines[1:] == ["src/pkg/a.py", "new.py", "mid.py", "old.py"]
    assert "build/gen.py" not in text


async def test_search_files_truncation_stated_and_path_param(engine, project, ctx):
    for i in range(12):
        (project / "src" / f"m{i}.ts").write_text("x")
    text = (await search_files.run({"pattern": "*.ts", "path": "src", "max_results": 5}, ctx)).text_content
    assert text.startswith("12 files match")
    assert sum(1 for line in text.splitlines() if line.endswith(".ts")) == 5
    assert "7 more not shown" in text
    assert all(line.startswith("src/") for line in text.splitlines()[1:6])


async def test_search_files_shows_the_newest_when_it_cuts_and_orders_ties_by_name(engine, project, ctx):
    for i in range(12):
        path = project / "src" / f"m{i:02d}.ts"
        path.write_text("x")
        # Files share their time in pairs: a pair is listed by name.
        stamp = 1_000_000 + (i // 2) * 1000
        os.utime(path, (stamp, stamp))
    text = (await search_files.run({"pattern": "*.ts", "path": "src", "max_results": 5}, ctx)).text_content
    assert text.splitlines()[1:6] == ["src/m10.ts", "src/m11.ts", "src/m08.ts", "src/m09.ts", "src/m06.ts"]


async def test_search_files_bad_directory_is_clear_error(engine, project, ctx):
    missing = await search_files.run({"pattern": "*", "path": "nope"}, ctx)
    assert missing.is_error and "not found" in missing.text_content
    file = await search_files.run({"pattern": "*", "path": "README.md"}, ctx)
    assert file.is_error and "not a directory" in file.text_content
