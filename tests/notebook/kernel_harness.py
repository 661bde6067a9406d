"""A real Jupyter kernel driven the way a browser drives it: execute, watch IOPub, click.

The kernel runs a given Python (this venv's, or an ipykernel 6.x venv) through a kernelspec
written to a temp dir, with its working directory in a temp project and the fake Messages
API's URL in its environment. Widget state is rebuilt from IOPub comm messages, and a click
is the comm message the browser sends for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from tests.polling import wait_until

__all__ = ["Kernel", "agent_kernel"]


class Kernel:
    """One kernel process plus a client; see the module docstring."""

    def __init__(self, python: str, project: Path, env: dict[str, str], spec_dir: Path,
                 prefix: Sequence[str] = ()) -> None:
        # ``prefix``: what the kernel is started under (a container-shaped wrapper), as a kernelspec may say.
        kernel_dir = spec_dir / "kernels" / "cc-test"
        kernel_dir.mkdir(parents=True, exist_ok=True)
        (kernel_dir / "kernel.json").write_text(json.dumps({
            "argv": [*prefix, python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "cc-test", "language": "python",
        }))
        full_env = {**os.environ, **env}
        full_env.pop("JPY_PARENT_PID", None)
        # jupyter_client picks a kernel's ports by binding and releasing them; kernels started at once by
        # other test workers can take one first, and the kernel dies at start ("Address already in use").
        # A kernel that dies before its first reply is started again with fresh ports: one that dies for
        # a reason of its own dies each time and fails the test.
        for attempt in range(3):
            self.km = KernelManager(kernel_name="cc-test",
                                    kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec_dir / "kernels")]))
            self.km.start_kernel(cwd=str(project), env=full_env)
            self.kc = self.km.client()
            self.kc.start_channels()
            try:
                self.kc.wait_for_ready(timeout=60)
                break
            except RuntimeError:
                self.kc.stop_channels()
                self.km.shutdown_kernel(now=True)
                if attempt == 2:
                    raise
        self.messages: list[dict[str, Any]] = []
        self.widgets: dict[str, dict[str, Any]] = {}
        self.updates: dict[str, list[dict[str, Any]]] = {}
        self.stdin_requests: list[dict[str, Any]] = []
        self.replies: dict[str, dict[str, Any]] = {}

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    # -- IOPub ------------------------------------------------------------------------------

    def _take(self, msg: dict[str, Any]) -> None:
        self.messages.append(msg)
        kind = msg["msg_type"]
        content = msg["content"]
        if kind == "comm_open":
            state = dict(content.get("data", {}).get("state", {}))
            self.widgets[content["comm_id"]] = state
        elif kind == "comm_msg":
            data = content.get("data", {})
            if data.get("method") in ("update", "echo_update") and content["comm_id"] in self.widgets:
                self.widgets[content["comm_id"]].update(data.get("state", {}))
                self.updates.setdefault(content["comm_id"], []).append(data.get("state", {}))

    def pump(self, timeout: float = 0.1) -> None:
        """Read whatever IOPub has (waiting at most ``timeout`` for the first message)."""
        try:
            msg = self.kc.get_iopub_msg(timeout=timeout)
        except Exception:
            return
        self._take(msg)
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=0.01)
            except Exception:
                return
            self._take(msg)

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 30, what: str = "condition") -> Any:
        """Until ``predicate`` holds, reading the kernel's messages meanwhile."""
        return wait_until(predicate, timeout, lambda: f"{what}; last messages: {self._last_types()}", between=self.pump)

    def _last_types(self) -> list[str]:
        return [m["msg_type"] for m in self.messages[-15:]]

    # -- executing --------------------------------------------------------------------------

    def execute(self, code: str, *, allow_stdin: bool = False) -> str:
        # As a notebook editor sends it: with the cell's id (nbconvert and papermill send none).
        content = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                   "allow_stdin": allow_stdin, "stop_on_error": True}
        msg = self.kc.session.msg("execute_request", content, metadata={"cellId": uuid.uuid4().hex})
        self.kc.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def reply(self, msg_id: str, timeout: float = 60) -> dict[str, Any]:
        def read() -> None:
            self.pump(0.05)
            try:
                msg = self.kc.get_shell_msg(timeout=0.05)
            except Exception:
                return
            # Replies may come in another order than the requests (ipykernel 6 replays
            # cells held back during a wait before the waiting cell's reply): keep them all.
            self.replies[msg["parent_header"].get("msg_id")] = msg

        msg = wait_until(lambda: self.replies.get(msg_id), timeout,
                         lambda: f"the execute_reply of {msg_id}; last messages: {self._last_types()}", between=read)
        # Drain what the cell published before it went idle.
        self.wait_for(lambda: self._idle(msg_id), 10, "idle")
        return msg["content"]

    def _idle(self, msg_id: str) -> bool:
        return any(
            m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"
            and m["parent_header"].get("msg_id") == msg_id for m in self.messages
        )

    def run(self, code: str, timeout: float = 60) -> dict[str, Any]:
        return self.reply(self.execute(code), timeout)

    def ok(self, code: str, timeout: float = 60) -> dict[str, Any]:
        """Run ``code``, insist it succeeded (the cell's text in the failure), and add that text as ``output``."""
        msg_id = self.execute(code)
        reply = self.reply(msg_id, timeout)
        assert reply["status"] == "ok", self.text_output(msg_id)
        return {**reply, "output": self.text_output(msg_id)}

    def text_output(self, msg_id: str) -> str:
        """The cell's text as a saved notebook keeps it: a display replaced by its latest update."""
        out: list[str] = []
        displays: dict[str, int] = {}
        for m in self.messages:
            content = m["content"]
            if m["msg_type"] == "update_display_data":
                at = displays.get(content.get("transient", {}).get("display_id"))
                if at is not None:
                    out[at] = content["data"].get("text/plain", "")
                continue
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "stream":
                out.append(content["text"])
            elif m["msg_type"] in ("execute_result", "display_data"):
                display_id = (content.get("transient") or {}).get("display_id")
                if display_id:
                    displays[display_id] = len(out)
                out.append(content["data"].get("text/plain", ""))
            elif m["msg_type"] == "error":
                out.append("\n".join(content["traceback"]))
        return "".join(out)

    # -- widgets ----------------------------------------------------------------------------

    def find(self, **match: Any) -> list[str]:
        return [cid for cid, state in self.widgets.items() if all(state.get(k) == v for k, v in match.items())]

    def with_class(self, name: str) -> list[str]:
        return [cid for cid, state in self.widgets.items() if name in (state.get("_dom_classes") or [])]

    def send_comm(self, comm_id: str, data: dict[str, Any]) -> None:
        self.kc.session.send(self.kc.shell_channel.socket, "comm_msg", {"comm_id": comm_id, "data": data})

    def click(self, comm_id: str) -> None:
        """What the browser sends when a person clicks a Button."""
        self.send_comm(comm_id, {"method": "custom", "content": {"event": "click"}})

    def render(self, comm_id: str) -> None:
        """What the browser sends when it renders a view of a model that counts its views."""
        self.send_comm(comm_id, {"method": "update", "state": {"_view_count": 1}, "buffer_paths": []})

    def displayed_models(self, msg_id: str) -> list[str]:
        return [
            m["content"]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
            for m in self.messages
            # A cell's view may take the place of a line shown before it (an update of that display).
            if m["msg_type"] in ("display_data", "update_display_data") and m["parent_header"].get("msg_id") == msg_id
            and "application/vnd.jupyter.widget-view+json" in m["content"]["data"]
        ]


@contextlib.contextmanager
def agent_kernel(python: str, tmp_path: Path, *, env: dict[str, str] | None = None, prefix: Sequence[str] = (),
                 headless_timeout: float = 4.0) -> Iterator[Kernel]:
    """A kernel in a fresh project under ``tmp_path`` with the extension loaded and the fake Messages
    API as its model (``k.fake``, ``k.project``); short frontend waits, as a test wants them."""
    from tests.fakes.anthropic_server import FakeAnthropic

    project = tmp_path / "project"
    project.mkdir()
    fake = FakeAnthropic().start()
    full_env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
                **(env or {})}
    k = Kernel(python, project, full_env, tmp_path / "jupyter", prefix=prefix)
    k.fake, k.project = fake, project
    try:
        reply = k.run("%load_ext codingcode_jupyter\n%config CodingCode.frontend_wait = 1.0\n"
                      f"%config CodingCode.headless_timeout = {headless_timeout}")
        assert reply["status"] == "ok", k.text_output("")
        yield k
    finally:
        k.close()
        fake.stop()
