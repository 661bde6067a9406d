"""A Landlock launcher kept warm: the commands' start without an interpreter start each.

The one-shot launcher (``python -I -S -c LAUNCHER_SOURCE``) spends most of a command's start-up
starting Python and applying the plan's hundreds of rules. The kernel cannot fork a launcher
itself (it has threads; a fork of it may hold a lock another thread took), so it keeps one small
single-threaded Python process, started once per sandbox, that forks a launcher per command.

The kernel sends each command over a socket pair only the two of them hold: the launcher's spec
(sandbox/landlock.py), the command, its directory and the caller's environment, with the
command's stdin, stdout and stderr and a status socket passed as descriptors. The forked
launcher does exactly what the one-shot one does (the same functions run: no second copy of the
confinement), in a session of its own, so the kernel kills its process group as before. It
writes its pid on the status socket, then the command's wait status once it and all it left are
gone; a launcher that dies without a word reads as killed.

The plan's rules become a Landlock ruleset once, in the warm process, and each launcher forked
while the plan is unchanged restricts itself with it: one system call instead of hundreds. A
plan is reused only while nothing it was built from changed (``CommandSandbox._reused``: every
directory of the project unchanged), so the inodes the ruleset holds are still the ones its
paths name. A command behind the network proxy has a port rule of its own and builds its ruleset
in its launcher as before.

The warm process ends when the kernel closes its end (the sandbox closed, the kernel gone). If it
cannot start or dies, the command runs through the one-shot launcher instead.
"""

from __future__ import annotations

import asyncio
import marshal
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
from array import array
from dataclasses import dataclass

from ..deadline import within
from .landlock import LAUNCHER_CORE

__all__ = ["WarmLauncher", "WarmRequest", "RemoteProcess", "SERVER_SOURCE"]

_HEADER = struct.Struct("=Q")
# How long the warm process may take to take a request and answer with the launcher's pid: a
# stopped or wedged one (before Landlock ABI 6 a command can SIGSTOP it) must not hold the kernel.
_ANSWER_S = 10.0
# Rulesets the warm process keeps (a file descriptor each), the oldest closed first; the kernel
# keeps the same list, so it sends a plan's rules only when the warm process lacks them.
_RULESETS_KEPT = 8

