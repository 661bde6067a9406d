"""Agent profiles: parsing, precedence, and errors that name the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from codingcode_jupyter.engine.agents.profiles import (
    ProfileError,
    load_profile_file,
    load_profiles,
    stricter_mode,
)
from codingcode_jupyter.engine.prompts import agent_profiles_section


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def dirs(tmp_path):
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    return project, project / ".codingcode" / "agents", home / ".codingcode" / "agents", home


def test_builtins_are_read_only_and_listed(dirs):
    project, _, _, home = dirs
    catalog = load_profiles(project, home=home)
    names = [p.name for p in catalog.available()]
    assert names == ["explore", "plan"]
    for profile in catalog.available():
        assert profile.tools is not None and not {"write_file", "edit_file", "execute_command"} & set(profile.tools)
        assert profile.permission_mode == "plan" and not profile.allows_dispatch()
    section = agent_profiles_section(catalog.available())
    assert "dispatch_agent" in section and "- explore: " in section and "- plan: " in section


def test_full_front_matter_and_body(dirs):
    project, proj_dir, _, home = dirs
    write(proj_dir, "reviewer", """---
name: reviewer
description: Reviews a diff.
tools: read_file, search_code , mcp-git:*
mcp_servers: [git]
model: claude-haiku-4-5
max_steps: 7
permission_mode: plan
---

