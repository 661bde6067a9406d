"""A real JupyterHub on loopback, as an organisation runs one: the hub, configurable-http-proxy,
single-user servers the users' kernels run in, and the admin's managed policy.

The hub comes from a venv of its own (``.venv-hub``: jupyterhub, jupyter_server and the project;
``CODINGCODE_HUB_VENV`` moves it) and the proxy from npm (``.hub-proxy``; ``CODINGCODE_HUB_PROXY``),
both made by scripts/test.sh. Users log in with the DummyAuthenticator and their servers are
started by SimpleLocalProcessSpawner: each user has a home of their own (HOME, the notebook
directory, ``~/.codingcode``) but every server runs as the OS user the tests run as — creating
real OS users needs root and changes the machine, which a test must not; a deployment uses
LocalProcessSpawner, SystemdSpawner or KubeSpawner for that (docs/deploying.md).

A test drives each user's kernel over the hub's proxy, as the browser does: the REST API to start
a kernel, its websocket channels to run cells. The admin's policy is a managed settings file in
a directory every user's server is pointed at (``CODINGCODE_MANAGED_DIR``), as an image bakes
``/etc/codingcode/managed-settings.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

__all__ = ["HUB_VENV", "PROXY", "Hub", "UserKernel", "hub_missing"]

ROOT = Path(__file__).resolve().parents[2]
HUB_VENV = Path(os.environ.get("CODINGCODE_HUB_VENV", ROOT / ".venv-hub"))
PROXY = Path(os.environ.get("CODINGCODE_HUB_PROXY", ROOT / ".hub-proxy" / "node_modules" / ".bin" /
                            "configurable-http-proxy"))


def hub_missing() -> str | None:
    """Why a hub cannot run here (None: it can)."""
    if not (HUB_VENV / "bin" / "jupyterhub").exists():
        return f"no JupyterHub at {HUB_VENV} (scripts/test.sh makes it)"
    if not PROXY.exists():
        return f"no configurable-http-proxy at {PROXY} (scripts/test.sh installs it)"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_CONFIG = """
import json
c = get_config()  # noqa
settings = json.loads({settings!r})
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = settings["port"]
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = settings["hub_port"]
c.ConfigurableHTTPProxy.command = [settings["proxy"]]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:%d" % settings["proxy_api_port"]
c.JupyterHub.db_url = "sqlite:///" + settings["dir"] + "/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = settings["dir"] + "/cookie_secret"
c.JupyterHub.pid_file = settings["dir"] + "/jupyterhub.pid"
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = settings["homes"] + "/{{username}}"
c.Spawner.notebook_dir = "~/work"
c.Spawner.cmd = [settings["singleuser"]]
# CI runs as root, and every server runs as the hub's user here (see the module docstring).
c.Spawner.args = ["--allow-root"] if settings["root"] else []
# Ten kernels starting at once on a busy two-core machine may take longer than the default minute to
# answer their first kernel_info; the server would then close the kernel's websocket.
c.Spawner.args += ["--MappingKernelManager.kernel_info_timeout=300"]
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.default_url = "/tree"
c.Spawner.environment = settings["environment"]
c.JupyterHub.services = [{{"name": "driver", "api_token": settings["token"]}}]
c.JupyterHub.load_roles = [{{"name": "driver", "services": ["driver"],
                            "scopes": ["admin:users", "admin:servers", "access:servers", "read:users"]}}]
