"""Real Claude Code files from public repositories (tests/data/claude/real, sources in its README):
every file loads or says what it ignored, every command expands, every skill loads, every Bash
rule does what it says — allow rules their obvious call and no more, deny rules on every spelling.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from codingcode_jupyter.engine.agents.profiles import load_profiles
from codingcode_jupyter.engine.approval.rule_syntax import parse_rule
from codingcode_jupyter.engine.approval.rules import judge
from codingcode_jupyter.engine.approval.subject import build_subject
from codingcode_jupyter.engine.commands import expand_command, load_commands
from codingcode_jupyter.engine.settings import read_settings_file
from codingcode_jupyter.engine.skills import load_skills, skill_text
from codingcode_jupyter.engine.tools.builtin import builtin_tools
from codingcode_jupyter.engine.tools.skill import load_skill_tool
from tests.engine.helpers import tool_context

DATA = Path(__file__).resolve().parents[1] / "data" / "claude"
REAL = DATA / "real"
EXECUTE = {tool.name: tool for tool in builtin_tools()}["execute_command"]


def claude_dirs() -> list[Path]:
    return sorted(p for p in REAL.rglob(".claude") if p.is_dir())


def settings_files() -> list[Path]:
    return sorted(p for d in claude_dirs() for p in d.glob("settings*.json"))


def agent_files() -> list[Path]:
    return sorted(p for d in claude_dirs() for p in (d / "agents").glob("*.md"))


def command_files() -> list[Path]:
    return sorted(p for d in claude_dirs() for p in (d / "commands").rglob("*.md"))


def skill_files() -> list[Path]:
    return sorted(p for d in claude_dirs() for p in (d / "skills").glob("*/SKILL.md"))


def bundled_files() -> list[Path]:
    skills = {p.parent for p in skill_files()}
    return sorted(p for s in skills for p in s.rglob("*") if p.is_file() and p.name not in ("SKILL.md", "LICENSE.txt"))


def bash_rules() -> list[str]:
    """Every Bash rule of the real files: settings' allow/deny/ask and commands' allowed-tools, and
    the generated corpus's (tests/data/claude/project, home)."""
    rules: list[str] = []
    paths = [*settings_files(), *sorted(DATA.glob("project/.claude/settings*.json")), DATA / "home" / "settings.json"]
    for path in paths:
        permissions = json.loads(path.read_text()).get("permissions", {})
        rules += [r for action in ("allow", "deny", "ask") for r in permissions.get(action, []) if r.startswith("Bash(")]
    for directory in claude_dirs():
        for command in load_commands(directory.parent, skills=False).listed():
            rules += [r for r in command.allowed_tools if r.startswith("Bash(")]
    return sorted(set(rules))


def counts() -> str:
    return (f"{len(settings_files())} settings, {len(agent_files())} agents, {len(command_files())} commands, "
            f"{len(skill_files())} skills, {len(bundled_files())} bundled files; {len(bash_rules())} Bash rules")


def test_the_readme_keeps_the_numbers():
    total = len(settings_files()) + len(agent_files()) + len(command_files()) + len(skill_files()) + len(bundled_files())
    assert total >= 40
    readme = (DATA / "README.md").read_text()
    assert f"Real files: {total} ({counts()})" in readme, counts()


@pytest.mark.parametrize("path", settings_files(), ids=lambda p: str(p.relative_to(REAL)))
def test_every_settings_file_loads_and_says_what_it_ignored(path: Path):
    read = read_settings_file(path, "claude")
    raw = json.loads(path.read_text())
    ignored = {entry.key.split(".")[0] for entry in read.ignored}
    for key in raw:
        # Each top-level key applies or is listed with a reason.
        assert key in read.settings.model_fields_set or key in ignored, key


def test_every_agent_file_loads_the_four_with_unquoted_colons_included():
    read_as_claude = 0
    for directory in claude_dirs():
        if not (directory / "agents").is_dir():
            continue
        catalog = load_profiles(directory.parent)
        assert catalog.errors == {}, catalog.errors
        for path in (directory / "agents").glob("*.md"):
            profile = catalog.get(path.stem)
            assert profile.description and profile.system_prompt
            read_as_claude += any("read as Claude Code reads it" in note for note in profile.ignored)
    assert read_as_claude >= 4  # claude-code-action's reviewers: `description: ...: ...` unquoted