# Runs as `python -I -S -c SOURCE CONTROL_FD RULESETS_KEPT`; single-threaded, so forking it is safe.
SERVER_SOURCE = LAUNCHER_CORE + r"""
import _socket, marshal
import warnings  # os.execvpe imports it: once here rather than in every command's start
KEPT = int(sys.argv[2])
control = _socket.socket(fileno=int(sys.argv[1]))
hard_die = die
class Refused(Exception): pass
def soft_die(what):
    raise Refused("%s failed: %s" % (what, os.strerror(_ctypes.get_errno())))
def recv_exact(n, head=b""):
    parts = [head]
    n -= len(head)
    while n > 0:
        chunk = control.recv(min(n, 1 << 20))
        if not chunk: os._exit(0)
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)
def close_except(keep):
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try: os.close(fd)
            except OSError: pass
def launch(fds, token, spec, cwd, argv, environ, ruleset):
    # The forked launcher: the one-shot launcher's steps, reporting on the status socket.
    global die
    die = hard_die
    stdin, stdout, stderr, status = fds
    os.setsid()
    for target, fd in enumerate((stdin, stdout, stderr)): os.dup2(fd, target)
    close_except({status, ruleset})
    os.write(status, b"%d\n" % os.getpid())
    child, env, argv, rules, handled, filt, port = split_off(spec, environ, argv)
    if child:
        if ruleset is not None: os.close(ruleset)
        def stopped(signum):
            try: os.write(status, b"x%d\n" % (128 + signum))
            except OSError: pass  # the kernel's end is gone (it ended): nobody to tell
            os._exit(128 + signum)
        os.write(status, b"s%d\n" % supervise(child, stopped))
        os._exit(0)
    os.close(status)
    confine(ruleset if ruleset is not None else build_ruleset(handled, rules, port), filt)
    run_command(cwd, argv, env)
signal.signal(signal.SIGINT, signal.SIG_IGN)
rulesets, order = {}, []
while True:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0: pass
    except ChildProcessError:
        pass
    head, ancillary, _flags, _address = control.recvmsg(8, _socket.CMSG_SPACE(4 * 4))
    if not head: os._exit(0)
    fds = []
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += struct.unpack("=%di" % (len(data) // 4), data[: len(data) - len(data) % 4])
    size = struct.unpack("=Q", recv_exact(8, head))[0]
    payload = recv_exact(size)
    try:
        if len(fds) != 4: raise Refused("expected 4 descriptors, got %d" % len(fds))
        token, spec, rules, cwd, argv, environ = marshal.loads(payload)
        ruleset = None
        if token and "\nX\t" not in spec:
            ruleset = rulesets.get(token)
            if ruleset is None:
                if rules is None: raise Refused("plan %s is not known here" % token)
                die = soft_die
                try:
                    ruleset = build_ruleset(parse(spec)[4], parse(rules)[3], None)
                finally:
                    die = hard_die
                rulesets[token] = ruleset
                order.append(token)
                while len(order) > KEPT:
                    os.close(rulesets.pop(order.pop(0)))
        elif rules:
            spec = spec + "\n" + rules
        if os.fork() == 0:
            launch(fds, token, spec, cwd, argv, environ, ruleset)
            os._exit(127)
    except Exception as error:
        try: os.write(fds[3], ("e%s\n" % error).encode())
        except Exception: pass
    for fd in fds:
        try: os.close(fd)
        except OSError: pass
"""


@dataclass(frozen=True)
class WarmRequest:
    """One command for the warm launcher: the spec the launcher reads, the command and where it runs.
    ``token`` names the plan the rules came from (None: build the ruleset for this command alone)."""

    token: str | None
    spec: str
    cwd: str
    argv: list[str]
    env: dict[str, str]

    def split(self) -> tuple[str, str]:
        """The spec without its rules, and the rules (sent only to a warm process that lacks them)."""
        lines = self.spec.split("\n")
        return ("\n".join(line for line in lines if not line.startswith("R\t")),
                "\n".join(line for line in lines if line.startswith("R\t")))


class RemoteProcess:
    """A launcher forked by the warm process, seen as run_process sees an asyncio subprocess."""

    def __init__(self, pid: int, status: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 stdout: asyncio.StreamReader, stderr: asyncio.StreamReader,
                 stdin: asyncio.StreamWriter | None) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdout = stdout
        self.stderr = stderr
        self.stdin = stdin
        self._status_writer = writer
        self._ended = asyncio.Event()
        self._watch = asyncio.ensure_future(self._read_status(status))

    async def _read_status(self, status: asyncio.StreamReader) -> None:
        try:
            line = await status.readline()
        except (OSError, asyncio.IncompleteReadError):
            line = b""
        finally:
            self._status_writer.close()
        if line[:1] == b"s":
            self.returncode = os.waitstatus_to_exitcode(int(line[1:]))
        elif line[:1] == b"x":
            self.returncode = int(line[1:])
        else:
            # The launcher ended without reporting: only SIGKILL (or the warm process's death) does that.
            self.returncode = -signal.SIGKILL
        self._ended.set()

    async def wait(self) -> int:
        await self._ended.wait()
        assert self.returncode is not None
        return self.returncode


