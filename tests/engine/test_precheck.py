"""A call that cannot succeed is answered as an error before anyone is asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from codingcode_jupyter.engine.agent import AgentLoop, Conversation
from codingcode_jupyter.engine.models.function import FunctionModel
from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.files import edit_file_tool, read_file_tool, write_file_tool
from tests.engine.helpers import AllowAll, Recorder, StaticTools, make_deps


class CountingApprover(AllowAll):
    """Allows everything and counts how often it was consulted."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    async def decide(self, call, ctx, ask):
        self.asked.append(call.definition.name)
        return await super().decide(call, ctx, ask)


def _one_call(name: str, tool_input: dict):
    sent = []

    def fn(request):
        if not sent:
            sent.append(1)
            return [{"type": "tool_use", "name": name, "input": tool_input}]
        return [{"type": "text", "text": "ok"}]
    return fn


async def _run(project: Path, name: str, tool_input: dict, state: SessionState | None = None):
    approver, events = CountingApprover(), Recorder()
    loop = AgentLoop(model=FunctionModel(_one_call(name, tool_input)), approver=approver, deps=make_deps(project),
                     tools=StaticTools([read_file_tool(), write_file_tool(), edit_file_tool()]), session_id="s",
                     state=state or SessionState(), emit=events)
    await loop.run(Conversation(), "go", 1)
    finished = events.of("tool_call_finished")[0]
    return approver, finished


@pytest.mark.parametrize("name, tool_input, expected", [
    ("write_file", {"path": "old.py", "content": "new\n"}, "has not been read"),
    ("edit_file", {"path": "old.py", "old_string": "absent", "new_string": "x"}, "has not been read"),
    ("edit_file", {"path": "missing.py", "old_string": "a", "new_string": "b"}, "File not found"),
])
async def test_doomed_calls_never_reach_the_approver(tmp_path, name, tool_input, expected):
    (tmp_path / "old.py").write_text("old\n")
    approver, finished = await _run(tmp_path, name, tool_input)
    assert approver.asked == [] and finished.status == "error" and expected in finished.result
    assert (tmp_path / "old.py").read_text() == "old\n"


async def test_a_no_op_write_and_a_missing_old_string_after_reading_are_errors_too(tmp_path):
    (tmp_path / "old.py").write_text("old\n")
    state = SessionState()
    from codingcode_jupyter.engine.state import FileStamp

    st = (tmp_path / "old.py").stat()
    state.files_seen[str(tmp_path / "old.py")] = FileStamp(mtime_ns=st.st_mtime_ns, size=st.st_size)
    approver, finished = await _run(tmp_path, "write_file", {"path": "old.py", "content": "old\n"}, state)
    assert approver.asked == [] and "nothing to write" in finished.result
    approver, finished = await _run(tmp_path, "edit_file", {"path": "old.py", "old_string": "nope", "new_string": "x"}, state)
    assert approver.asked == [] and "was not found" in finished.result
    # A call that can succeed is still asked, and runs.
    approver, finished = await _run(tmp_path, "edit_file", {"path": "old.py", "old_string": "old", "new_string": "new"}, state)
    assert approver.asked == ["edit_file"] and finished.status == "ok"
    assert (tmp_path / "old.py").read_text() == "new\n"
