"""A loopback OTLP receiver: what an OpenTelemetry collector would be told, decoded.

Over HTTP it takes ``POST /v1/metrics`` and ``/v1/logs`` as protobuf (``application/x-protobuf``)
or JSON (``application/json``), decoding both into the OTLP protobuf messages of
``opentelemetry-proto``; over gRPC (``grpc=True``) it serves the collector's MetricsService and
LogsService. Tests read back the data points (:meth:`points`) and the log records (:meth:`events`),
and which encodings arrived (``encodings``). It listens on 127.0.0.1 only.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2

__all__ = ["OtlpReceiver", "Point", "Event"]


@dataclass(frozen=True)
class Point:
    """One data point of a sum metric."""

    name: str
    value: float
    attributes: dict[str, Any]
    unit: str = ""


@dataclass(frozen=True)
class Event:
    body: str
    attributes: dict[str, Any]


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


@dataclass
class OtlpReceiver:
    grpc: bool = False
    metrics: list[Any] = field(default_factory=list)
    logs: list[Any] = field(default_factory=list)
    encodings: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: Any = None

    # -- what arrived ---------------------------------------------------------------------

    def points(self, name: str | None = None) -> list[Point]:
        with self._lock:
            requests = list(self.metrics)
        out: list[Point] = []
        for request in requests:
            for resource in request.resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        if name is not None and metric.name != name:
                            continue
                        data = metric.sum if metric.HasField("sum") else metric.gauge
                        for point in data.data_points:
                            number = point.as_double if point.HasField("as_double") else point.as_int
                            out.append(Point(metric.name, number, _attributes(point.attributes), metric.unit))
        return out

    def total(self, name: str, **match: Any) -> float:
        """The sum of ``name``'s points whose attributes include ``match`` (cumulative: the last per series)."""
        last: dict[tuple[Any, ...], float] = {}
        for point in self.points(name):
            if all(point.attributes.get(key) == value for key, value in match.items()):
                last[tuple(sorted(point.attributes.items()))] = point.value
        return sum(last.values())

    def events(self, name: str | None = None) -> list[Event]:
        with self._lock:
            requests = list(self.logs)
        out = []
        for request in requests:
            for resource in request.resource_logs:
                for scope in resource.scope_logs:
                    for record in scope.log_records:
                        event = Event(str(_value(record.body)), _attributes(record.attributes))
                        if name is None or event.attributes.get("event.name") == name:
                            out.append(event)
        return out

    def resource(self) -> dict[str, Any]:
        with self._lock:
            first = (self.metrics or self.logs)[0]
        resources = getattr(first, "resource_metrics", None) or first.resource_logs
        return _attributes(resources[0].resource.attributes)

    def _take(self, kind: str, message: Any, encoding: str) -> None:
        with self._lock:
            (self.metrics if kind == "metrics" else self.logs).append(message)
            self.encodings.append(encoding)

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> "OtlpReceiver":
        if self.grpc:
            return self._start_grpc()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                kinds = {"/v1/metrics": ("metrics", metrics_service_pb2.ExportMetricsServiceRequest),
                         "/v1/logs": ("logs", logs_service_pb2.ExportLogsServiceRequest)}
                if self.path not in kinds:
                    self.send_response(404)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                kind, message_type = kinds[self.path]
                message = message_type()
                json_body = "json" in (self.headers.get("content-type") or "")
                if json_body:
                    json_format.Parse(body, message, ignore_unknown_fields=True)
                else:
                    message.ParseFromString(body)
                receiver._take(kind, message, "json" if json_body else "protobuf")
                self.send_response(200)
                content_type = "application/json" if json_body else "application/x-protobuf"
                reply = b"{}" if json_body else b""
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        return self

    def _start_grpc(self) -> "OtlpReceiver":
        from concurrent import futures

        import grpc
        from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc

        receiver = self

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802
                receiver._take("metrics", request, "grpc")
                return metrics_service_pb2.ExportMetricsServiceResponse()

        class Logs(logs_service_pb2_grpc.LogsServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802
                receiver._take("logs", request, "grpc")
                return logs_service_pb2.ExportLogsServiceResponse()

        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), server)
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(Logs(), server)
        self._port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        if self.grpc:
            self._server.stop(grace=None)
        else:
            self._server.shutdown()
            self._server.server_close()

    @property
    def endpoint(self) -> str:
        if self.grpc:
            return f"http://127.0.0.1:{self._port}"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "OtlpReceiver":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
