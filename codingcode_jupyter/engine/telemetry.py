"""OpenTelemetry metrics and events, as Claude Code exports them, when ``CLAUDE_CODE_ENABLE_TELEMETRY=1``.

Off, it costs a dictionary look-up per call and nothing is imported: the OpenTelemetry SDK
(``pip install 'codingcode-jupyter[telemetry]'``) loads with the first thing recorded while on.

On, the standard variables configure it: ``OTEL_METRICS_EXPORTER`` and ``OTEL_LOGS_EXPORTER``
(``otlp``, ``console``, ``none``; comma-separated), ``OTEL_EXPORTER_OTLP_PROTOCOL`` and its
per-signal forms (``grpc``, ``http/protobuf``, ``http/json``), ``OTEL_EXPORTER_OTLP_ENDPOINT``,
``..._HEADERS`` and the rest as the exporters read them, ``OTEL_METRIC_EXPORT_INTERVAL`` (ms,
60000) and ``OTEL_LOGS_EXPORT_INTERVAL`` (ms, 5000), ``OTEL_RESOURCE_ATTRIBUTES``.

Names are Claude Code's where it has one. Metrics: ``claude_code.session.count``,
``claude_code.token.usage`` (``type``: input, output, cacheRead, cacheCreation; ``model``),
``claude_code.cost.usage`` (USD, ``model``), ``claude_code.lines_of_code.count`` (``type``: added,
removed), ``claude_code.code_edit_tool.decision`` (``tool_name``, ``decision``, ``source``,
``language``); ours besides: ``codingcode.tool.decision`` (every call, by ``layer`` and
``decision``), ``codingcode.command.count``. Events (log records, ``event.name``):
``user_prompt``, ``tool_decision``, ``tool_result``, ``api_request``, ``api_error``. Each carries
``session.id``, ``app.version`` and ``terminal.type`` (``jupyter``).

Nothing of a prompt's text is exported unless ``OTEL_LOG_USER_PROMPTS=1`` (its length always is),
nor a tool's input (commands, paths, file contents) unless ``OTEL_LOG_TOOL_DETAILS=1``.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import threading
import time
from typing import Any

__all__ = ["enabled", "current_session", "session_started", "user_prompt", "api_request", "api_error",
           "tool_decision", "tool_result", "lines_changed", "command_run", "flush", "shutdown"]

log = logging.getLogger(__name__)

# The session a record belongs to, set where a turn starts (the model's requests run inside it).
current_session: contextvars.ContextVar[str | None] = contextvars.ContextVar("codingcode_session", default=None)

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}
_EDIT_TOOLS = {"write_file": "Write", "edit_file": "Edit", "edit_notebook": "NotebookEdit"}
_LANGUAGES = {".py": "Python", ".ipynb": "Jupyter Notebook", ".js": "JavaScript", ".ts": "TypeScript",
              ".md": "Markdown", ".json": "JSON", ".yaml": "YAML", ".yml": "YAML", ".toml": "TOML", ".sh": "Shell",
              ".rs": "Rust", ".go": "Go", ".java": "Java", ".c": "C", ".cpp": "C++", ".r": "R", ".sql": "SQL"}


def _on(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def enabled() -> bool:
    """Telemetry is asked for (``CLAUDE_CODE_ENABLE_TELEMETRY``); the SDK loads on the first record."""
    return _on("CLAUDE_CODE_ENABLE_TELEMETRY")


def _exporters(signal: str) -> list[str]:
    names = os.environ.get(f"OTEL_{signal}_EXPORTER", "otlp" if signal in ("METRICS", "LOGS") else "none")
    return [name.strip().lower() for name in names.split(",") if name.strip() and name.strip().lower() != "none"]


def _protocol(signal: str) -> str:
    return (os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or "http/protobuf").strip().lower()


def _otlp_exporter(signal: str) -> Any:
    """The OTLP exporter of ``signal`` ("METRICS", "LOGS") for the protocol the environment names."""
    protocol = _protocol(signal)
    if protocol == "grpc":
        if signal == "METRICS":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetrics

            return GrpcMetrics()
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs

        return GrpcLogs()
    if protocol == "http/json":
        if signal == "METRICS":
            from opentelemetry.exporter.otlp.json.http.metric_exporter import OTLPMetricExporter as JsonMetrics

            return JsonMetrics()
        from opentelemetry.exporter.otlp.json.http._log_exporter import OTLPLogExporter as JsonLogs

        return JsonLogs()
    if protocol != "http/protobuf":
        log.warning("OTEL_EXPORTER_OTLP_PROTOCOL=%s is not grpc, http/json or http/protobuf; http/protobuf is used",
                    protocol)
    if signal == "METRICS":
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        return OTLPMetricExporter()
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    return OTLPLogExporter()


def _interval(name: str, default_ms: int) -> int:
    try:
        return max(1, int(os.environ.get(name, default_ms)))
    except ValueError:
        return default_ms


def _start() -> dict[str, Any]:
    """The providers and instruments, made once (on the first record while telemetry is on)."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, ConsoleLogRecordExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    version = _version()
    resource = Resource.create({"service.name": "codingcode-jupyter", "service.version": version})
    every = _interval("OTEL_METRIC_EXPORT_INTERVAL", 60000)
    readers = [PeriodicExportingMetricReader(_otlp_exporter("METRICS") if name == "otlp" else ConsoleMetricExporter(),
                                             export_interval_millis=every) for name in _exporters("METRICS")]
    meters = MeterProvider(resource=resource, metric_readers=readers)
    logs = LoggerProvider(resource=resource)
    for name in _exporters("LOGS"):
        exporter = _otlp_exporter("LOGS") if name == "otlp" else ConsoleLogRecordExporter()
        logs.add_log_record_processor(BatchLogRecordProcessor(
            exporter, schedule_delay_millis=_interval("OTEL_LOGS_EXPORT_INTERVAL", 5000)))
    meter = meters.get_meter("com.anthropic.claude_code", version)
    return {
        "meters": meters, "logs": logs, "logger": logs.get_logger("com.anthropic.claude_code.events", version),
        "version": version,
        "session": meter.create_counter("claude_code.session.count", unit="count",
                                        description="Count of sessions started"),
        "tokens": meter.create_counter("claude_code.token.usage", unit="tokens", description="Number of tokens used"),
        "cost": meter.create_counter("claude_code.cost.usage", unit="USD", description="Cost of the session"),
        "lines": meter.create_counter("claude_code.lines_of_code.count", unit="count",
                                      description="Count of lines of code modified"),
        "edit_decision": meter.create_counter("claude_code.code_edit_tool.decision", unit="count",
                                              description="Count of code editing tool permission decisions"),
        "decision": meter.create_counter("codingcode.tool.decision", unit="count",
                                         description="Tool call decisions by approval layer and outcome"),
        "commands": meter.create_counter("codingcode.command.count", unit="count", description="Commands run"),
    }


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("codingcode-jupyter")
    except PackageNotFoundError:
        return "0"