You review changes carefully.
""")
    profile = load_profiles(project, home=home).get("reviewer")
    assert profile.tools == ("read_file", "search_code", "mcp-git:*")
    assert profile.mcp_servers == ("git",) and profile.model == "claude-haiku-4-5"
    assert profile.max_steps == 7 and profile.permission_mode == "plan" and profile.source == "project"
    assert profile.system_prompt == "You review changes carefully."
    assert profile.path == proj_dir / "reviewer.md"


def test_name_defaults_to_file_stem_and_inherit_model(dirs):
    project, proj_dir, _, home = dirs
    write(proj_dir, "helper", "---\ndescription: Helps.\nmodel: inherit\n---\nHelp.\n")
    profile = load_profiles(project, home=home).get("helper")
    assert profile.name == "helper" and profile.model is None and profile.tools is None


def test_project_overrides_user_overrides_builtin(dirs):
    project, proj_dir, user_dir, home = dirs
    write(user_dir, "explore", "---\ndescription: user explore\n---\nUser prompt.\n")
    write(user_dir, "mine", "---\ndescription: user only\n---\nMine.\n")
    catalog = load_profiles(project, home=home)
    assert catalog.get("explore").description == "user explore" and catalog.get("explore").source == "user"
    write(proj_dir, "explore", "---\ndescription: project explore\n---\nProject prompt.\n")
    catalog = load_profiles(project, home=home)
    assert catalog.get("explore").system_prompt == "Project prompt."
    assert catalog.get("mine").source == "user"


def test_disabled_hides_a_builtin(dirs):
    project, proj_dir, _, home = dirs
    write(proj_dir, "plan", "---\ndescription: off\ndisabled: true\n---\n")
    catalog = load_profiles(project, home=home)
    assert [p.name for p in catalog.available()] == ["explore"]
    with pytest.raises(ProfileError, match="disabled"):
        catalog.get("plan")


def test_unknown_profile_lists_available(dirs):
    project, _, _, home = dirs
    with pytest.raises(ProfileError, match="No agent profile named 'nope'. Available: explore, plan"):
        load_profiles(project, home=home).get("nope")


@pytest.mark.parametrize(
    ("text", "field", "detail"),
    [
        ("---\ndescription: x\ntoolz: [read_file]\n---\nP\n", "toolz", "unknown field"),
        ("---\ndescription: x\nmax_steps: many\n---\nP\n", "max_steps", "integer"),
        ("---\ndescription: x\nmax_steps: 0\n---\nP\n", "max_steps", "greater than or equal to 1"),
        ("---\ndescription: x\npermission_mode: yolo\n---\nP\n", "permission_mode", "'plan'"),
        ("---\nname: x\n---\n\n", "description", "Field required"),
        ("---\ndescription: x\nname: ../../etc\n---\nP\n", "name", "letters, digits"),
        ("---\ndescription: x\ndisabled: maybe\n---\nP\n", "disabled", "boolean"),
        ("---\ndescription: x\ntools: [read_file, 3]\n---\nP\n", "tools", "string"),
        ("---\ndescription: x\n---\n\n   \n", "body", "system prompt"),
    ],
)
def test_bad_field_names_file_and_field(dirs, text, field, detail):
    _, proj_dir, _, _ = dirs
    path = write(proj_dir, "broken", text)
    with pytest.raises(ProfileError) as raised:
        load_profile_file(path)
    message = str(raised.value)
    assert str(path) in message and f"field '{field}'" in message and detail in message


def test_a_missing_description_is_taken_from_the_body_and_said(dirs):
    # Read leniently, as Claude Code's own agent files are: the first paragraph stands for it, with a note.
    _, proj_dir, _, _ = dirs
    path = write(proj_dir, "nodesc", "---\nname: x\n---\n# Reviewer\n\nYou review diffs.\n")
    profile = load_profile_file(path)
    assert profile.description == "Reviewer"
    assert any("no `description`" in note and "first paragraph" in note for note in profile.ignored)


def test_invalid_yaml_names_the_line(dirs):
    _, proj_dir, _, _ = dirs
    path = write(proj_dir, "bad", "---\ndescription: ok\ntools: [read_file\n---\nP\n")
    with pytest.raises(ProfileError) as raised:
        load_profile_file(path)
    assert str(path) in str(raised.value) and "invalid YAML at line" in str(raised.value)


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("no front matter here\n", "must start with YAML front matter"),
        ("---\ndescription: x\nnever closed\n", "no closing '---'"),
        ("---\n- a\n- b\n---\nP\n", "must be a mapping"),
        # A real YAML parser in safe mode: no object construction from a profile file.
        ("---\ndescription: !!python/object/apply:os.system ['touch /tmp/pwned']\n---\nP\n", "invalid YAML"),
    ],
)
def test_malformed_files(dirs, text, detail):
    _, proj_dir, _, _ = dirs
    path = write(proj_dir, "bad", text)
    with pytest.raises(ProfileError, match=detail) as raised:
        load_profile_file(path)
    assert str(path) in str(raised.value)


def test_non_utf8_and_oversized(dirs):
    _, proj_dir, _, _ = dirs
    proj_dir.mkdir(parents=True)
    binary = proj_dir / "bin.md"
    binary.write_bytes(b"---\ndescription: \xff\xfe\n---\nP\n")
    with pytest.raises(ProfileError, match="not UTF-8"):
        load_profile_file(binary)
    huge = write(proj_dir, "huge", "---\ndescription: x\n---\n" + "x" * 200_000)
    with pytest.raises(ProfileError, match="too large"):
        load_profile_file(huge)


def test_broken_project_file_hides_the_user_profile_and_reports(dirs):
    project, proj_dir, user_dir, home = dirs
    write(user_dir, "helper", "---\ndescription: fine\n---\nFine.\n")
    broken = write(proj_dir, "helper", "---\ndescription: x\nmax_steps: -1\n---\nP\n")
    write(proj_dir, "other", "---\ndescription: other\n---\nOther.\n")
    catalog = load_profiles(project, home=home)
    # The broken file must not silently fall back to another profile of that name.
    with pytest.raises(ProfileError, match="max_steps") as raised:
        catalog.get("helper")
    assert str(broken) in str(raised.value)
    assert "helper" not in [p.name for p in catalog.available()]
    assert catalog.get("other").description == "other"  # one broken file does not break the rest


def test_broken_user_file_is_healed_by_a_project_file(dirs):
    project, proj_dir, user_dir, home = dirs
    write(user_dir, "helper", "---\ndescription: [unclosed\n---\nP\n")
    write(proj_dir, "helper", "---\ndescription: project\n---\nP\n")
    assert load_profiles(project, home=home).get("helper").description == "project"


def test_duplicate_names_in_one_directory(dirs):
    project, proj_dir, _, home = dirs
    write(proj_dir, "a", "---\nname: twin\ndescription: a\n---\nA\n")
    write(proj_dir, "b", "---\nname: twin\ndescription: b\n---\nB\n")
    with pytest.raises(ProfileError, match="already defined by .*a.md"):
        load_profiles(project, home=home).get("twin")


@pytest.mark.parametrize(
    ("session", "requested", "effective"),
    [
        ("default", "bypass", "default"),
        ("default", "acceptEdits", "default"),
        ("plan", "default", "plan"),
        ("default", "plan", "plan"),
        ("bypass", "acceptEdits", "acceptEdits"),
        ("acceptEdits", None, "acceptEdits"),
    ],
)
def test_a_profile_can_only_tighten_the_mode(session, requested, effective):
    assert stricter_mode(session, requested) == effective
