"""A newcomer's first hour, second pass (issue 46), in a real kernel: what the cell says is what
happened, the saved record is quiet, the limits are said plainly.

Each test drives the kernel as a person (or the notebook page, played by tests/notebook/fake_page.py)
does, and reads what the cell and the saved notebook keep.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.notebook.fake_page import FakePage
from tests.notebook.kernel_harness import Kernel

pytestmark = pytest.mark.kernel


@pytest.fixture
def kernel(tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    user = tmp_path / "user"
    user.mkdir()
    fake = FakeAnthropic().start()
    env = {
        "ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
        "CODINGCODE_USER_DIR": str(user),
    }
    k = Kernel(sys.executable, project, env, tmp_path / "jupyter")
    k.fake, k.project, k.user = fake, project, user
    reply = k.run("%load_ext codingcode_jupyter\n%config CodingCode.frontend_wait = 1.0\n%config CodingCode.headless_timeout = 4.0")
    assert reply["status"] == "ok"
    try:
        yield k
    finally:
        k.close()
        fake.stop()


def _cells(*sources: tuple[str, str]) -> list[dict]:
    return [{"id": cell_id, "cell_type": "code", "source": source, "outputs": [], "execution_count": None}
            for cell_id, source in sources]


def _live_buttons(k: Kernel, label: str) -> list[str]:
    closed = {m["content"]["comm_id"] for m in k.messages if m["msg_type"] == "comm_close"}
    return [cid for cid in k.find(_model_name="ButtonModel", description=label)
            if cid not in closed and not k.widgets[cid].get("disabled")]


def _render(k: Kernel, msg_id: str) -> None:
    root = k.wait_for(lambda: k.displayed_models(msg_id), 30, "the cell's widget")[0]
    k.render(root)


def _turn(k: Kernel, prompt: str, *, page: FakePage | None = None, until=None, head: str = "%%agent",
          timeout: float = 60) -> str:
    msg_id = k.execute(f"{head}\n{prompt}")
    rendered = []

    def done() -> bool:
        if page is not None:
            page.step()
        if not rendered and k.displayed_models(msg_id):
            k.render(k.displayed_models(msg_id)[0])
            rendered.append(True)
        if until is not None:
            until()
        return k._idle(msg_id)

    k.wait_for(done, timeout, "the turn to end")
    return msg_id


def _card_text(k: Kernel) -> str:
    return " ".join(str(state.get("value", "")) for state in k.widgets.values()
                    if "codingcode-approval" in json.dumps(state) or "Allow the agent" in str(state.get("value", "")))


# -- 6: a division in a cell is not a path ------------------------------------------------------


def test_run_cells_card_does_not_read_a_division_as_a_path_outside_the_project(kernel):
    kernel.ok("total = 30.0\nrows = [1, 2, 3]")
    page = FakePage(kernel, _cells(("a", "mean_amount = total / len(rows)\nmean_amount"), ("b", "%%agent\nrun it")))
    kernel.fake.add(Reply([tool_use("run_cells", {"cell_id": "a"})]), Reply([text("done")]))
    cards: list[str] = []

    def person() -> None:
        allow = _live_buttons(kernel, "Allow")
        if allow and not cards:
            cards.append(json.dumps(kernel.widgets))
            kernel.click(allow[0])

    _turn(kernel, "run the cell", page=page, until=person)
    shown = cards[0] if cards else ""
    # Asked or not, no reason may say the code reads outside the project: `/` here divides.
    assert "outside the project" not in shown, re.findall(r"[^<>]{0,120}outside the project[^<>]{0,60}", shown)
    assert any(o.get("data", {}).get("text/plain") == "10.0" for o in page.cells[0]["outputs"]), page.cells[0]


# -- 13: an unknown option lists the options; an unknown subcommand suggests the nearest --------------


def test_an_unknown_option_lists_the_options_and_a_typo_gets_the_nearest(kernel):
    msg_id = kernel.execute("%%agent --frobnicate\nhello")
    assert kernel.reply(msg_id)["status"] == "error"
    said = kernel.text_output(msg_id)
    assert "--frobnicate" in said and "unrecognized" not in said, said
    for option in ("--new", "--model", "--mode", "--agent", "--project", "--approval-timeout", "--approval-policy"):
        assert option in said, (option, said)
    msg_id = kernel.execute("%%agent --aproval-policy rules\nhello")
    kernel.reply(msg_id)
    assert "did you mean --approval-policy?" in kernel.text_output(msg_id), kernel.text_output(msg_id)
    msg_id = kernel.execute("%agent stauts")
    assert kernel.reply(msg_id)["status"] == "error"
    assert "Did you mean %agent status?" in kernel.text_output(msg_id), kernel.text_output(msg_id)
    msg_id = kernel.execute("%agent help undoo")
    kernel.reply(msg_id)
    assert "Did you mean %agent undo?" in kernel.text_output(msg_id), kernel.text_output(msg_id)
    assert not kernel.fake.requests, "nothing was sent to the model"


# -- 10: .codingcode/ keeps itself out of the person's git status ------------------------------------


def _git(project: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, check=True).stdout


def test_the_agents_own_folder_stays_out_of_git_status_and_shared_settings_do_not(kernel):
    project = kernel.project
    _git(project, "init", "-q")
    kernel.fake.add(Reply([tool_use("write_file", {"path": "notes.txt", "content": "hi\n"}, id="w1")]), Reply([text("Written.")]))
    msg_id = kernel.execute("%%agent --mode acceptEdits\nwrite notes.txt")
    assert kernel.reply(msg_id)["status"] == "ok", kernel.text_output(msg_id)
    own = project / ".codingcode"
    assert (own / "audit.jsonl").exists() and (own / "sessions").is_dir() and (own / "checkpoints").is_dir()
    status = _git(project, "status", "--porcelain", "--untracked-files=all")
    # The control: git status sees the file the agent wrote; the agent's own folder is not in it.
    assert "notes.txt" in status and ".codingcode" not in status, status
    # What a project shares from the folder is not ignored: it can be committed as before.
    (own / "settings.json").write_text("{}\n")
    (own / "agents").mkdir()
    (own / "agents" / "reviewer.md").write_text("---\nname: reviewer\n---\nReview.\n")
    shared = _git(project, "status", "--porcelain", "--untracked-files=all")
    assert ".codingcode/settings.json" in shared and ".codingcode/agents/reviewer.md" in shared, shared
    assert "audit.jsonl" not in shared and "sessions" not in shared and "checkpoints" not in shared, shared