def _state() -> dict[str, Any] | None:
    """The running telemetry, started now if it is on and not yet running; None when off or unusable."""
    if not enabled():
        return None
    with _LOCK:
        if not _STATE:
            try:
                _STATE.update(_start())
                import atexit

                atexit.register(shutdown)  # what the last interval has not sent leaves with the kernel
            except ImportError as error:
                _STATE["broken"] = True
                log.warning("CLAUDE_CODE_ENABLE_TELEMETRY is set but the OpenTelemetry SDK is missing (%s): "
                            "pip install 'codingcode-jupyter[telemetry]'", error)
        return None if "broken" in _STATE else _STATE


def _attributes(session_id: str | None = None, **extra: Any) -> dict[str, Any]:
    state = _STATE
    base = {"session.id": session_id or current_session.get() or "", "app.version": state.get("version", ""),
            "terminal.type": "jupyter"}
    return {**base, **{key: value for key, value in extra.items() if value is not None}}


def _event(name: str, session_id: str | None = None, **fields: Any) -> None:
    state = _STATE
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}Z"
    attributes = _attributes(session_id, **{"event.name": name, "event.timestamp": stamp}, **fields)
    state["logger"].emit(body=f"claude_code.{name}", attributes=attributes, event_name=f"claude_code.{name}")


def session_started(session_id: str) -> None:
    if _state() is None:
        return
    _STATE["session"].add(1, _attributes(session_id))


def user_prompt(session_id: str, prompt: str) -> None:
    if _state() is None:
        return
    # The text only when the environment says so; its length always.
    _event("user_prompt", session_id, prompt_length=len(prompt), prompt=prompt if _on("OTEL_LOG_USER_PROMPTS") else None)


