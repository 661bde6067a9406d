"""Host Unix sockets are out of reach: a Docker or systemd socket would be a full escape.

A real listening AF_UNIX socket is put where commands can see it (the home directory, /run,
the project, the abstract namespace); each test checks the path is visible inside, so only
the seccomp filter can be what stops the connection, and that the server itself answers.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import shutil
import socket
import struct
import tempfile
import threading
import uuid
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import CommandSandbox
from codingcode_jupyter.engine.sandbox.seccomp import sandbox_filter
from codingcode_jupyter.engine.settings import SandboxSettings
from tests.engine.sandbox_helpers import make_home, make_sandbox, needs_bwrap, run

ANSWER = b"ANSWERED-BY-HOST-SOCKET-91c4"

_CONNECT = """
import socket, sys
for path in sys.argv[1:]:
    address = "\\0" + path[1:] if path.startswith("@") else path
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect(address)
        print("REACHED", path, s.recv(100))
    except OSError as error:
        print("BLOCKED", path, error.errno)
a, b = socket.socketpair()
a.sendall(b"pair-ok")
print(b.recv(10).decode())
server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.bind(("127.0.0.1", 0))
server.listen(1)
client = socket.create_connection(server.getsockname())
print("tcp-ok" if server.accept() else "")
"""


class _Listener:
    """A host AF_UNIX server answering every connection; counts who got through."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.accepted = 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(address)
        self.sock.listen(8)
        self.sock.settimeout(0.02)  # how soon close() is noticed: each listener is joined in turn
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted += 1
            conn.sendall(ANSWER)
            conn.close()

    def answers(self) -> bool:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(self.address)
            return client.recv(100) == ANSWER

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def places(tmp_path: Path):
    """Directories a host socket can live in that are visible inside the sandbox."""
    made = [Path(tempfile.mkdtemp(dir="/var/tmp", prefix="codingcode-home-"))]
    if os.access("/run", os.W_OK):
        made.append(Path(tempfile.mkdtemp(dir="/run", prefix="codingcode-test-")))
    yield made
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
@needs_bwrap
@pytest.mark.parametrize("network", [None, {"allowedDomains": ["localhost"]}], ids=["no-network", "proxy"])
async def test_host_unix_sockets_cannot_be_reached(places: list[Path], tmp_path: Path, network) -> None:
    home = make_home(places[0])
    project = home / "proj"
    project.mkdir()
    # In an allowlisted part of the home (the rest of it is not visible at all).
    paths = [home / ".local" / "lib" / "docker.sock", project / "app.sock", *(place / "systemd.sock" for place in places[1:])]
    paths[0].parent.mkdir(parents=True)
    abstract = f"@codingcode-test-{uuid.uuid4().hex}"
    listeners = [_Listener(str(path)) for path in paths] + [_Listener("\0" + abstract[1:])]
    sandbox = make_sandbox(project, home, **({"network": network} if network else {}))
    try:
        assert all(listener.answers() for listener in listeners)  # control: the servers do answer
        before = [listener.accepted for listener in listeners]
        names = " ".join([*map(str, paths), abstract])
        visible = await run(sandbox, f"for p in {' '.join(map(str, paths))}; do [ -S $p ] && echo VISIBLE $p; done")
        assert visible.out.count("VISIBLE") == len(paths), visible  # so only the filter can stop them
        result = await run(sandbox, f"python3 -c '{_CONNECT}' {names}")
        assert "REACHED" not in result.out and ANSWER.decode() not in result.out, result
        assert result.out.count("BLOCKED") == len(listeners), result
        # Controls: pipes between the command's own processes and loopback TCP still work.
        assert "pair-ok" in result.out and "tcp-ok" in result.out, result
        assert [listener.accepted for listener in listeners] == before
    finally:
        for listener in listeners:
            listener.close()
        await sandbox.aclose()


_IO_URING = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
fd = libc.syscall(425, 4, params)
print("io_uring", fd, ctypes.get_errno())
"""


def _io_uring_on_host() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(425, 4, ctypes.create_string_buffer(120))
    if fd >= 0:
        os.close(fd)
    return fd >= 0


@needs_bwrap
async def test_io_uring_cannot_create_sockets_behind_the_filter(tmp_path: Path) -> None:
    # io_uring can open sockets without the socket() system call the filter judges.
    if not _io_uring_on_host():
        pytest.skip("io_uring is disabled on this host")
    sandbox = CommandSandbox.create(tmp_path, SandboxSettings())
    try:
        result = await run(sandbox, f"python3 -c '{_IO_URING}'")
    finally:
        await sandbox.aclose()
    assert result.out.split() == ["io_uring", "-1", str(errno.ENOSYS)], result


def test_filter_is_refused_on_an_unknown_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "sparc64")
    assert sandbox_filter() is None
    sandbox = CommandSandbox.create(tmp_path, SandboxSettings(), bwrap=shutil.which("bwrap") or "/usr/bin/bwrap")
    assert not sandbox.active
    assert "sparc64" in (sandbox.unavailable_reason or "")


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_filter_is_a_program_the_kernel_accepts(machine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # What the kernel's checker demands, for the architecture this host cannot run.
    monkeypatch.setattr(platform, "machine", lambda: machine)
    program = sandbox_filter()
    assert program is not None and len(program) % 8 == 0
    instructions = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    assert 0 < len(instructions) <= 4096
    for index, (code, jt, jf, _k) in enumerate(instructions):
        if code & 0x07 == 0x05:  # BPF_JMP: both branches land inside the program
            assert index + 1 + max(jt, jf) < len(instructions), index
    assert instructions[-1][0] & 0x07 == 0x06  # it ends with a return