c.JupyterHub.log_level = "WARN"
"""


@dataclass
class Hub:
    """The hub process and what it serves; a context manager (``async with``)."""

    directory: Path
    environment: dict[str, str]
    port: int = field(default_factory=_free_port)
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def home(self, user: str) -> Path:
        return self.directory / "homes" / user

    def start(self, users: list[str]) -> None:
        for user in users:
            (self.home(user) / "work").mkdir(parents=True, exist_ok=True)
        settings = {"port": self.port, "hub_port": _free_port(), "proxy_api_port": _free_port(),
                    "proxy": str(PROXY), "dir": str(self.directory), "root": os.getuid() == 0,
                    "homes": str(self.directory / "homes"), "singleuser": str(HUB_VENV / "bin" / "jupyterhub-singleuser"),
                    "environment": self.environment, "token": self.token}
        config = self.directory / "jupyterhub_config.py"
        config.write_text(_CONFIG.format(settings=json.dumps(settings)))
        env = {key: value for key, value in os.environ.items() if not key.startswith(("JUPYTER", "JPY_"))}
        env["PATH"] = f"{HUB_VENV / 'bin'}:{PROXY.parent}:{env.get('PATH', '')}"
        log = open(self.directory / "hub.log", "wb")
        self.process = subprocess.Popen([str(HUB_VENV / "bin" / "jupyterhub"), "-f", str(config)], cwd=self.directory,
                                        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    async def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        async with httpx.AsyncClient(timeout=120) as client:
            return await client.request(method, f"{self.url}/hub/api{path}",
                                        headers={"Authorization": f"token {self.token}"}, **kwargs)

    async def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"the hub exited: {self.log()[-3000:]}")
            try:
                if (await self.api("GET", "/")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)
        raise TimeoutError(f"the hub did not answer in {timeout} s: {self.log()[-3000:]}")

    async def start_server(self, user: str, timeout: float = 150) -> None:
        """Create ``user`` and start their single-user server (through the proxy when ready)."""
        await self.api("POST", f"/users/{user}")
        started = await self.api("POST", f"/users/{user}/server")
        assert started.status_code in (201, 202), started.text
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = (await self.api("GET", f"/users/{user}")).json()
            server = (info.get("servers") or {}).get("", {})
            if server.get("ready"):
                return
            await asyncio.sleep(0.3)
        raise TimeoutError(f"{user}'s server did not start: {self.log()[-3000:]}")

    def log(self) -> str:
        path = self.directory / "hub.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        import signal

        os.killpg(self.process.pid, signal.SIGTERM)  # the hub stops its servers and the proxy it started
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


@dataclass
class UserKernel:
    """One kernel of one user's server, driven over the proxy as a browser drives it."""

    hub: Hub
    user: str
    kernel_id: str = ""
    ws: Any = None
    session: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def base(self) -> str:
        return f"{self.hub.url}/user/{self.user}"

    async def start(self) -> None:
        async with httpx.AsyncClient(timeout=120) as client:
            # As a notebook opened at the top of the server: the kernel runs in its root (~/work).
            reply = await client.post(f"{self.base}/api/kernels", json={"name": "python3", "path": ""},
                                      headers={"Authorization": f"token {self.hub.token}"})
        assert reply.status_code == 201, reply.text
        self.kernel_id = reply.json()["id"]
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        url = f"ws://127.0.0.1:{self.hub.port}/user/{self.user}/api/kernels/{self.kernel_id}/channels"
        # The server answers once the kernel is up: ten kernels starting at once on two cores take a while.
        request = HTTPRequest(url, headers={"Authorization": f"token {self.hub.token}"}, connect_timeout=180,
                              request_timeout=180)
        self.ws = await websocket_connect(request, max_message_size=64 * 1024 * 1024)

    async def execute(self, code: str, timeout: float) -> dict[str, Any]:
        """Run a cell; its reply's content with ``output`` (the text it printed) once the kernel is idle."""
        msg_id = uuid.uuid4().hex
        await self.ws.write_message(json.dumps({
            "header": {"msg_id": msg_id, "username": self.user, "session": self.session, "msg_type": "execute_request",
                       "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        output: list[str] = []
        reply: dict[str, Any] | None = None
        idle = False
        deadline = time.monotonic() + timeout
        while not (idle and reply is not None):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.user}: the cell did not finish in {timeout} s: {''.join(output)[-2000:]}")
            raw = await asyncio.wait_for(self.ws.read_message(), left)
            if raw is None:
                raise ConnectionError(f"{self.user}: the kernel's websocket closed")
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                output.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                output.append(content["data"].get("text/plain", ""))
            elif kind == "error":
                output.append("\n".join(content["traceback"]))
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
            elif kind == "execute_reply":
                reply = content
        return {**reply, "output": "".join(output)}

    async def close(self) -> None:
        if self.ws is not None:
            self.ws.close()
        if self.kernel_id:
            async with httpx.AsyncClient(timeout=60) as client:
                await client.delete(f"{self.base}/api/kernels/{self.kernel_id}",
                                    headers={"Authorization": f"token {self.hub.token}"})
