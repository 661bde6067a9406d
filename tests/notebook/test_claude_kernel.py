"""A project configured for Claude Code, in a real kernel: its hooks run as they run there.

The Bash validator (tests/data/claude/validate_bash_hook.py) follows Claude Code's published hook
contract and its example's purpose — block `grep`, steer to ripgrep — and is written for these
tests; nothing is fetched. The other hooks record what they were told (the corpus's record.py).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.engine.claude_helpers import CORPUS
from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.notebook.kernel_harness import Kernel

pytestmark = pytest.mark.kernel

PY = sys.executable


def _settings(project: Path) -> None:
    hooks = project / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    shutil.copy(CORPUS / "validate_bash_hook.py", hooks / "validate_bash_hook.py")
    shutil.copy(CORPUS / "project" / ".claude" / "hooks" / "record.py", hooks / "record.py")
    record = f'{PY} "$CLAUDE_PROJECT_DIR/.claude/hooks/record.py"'
    (project / ".claude" / "settings.json").write_text(json.dumps({
        "$schema": "https://json.schemastore.org/claude-code-settings.json",
        "statusLine": {"type": "command", "command": "echo status"},
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": f'{PY} "$CLAUDE_PROJECT_DIR/.claude/hooks/validate_bash_hook.py"'}]}],
            "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": f"{record} PostToolUse"}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"{record} UserPromptSubmit"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": f"{record} Stop"}]}],
        },
    }))


@pytest.fixture
def claude_project(tmp_path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "a.py").write_text("# TODO: one\n")
    _settings(project)
    fake = FakeAnthropic().start()
    log = tmp_path / "hooks.log"
    env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
           "CODINGCODE_TRUST": "1", "CODINGCODE_USER_DIR": str(tmp_path / "user"), "CC_TEST_LOG": str(log),
           "CC_TEST_ANSWERS": json.dumps({"UserPromptSubmit": "PROMPT-CONTEXT-FROM-HOOK"})}
    kernel = Kernel(sys.executable, project, env, tmp_path / "jupyter")
    kernel.fake, kernel.project, kernel.log = fake, project, log
    assert kernel.run("%load_ext codingcode_jupyter\n%config CodingCode.frontend_wait = 1.0")["status"] == "ok"
    yield kernel
    kernel.close()
    fake.stop()


def _told(k: Kernel) -> list[dict]:
    return [json.loads(line) for line in k.log.read_text().splitlines()] if k.log.exists() else []


def test_claude_codes_hooks_run_unchanged_in_a_kernel(claude_project):
    k = claude_project
    k.fake.add(
        Reply([tool_use("execute_command", {"command": "grep -rn TODO src"}, id="g1")]),
        Reply([tool_use("execute_command", {"command": "ls src"}, id="l1")]),
        Reply([text("found it")]),
    )
    msg = k.execute("%%agent --mode bypass\nfind the TODOs")
    reply = k.reply(msg, timeout=90)
    assert reply["status"] == "ok", k.text_output(msg)
    first, second, third = k.fake.requests[:3]
    # UserPromptSubmit: its stdout went with the prompt.
    assert "PROMPT-CONTEXT-FROM-HOOK" in json.dumps(first["messages"])
    # The validator blocked grep even in bypass mode, and the model read why.
    blocked = second["messages"][-1]["content"][0]
    assert blocked["is_error"] and "Use 'rg' (ripgrep)" in json.dumps(blocked["content"])
    # ls was not blocked; it ran, and PostToolUse saw what it printed.
    ran = third["messages"][-1]["content"][0]
    assert not ran.get("is_error") and "a.py" in json.dumps(ran["content"])
    told = _told(k)
    posts = [t["payload"] for t in told if t["argv"] == "PostToolUse"]
    assert len(posts) == 1 and posts[0]["tool_name"] == "Bash" and "a.py" in posts[0]["tool_response"]["stdout"]
    # Stop ran once, at the end of the turn, after everything else.
    assert [t["argv"] for t in told][-1] == "Stop" and sum(t["argv"] == "Stop" for t in told) == 1
    assert all(t["CLAUDE_PROJECT_DIR"] == str(k.project.resolve()) for t in told)


def test_doctor_says_what_carried_over(claude_project):
    k = claude_project
    msg = k.execute("%agent doctor")
    assert k.reply(msg)["status"] == "ok"
    out = k.text_output(msg)
    # Paths inside the project are shown relative to it.
    assert "claude-project .claude/settings.json (Claude Code's format) read" in out and str(k.project) not in out
    assert "statusLine — the notebook shows status" in out and "$schema" in out
    assert "allow  Bash(ls:*)" in out and "→ execute_command" in out
    assert "PreToolUse: Bash → `" in out and "validate_bash_hook.py" in out and "Stop: every call" in out
    status = k.execute("%agent status")
    assert k.reply(status)["status"] == "ok"
    assert re.search(r"^ignored +", k.text_output(status), re.M) and "statusLine" in k.text_output(status)


def test_a_slash_command_runs_in_a_cell_is_listed_and_completed(claude_project):
    k = claude_project
    commands = k.project / ".claude" / "commands"
    (commands / "git").mkdir(parents=True)
    (commands / "explain.md").write_text("---\ndescription: Explain a file: briefly\nargument-hint: [file] [depth]\n---\n"
                                         "Explain $1 at depth $2.\nFiles:\n!`ls src`\n")
    (commands / "git" / "summary.md").write_text("Summarise the branch.\n")
    (k.project / ".claude" / "skills" / "style").mkdir(parents=True)
    (k.project / ".claude" / "skills" / "style" / "SKILL.md").write_text(
        "---\nname: style\ndescription: House style: short names\n---\nUse short names.\n")
    k.fake.add(Reply([text("explained")]))
    out = k.ok("%%agent --mode bypass\n/explain src/a.py deep", timeout=90)["output"]
    sent = json.dumps(k.fake.requests[-1]["messages"])
    assert "Explain src/a.py at depth deep." in sent and "a.py" in sent and "!`ls" not in sent, out
    # The skill is offered by name and description only.
    assert "- style: House style: short names" in json.dumps(k.fake.requests[-1]["system"])
    listing = k.ok("%agent commands")["output"]
    assert "/explain [file] [depth]" in listing and "Explain a file: briefly" in listing and "/summary is /git:summary" in listing
    assert "House style: short names" in k.ok("%agent skills")["output"]
    reply = k.kc.complete("%%agent /ex", 11, reply=True, timeout=30)["content"]
    assert "/explain" in reply["matches"], reply
    unknown = k.execute("%%agent\n/nope")
    assert k.reply(unknown)["status"] == "error" and "No slash command /nope" in k.text_output(unknown)


def test_hooks_run_with_bash_and_see_the_command_description(claude_project):
    k = claude_project
    # A hook in bash syntax ([[ =~ ]]), as people write them for Claude Code: /bin/sh (dash) fails it.
    hook = ('input=$(cat); if [[ "$input" =~ \\"description\\":\\ \\"([^\\"]*)\\" ]]; then '
            'echo "${BASH_REMATCH[1]}" >> "$CC_TEST_LOG.desc"; fi; exit 0')
    settings = json.loads((k.project / ".claude" / "settings.json").read_text())
    settings["hooks"]["PreToolUse"].append({"matcher": "Bash", "hooks": [{"type": "command", "command": hook}]})
    (k.project / ".claude" / "settings.json").write_text(json.dumps(settings))
    k.fake.add(Reply([tool_use("execute_command", {"command": "ls src", "description": "List the sources"})]),
               Reply([text("listed")]))
    k.ok("%%agent --mode bypass\nlist", timeout=90)
    assert (Path(str(k.log) + ".desc")).read_text().strip() == "List the sources"