class WarmLauncher:
    """The kernel's end of the warm launcher process (see the module docstring)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._owner = 0
        # The tokens of the plans whose rulesets the warm process holds, oldest first.
        self._known: list[str] = []
        self._lock = threading.Lock()
        self.failed: str | None = None

    def _channel(self) -> socket.socket:
        if (self._control is not None and self._owner == os.getpid() and self._proc is not None
                and self._proc.poll() is None):
            return self._control
        self._drop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._proc = subprocess.Popen(
                [os.path.realpath(sys.executable), "-I", "-S", "-c", SERVER_SOURCE, str(theirs.fileno()),
                 str(_RULESETS_KEPT)],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                env={}, start_new_session=True,
            )  # fmt: skip
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(_ANSWER_S)
        self._control, self._owner = ours, os.getpid()
        return ours

    def _send(self, request: WarmRequest, fds: list[int]) -> None:
        head, rules = request.split()
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array("i", fds))]
        with self._lock:  # two commands' messages must not interleave
            for attempt in (1, 2):
                control = self._channel()
                token = request.token
                known = token is not None and token in self._known
                payload = marshal.dumps((token, head, None if known else rules, request.cwd, request.argv, request.env))
                try:
                    control.sendmsg([_HEADER.pack(len(payload))], ancillary)
                    control.sendall(payload)
                except OSError:
                    self._drop()  # died between commands: once more with a fresh one
                    if attempt == 2:
                        raise
                    continue
                if token is not None and not known and "\nX\t" not in head:
                    self._known.append(token)
                    del self._known[:-_RULESETS_KEPT]
                return

    async def start(self, request: WarmRequest, with_stdin: bool) -> RemoteProcess | None:
        """The launcher started for ``request``; None when the warm process cannot serve (the
        caller then starts the one-shot launcher)."""
        if self.failed is not None:
            return None
        loop = asyncio.get_running_loop()
        opened: list[int] = []
        ours: list[int] = []
        try:
            stdin_read, stdin_write = os.pipe() if with_stdin else (os.open(os.devnull, os.O_RDONLY), -1)
            out_read, out_write = os.pipe()
            err_read, err_write = os.pipe()
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            opened = [stdin_read, out_write, err_write, theirs.detach()]
            ours = [fd for fd in (stdin_write, out_read, err_read) if fd >= 0]
            try:
                self._send(request, opened)
            except OSError as error:
                self.failed = f"the warm launcher could not be reached: {error}"
                mine.close()
                for fd in ours:
                    os.close(fd)
                return None
        finally:
            for fd in opened:
                os.close(fd)
        status, writer = await asyncio.open_unix_connection(sock=mine)
        stdout = await _reader(loop, out_read)
        stderr = await _reader(loop, err_read)
        stdin = await _writer(loop, stdin_write) if with_stdin else None
        try:
            first = await within(status.readline(), _ANSWER_S)
        except asyncio.TimeoutError:
            first = b""
            self.close()  # wedged: the next command gets a fresh one
        if not first[:1].isdigit():
            # Nothing started (the warm process refused or died): the one-shot launcher runs it, and
            # says what goes wrong as it always did.
            with self._lock:
                if request.token in self._known:
                    self._known.remove(request.token)
            writer.close()
            for stream in (stdout, stderr):
                stream.feed_eof()
            if stdin is not None:
                stdin.close()
            return None
        return RemoteProcess(int(first), status, writer, stdout, stderr, stdin)

    def _drop(self) -> None:
        self._known = []
        if self._control is not None:
            if self._owner == os.getpid():
                self._control.close()
            self._control = None
        proc, self._proc = self._proc, None
        if proc is not None and self._owner == os.getpid():
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def close(self) -> None:
        """Closing its end ends the warm process; launchers it forked run on until their command ends."""
        with self._lock:
            self._drop()


async def _reader(loop: asyncio.AbstractEventLoop, fd: int) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(fd, "rb", 0))
    return reader


async def _writer(loop: asyncio.AbstractEventLoop, fd: int) -> asyncio.StreamWriter:
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop), os.fdopen(fd, "wb", 0)
    )
    return asyncio.StreamWriter(transport, protocol, None, loop)