@pytest.mark.parametrize("path", command_files(), ids=lambda p: str(p.relative_to(REAL)))
def test_every_command_expands(path: Path):
    project = path.parents[2] if path.parent.name == "commands" else path.parents[3]
    catalog = load_commands(project)
    assert catalog.errors == []
    name = ":".join(path.relative_to(project / ".claude" / "commands").with_suffix("").parts)
    command = catalog.get(name)
    assert command is not None and command.description
    request = expand_command(command, "42 high", project)
    text = request.render(["(output)"] * len(request.shell))
    assert text.strip() and "$ARGUMENTS" not in text and not re.search(r"\$[1-9]", text)
    assert "42 high" in text or "42" in text


@pytest.mark.parametrize("path", skill_files(), ids=lambda p: str(p.relative_to(REAL)))
async def test_every_skill_loads(path: Path):
    project = path.parents[3]
    catalog = load_skills(project)
    assert catalog.errors == []
    skill = next(s for s in catalog.listed() if s.path == path)
    tool = load_skill_tool(project)
    ctx = tool_context(project)
    body = await tool.execute(tool.parameters(name=skill.name), ctx)
    # As loaded: with its variables and ($ARGUMENTS, none given) arguments filled in.
    assert skill_text(skill)[:200] in body and "$ARGUMENTS" not in body
    for bundled in skill.files()[:3]:
        if bundled.endswith((".md", ".py", ".txt")):
            assert await tool.execute(tool.parameters(name=skill.name, file=bundled), ctx)


# -- Bash rules ------------------------------------------------------------------------------

def obvious_call(rule: str) -> str:
    """The call a person writing ``rule`` means it for."""
    pattern = rule[len("Bash("):-1]
    if pattern.endswith(":*"):
        return pattern[:-2].rstrip() + " x"
    if pattern.endswith(" *"):
        return pattern[:-2] + " x"
    return pattern.replace("*", "x")


def spellings(call: str, project: Path) -> list[str]:
    """The same call as a model may write it (the issue's list)."""
    words = call.split()
    program, rest = words[0], " ".join(words[1:])
    out = [f"FOO=1 {call}", f"env -i {call}", f"env -u HOME A=1 {call}", f"timeout 60 {call}", f"nice -n 5 {call}",
           f"nohup {call}", f"time {call}", f"stdbuf -oL {call}", f"ionice -c 3 {call}", f"command {call}",
           f"exec {call}", f"bash -c '{call}'", f"sh -c '{call}'", f"eval '{call}'", f"cd . && {call}",
           f"echo a | xargs {call}", f"timeout 5 nice {call}"]
    if "=" not in program and "/" not in program:
        out += [f"/usr/bin/{call}", f"./{call}"]
    if program == "git":
        out += [f"git -C . {rest}", f"git --git-dir=.git {rest}", f"git --work-tree . {rest}",
                f"git -c user.name=x {rest}", f"git --no-pager {rest}"]
    if program.startswith("./"):
        out += [f"{project}/{call[2:]}", call[2:]]
    return out


def decide(rule: str, action: str, command: str, project: Path) -> str | None:
    verdict = judge(build_subject(EXECUTE, {"command": command}, project), [parse_rule(rule, action)])  # type: ignore[arg-type]
    return verdict.action if verdict is not None else None


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


def test_every_allow_rule_allows_its_obvious_call(project: Path):
    misses = [rule for rule in bash_rules() if decide(rule, "allow", obvious_call(rule), project) != "allow"]
    assert misses == []


def test_no_allow_rule_is_widened_by_normalisation(project: Path):
    widened = []
    for rule in bash_rules():
        call = obvious_call(rule)
        if call.split()[0] == "git":
            other = call.replace("git ", "git -C /elsewhere ", 1)
            if decide(rule, "allow", other, project) == "allow":
                widened.append((rule, other))
        if "=" not in call.split()[0] and decide(rule, "allow", f"LD_PRELOAD=x.so {call}", project) == "allow":
            widened.append((rule, f"LD_PRELOAD=x.so {call}"))
    assert widened == []


@pytest.mark.parametrize("action", ["deny", "ask"])
def test_every_deny_and_ask_rule_holds_on_every_spelling(project: Path, action: str):
    rules = bash_rules()
    checked, slipped = 0, []
    for rule in rules:
        call = obvious_call(rule)
        for spelled in [call, *spellings(call, project)]:
            checked += 1
            if decide(rule, action, spelled, project) != action:
                slipped.append((rule, spelled))
    assert slipped == []
    assert checked > 20 * len(rules)
    # Positive control: the check can fail (a rule for another program holds on none of these).
    assert decide("Bash(curl:*)", action, "timeout 60 wget x", project) is None
