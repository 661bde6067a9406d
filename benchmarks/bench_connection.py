"""The connection to the API, over TLS with a round trip as a person's network has one.

The local Messages API server is served over TLS (a certificate made for 127.0.0.1 with the
``openssl`` command, trusted through SSL_CERT_FILE) behind a relay on loopback that holds every
chunk of bytes, in each direction, for half of a 40 ms round trip: a TLS handshake then costs
what it costs across a network (the TCP handshake itself is not delayed, so a new connection
costs one round trip less than it would). Turns go through the real SDK with the engine's
model class, in this process; the figure is a turn's start → its first text.

Two rows, each side by side with what a turn does without the change it measures: a turn
after a person's 6 s pause with the engine's shared client (idle connections kept 300 s)
against the same with a client as the SDK makes it (the HTTP client closes them after 5 s);
and a first turn whose connection was opened ahead (``clients.preconnect()``, as the notebook
does while the person writes the first cell) against a first turn that opens its own. A turn
sent right after another on a kept connection is reported beside them: the floor.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from common import Row, spread

from codingcode_jupyter.engine.models import clients
from codingcode_jupyter.engine.models.anthropic import AnthropicModel
from codingcode_jupyter.engine.models.base import ModelRequest
from tests.fakes.anthropic_server import FakeAnthropic, Reply, text

ROUND_TRIP_S = 0.040
PAUSE_S = 6.0
_REQUEST = ModelRequest(model="claude-test", max_tokens=16, messages=[{"role": "user", "content": "hi"}])


def _certificate(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    return cert, key


class _DelayRelay:
    """Loopback TCP relay that delivers each chunk half a round trip after it arrived."""

    def __init__(self, target_port: int, round_trip: float) -> None:
        self.target_port, self.one_way = target_port, round_trip / 2
        self.loop = asyncio.new_event_loop()
        self.port = 0
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        ready.wait(10)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def take() -> None:
            while True:
                data = await reader.read(65536)
                queue.put_nowait((self.loop.time() + self.one_way, data))
                if not data:
                    return

        async def give() -> None:
            while True:
                due, data = await queue.get()
                await asyncio.sleep(max(0.0, due - self.loop.time()))
                if not data:
                    writer.close()
                    return
                writer.write(data)
                await writer.drain()

        try:
            await asyncio.gather(take(), give())
        except (ConnectionError, OSError):
            writer.close()

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        await asyncio.gather(self._pipe(client_reader, server_writer), self._pipe(server_reader, client_writer),
                             return_exceptions=True)

    def stop(self) -> None:
        async def end() -> None:
            self.loop.set_exception_handler(lambda loop, context: None)  # the relayed connections, cancelled
            tasks = [task for task in asyncio.all_tasks(self.loop) if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.loop.stop()

        asyncio.run_coroutine_threadsafe(end(), self.loop)
        self._thread.join(10)
        self.loop.close()


async def _first_text(model: AnthropicModel) -> float:
    start = time.perf_counter()
    first: list[float] = []

    def on_text(_: str) -> None:
        if not first:
            first.append(time.perf_counter())

    await model.stream(_REQUEST, on_text)
    return first[0] - start


async def _pair(model: AnthropicModel, pause: float) -> tuple[float, float]:
    """(a turn right after another, a turn after ``pause``) on one client."""
    await _first_text(model)
    back_to_back = await _first_text(model)
    await asyncio.sleep(pause)
    return back_to_back, await _first_text(model)


async def _after_preconnect() -> float:
    clients.forget()
    await clients.preconnect()
    return await _first_text(AnthropicModel("claude-test"))


async def _cold_first() -> float:
    clients.forget()
    return await _first_text(AnthropicModel("claude-test"))


def measure(quick: bool) -> list[Row]:
    from anthropic import AsyncAnthropic

    repeat = 1 if quick else 5
    saved = {name: os.environ.get(name) for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "SSL_CERT_FILE")}
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = _certificate(Path(tmp))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        with FakeAnthropic(default=Reply([text("first words of the answer")]), tls=context) as fake:
            relay = _DelayRelay(int(fake.base_url.rsplit(":", 1)[1]), ROUND_TRIP_S)
            os.environ.update({"ANTHROPIC_BASE_URL": f"https://127.0.0.1:{relay.port}", "ANTHROPIC_API_KEY": "test-key",
                               "SSL_CERT_FILE": str(cert)})
            try:
                kept, kept_base, default, first, cold = [], [], [], [], []
                for _ in range(repeat):
                    clients.forget()
                    # The engine's model as a session makes it: the shared client, the SDK's retries.
                    back, after = asyncio.run(_pair(AnthropicModel("claude-test"), PAUSE_S))
                    kept_base.append(back)
                    kept.append(after)

                    async def sdk_default() -> tuple[float, float]:
                        async with AsyncAnthropic() as client:
                            return await _pair(AnthropicModel("claude-test", client=client), PAUSE_S)

                    default.append(asyncio.run(sdk_default())[1])
                    first.append(asyncio.run(_after_preconnect()))
                    cold.append(asyncio.run(_cold_first()))
            finally:
                relay.stop()
                clients.forget()
                for name, value in saved.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value
    method = __doc__.strip().replace("\n", " ")
    link = f"TLS with a {ROUND_TRIP_S * 1000:.0f} ms round trip"

    def saved(ours: list[float], baseline: list[float]) -> tuple[str, bool]:
        # A new connection costs the TLS handshake's round trip here (the TCP one is not delayed).
        gain = statistics.median(baseline) - statistics.median(ours)
        ratio = statistics.median(ours) / statistics.median(baseline)
        return f"-{gain * 1000:.1f} ms ({ratio:.2f}x)", gain >= 0.9 * ROUND_TRIP_S

    pause_result, pause_met = saved(kept, default)
    first_result, first_met = saved(first, cold)
    target = f"saves the handshake's round trip (>= {0.9 * ROUND_TRIP_S * 1000:.0f} ms)"
    return [
        Row(
            name=f"a turn after a {PAUSE_S:g} s pause, {link}",
            ours=f"{spread(kept)} on the kept connection (a turn right after another: {spread(kept_base)})",
            baseline=f"{spread(default)} a client as the SDK makes it (idle connections closed after 5 s)",
            result=pause_result, target=target, met=pause_met, method=method,
        ),
        Row(
            name=f"the first turn, its connection opened ahead, {link}",
            ours=f"{spread(first)} after preconnect (a turn right after another: {spread(kept_base)})",
            baseline=f"{spread(cold)} a first turn that opens its own connection",
            result=first_result, target=target, met=first_met, method=method,
        ),
    ]