def api_request(model: str, usage: Any, cost_usd: float | None, duration_ms: float) -> None:
    """One Messages API request answered (``usage``: the engine's Usage)."""
    if _state() is None:
        return
    counts = {"input": usage.input_tokens, "output": usage.output_tokens, "cacheRead": usage.cache_read_input_tokens,
              "cacheCreation": usage.cache_creation_input_tokens}
    for kind, count in counts.items():
        if count:
            _STATE["tokens"].add(count, _attributes(type=kind, model=model))
    if cost_usd:
        _STATE["cost"].add(cost_usd, _attributes(model=model))
    _event("api_request", model=model, cost_usd=float(cost_usd or 0.0), duration_ms=round(duration_ms, 1),
           input_tokens=counts["input"], output_tokens=counts["output"], cache_read_tokens=counts["cacheRead"],
           cache_creation_tokens=counts["cacheCreation"])


def api_error(model: str, error: str, status_code: int | None, duration_ms: float, attempt: int = 1) -> None:
    if _state() is None:
        return
    _event("api_error", model=model, error=error[:500], status_code=str(status_code) if status_code else "undefined",
           duration_ms=round(duration_ms, 1), attempt=attempt)


def _source(by: str, reason: str) -> str:
    """Claude Code's ``source`` of a decision, from who decided here."""
    if by == "user":
        return "user_permanent" if "(saved " in reason else "user_temporary"
    if by in ("interrupted",):
        return "user_abort"
    if by in ("timeout", "nobody"):
        return "user_reject"
    return {"hook": "hook", "reviewer": "classifier"}.get(by, "config")


def tool_decision(session_id: str, tool: str, decision: str, layer: str, by: str, reason: str,
                  path: str | None = None) -> None:
    """A call decided (allow or deny, after any question): the event, and the decision counters."""
    if _state() is None:
        return
    accepted = decision == "allow"
    source = _source(by, reason)
    if by == "user" and not accepted:
        source = "user_reject"
    verdict = "accept" if accepted else "reject"
    _STATE["decision"].add(1, _attributes(session_id, tool_name=tool, layer=layer, decision=decision, by=by))
    if tool in _EDIT_TOOLS:
        language = _LANGUAGES.get(os.path.splitext(path or "")[1].lower(), "unknown")
        _STATE["edit_decision"].add(1, _attributes(session_id, tool_name=_EDIT_TOOLS[tool], decision=verdict,
                                                   source=source, language=language))
    _event("tool_decision", session_id, tool_name=tool, decision=verdict, source=source, layer=layer)


def tool_result(session_id: str, tool: str, outcome: str, decision: str, duration_ms: float,
                tool_input: dict[str, Any] | None = None) -> None:
    """A decided call's outcome (ok, error, denied, interrupted)."""
    if _state() is None:
        return
    fields: dict[str, Any] = {"tool_name": tool, "success": "true" if outcome == "ok" else "false",
                              "duration_ms": round(duration_ms, 1), "decision": "accept" if decision == "allow" else
                              "reject", "outcome": outcome}
    if outcome != "ok":
        fields["error"] = outcome
    if tool_input is not None and _on("OTEL_LOG_TOOL_DETAILS"):
        fields["tool_parameters"] = json.dumps(tool_input, default=str)[:4000]
    _event("tool_result", session_id, **fields)


def lines_changed(diff: str) -> None:
    """The lines a unified diff adds and removes (an edit the agent made)."""
    if not diff or _state() is None:
        return
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    if added:
        _STATE["lines"].add(added, _attributes(type="added"))
    if removed:
        _STATE["lines"].add(removed, _attributes(type="removed"))


def command_run(sandboxed: bool) -> None:
    if _state() is None:
        return
    _STATE["commands"].add(1, _attributes(sandboxed=str(sandboxed).lower()))


def flush(timeout_ms: int = 10000) -> None:
    """Export what is recorded now (tests; the end of a kernel); nothing when off."""
    state = _STATE
    if "meters" in state:
        state["logs"].force_flush(timeout_ms)
        state["meters"].force_flush(timeout_ms)


def shutdown() -> None:
    """Flush and stop the exporters; telemetry starts afresh on the next record (tests change exporters)."""
    with _LOCK:
        state = dict(_STATE)
        _STATE.clear()
    if "meters" in state:
        state["logs"].shutdown()
        state["meters"].shutdown()
