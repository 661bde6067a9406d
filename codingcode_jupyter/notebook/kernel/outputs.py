"""Each cell's outputs as the person saw them, kept per execution count within a memory budget.

Recorded where the kernel publishes, without changing what is published:

- display_data / update_display_data / clear_output: the shell's display publisher
  (``shell.display_pub.publish`` and ``clear_output``, wrapped on the instance, so any
  thread's displays are seen; a ``%%capture`` swaps in its own publisher, and what it
  swallows the person never saw, so it is not recorded either);
- execute_result: the display hook's ``log_output(format_dict)``, which IPython calls
  with the bundle it is about to send, on ipykernel 6 and 7 alike;
- stream text: ipykernel's ``OutStream`` message hooks. ``OutStream`` sends from its IO
  thread and keeps its hooks per thread, so the hook is registered on that thread (and on
  the calling one, for the path where the IO thread is gone);
- errors: the shell's ``post_run_cell`` event, with the traceback as Python prints it.

A cell is opened by ``pre_run_cell`` and given its execution count by ``post_run_cell``
(IPython 8 and 9 differ on when the count moves, the result carries the true one). An
output is filed under the cell whose request it answers (its parent message id), so a
thread that prints after its cell finished still lands in that cell. The agent's own
cells keep only their source: their outputs are the agent's widgets, not the person's work.

Memory: images are kept decoded (bytes), text clipped; the oldest cells are dropped first
once there are more than ``max_cells`` or more than ``max_bytes`` kept, and a single output
larger than a quarter of the budget is replaced by a note of what it was.
"""

from __future__ import annotations

import base64
import binascii
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterator

from traitlets import Int, observe
from traitlets.config import Configurable

from .errors import AGENT_CELL, format_exception

__all__ = [
    "install_recorders","CellRecord", "Output", "OutputHistory", "install_output_recorder", "output_history"]

# Binary types arrive base64-encoded (ipykernel encodes them before sending) or as bytes.
BINARY_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
# What is worth keeping of a bundle; anything else is remembered by name only.
KEPT_TYPES = BINARY_TYPES + (
    "image/svg+xml", "text/html", "text/markdown", "text/latex", "text/plain", "application/json",
)
# Per text representation (HTML of a huge table, a long repr): what a reader could use.
MAX_TEXT_CHARS = 400_000
# Stream text per cell: its start and its end are kept, the middle counted.
STREAM_HEAD = 20_000
STREAM_TAIL = 40_000


@dataclass
class Output:
    """One output of a cell: its kind, its bundle (mime type -> str or bytes) and what was cut."""

    kind: str  # "stream", "execute_result", "display_data", "error"
    data: dict[str, Any] = field(default_factory=dict)
    name: str = ""  # the stream's name (stdout/stderr) or the error's type
    display_id: str | None = None
    # Mime types the bundle had that are not kept (widgets, javascript, vendor types).
    other_types: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    # Stream text past the head: the newest part, and how many characters between were dropped.
    tail: str = ""
    dropped: int = 0

    @property
    def size(self) -> int:
        total = len(self.tail)
        for value in self.data.values():
            total += len(value)
        return total

    @property
    def text(self) -> str:
        """A stream's text (head, the cut, tail) or an error's traceback."""
        head = str(self.data.get("text/plain", ""))
        if not self.dropped:
            return head + self.tail
        return f"{head}\n[... {self.dropped} characters of output cut ...]\n{self.tail}"

    def append_stream(self, text: str) -> None:
        head = self.data.get("text/plain", "")
        if len(head) < STREAM_HEAD and not self.tail:
            room = STREAM_HEAD - len(head)
            self.data["text/plain"] = head + text[:room]
            text = text[room:]
        if text:
            tail = self.tail + text
            if len(tail) > STREAM_TAIL:
                self.dropped += len(tail) - STREAM_TAIL
                tail = tail[-STREAM_TAIL:]
            self.tail = tail

    def kinds(self) -> list[str]:
        """What a person would call this output: 'image/png', 'table', 'text', 'error'..."""
        if self.kind == "stream":
            return [self.name or "stream"]
        if self.kind == "error":
            return [f"error {self.name}".strip()]
        found = [mime for mime in self.data if mime.startswith("image/")]
        found += [note.split(" ", 1)[0] for note in self.notes if note.startswith("image/")]
        if not found:
            if "text/html" in self.data:
                found.append("table" if "<table" in self.data["text/html"][:200_000] else "html")
            elif "text/markdown" in self.data:
                found.append("markdown")
            elif "application/json" in self.data:
                found.append("json")
            elif "text/plain" in self.data:
                found.append("text")
        if any("widget" in mime for mime in self.other_types):
            found.append("widget")
        return found or list(self.other_types[:1])


@dataclass
class CellRecord:
    """One run of a cell: its source, where it came from, and its outputs in order."""

    source: str
    execution_count: int | None = None
    cell_id: str | None = None
    msg_id: str | None = None
    agent: bool = False
    started: float = field(default_factory=time.time)
    finished: float | None = None
    outputs: list[Output] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # clear_output(wait=True): the outputs go when the next one arrives.
    clear_pending: bool = False

    @property
    def size(self) -> int:
        return len(self.source) + sum(output.size for output in self.outputs)

    def kinds(self) -> list[str]:
        """The kinds of its outputs, each once, in the order they first appeared."""
        seen: list[str] = []
        for output in self.outputs:
            for kind in output.kinds():
                if kind not in seen:
                    seen.append(kind)
        return seen


def _decode(mime: str, value: Any) -> Any:
    if mime in BINARY_TYPES:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        if isinstance(value, str):
            try:
                return base64.b64decode(value, validate=False)
            except (binascii.Error, ValueError):
                return None
        return None
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "replace")
    if mime == "application/json" and not isinstance(value, str):
        import json

        try:
            value = json.dumps(value, ensure_ascii=False, default=str, indent=1)
        except (TypeError, ValueError):
            value = repr(value)
    if isinstance(value, list):  # nbformat's multi-line strings
        value = "".join(str(part) for part in value)
    if not isinstance(value, str):
        return None
    if len(value) > MAX_TEXT_CHARS:
        value = value[:MAX_TEXT_CHARS] + f"\n[... {len(value) - MAX_TEXT_CHARS} more characters not kept]"
    return value


def bundle_output(kind: str, data: Any, transient: Any = None, max_item: int | None = None) -> Output:
    """An Output from a mime bundle, images decoded, text clipped, unknown types named."""
    output = Output(kind)
    if isinstance(transient, dict) and isinstance(transient.get("display_id"), str):
        output.display_id = transient["display_id"]
    others = []
    for mime, value in (data or {}).items() if isinstance(data, dict) else ():
        if mime not in KEPT_TYPES:
            others.append(str(mime))
            continue
        decoded = _decode(mime, value)
        if decoded is None:
            continue
        if max_item is not None and len(decoded) > max_item:
            output.notes.append(f"{mime} of {len(decoded) / 1e6:.1f} MB not kept (over the output budget)")
            continue
        output.data[mime] = decoded
    output.other_types = tuple(others)
    return output


class OutputHistory(Configurable):
    """The recorded cells of one shell, oldest first, within ``max_cells`` and ``max_bytes``."""

    max_cells = Int(200, config=True, help="How many recent cells' outputs the agent can read back.")
    max_bytes = Int(64 * 1024 * 1024, config=True, help="Memory kept for recorded outputs, in bytes; oldest cells go first.")

    def __init__(self, **kwargs: Any) -> None:
        # The state first: setting the budget traits below already trims.
        self._lock = threading.RLock()
        self._cells: "OrderedDict[int, CellRecord]" = OrderedDict()  # id(record) -> record, oldest first
        self._by_count: dict[int, CellRecord] = {}
        self._by_msg: dict[str, CellRecord] = {}
        self._size = 0
        self.current: CellRecord | None = None
        self.dropped_cells = 0
        # The first execution count recorded: earlier cells ran before the recorder.
        self.first_count: int | None = None
        # Whether ipykernel's stream hooks feed this recorder; else streams come from IPython's history.
        self.streams_hooked = False
        super().__init__(**kwargs)

    # -- reading ------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Bytes (characters for text) kept, as the budget counts them."""
        return self._size

    def cells(self) -> list[CellRecord]:
        with self._lock:
            return list(self._cells.values())

    def get(self, execution_count: int) -> CellRecord | None:
        with self._lock:
            return self._by_count.get(execution_count)

    def last(self, *, error: bool = False) -> CellRecord | None:
        """The newest finished cell of the person's (one with an error, if asked)."""
        with self._lock:
            for record in reversed(self._cells.values()):
                if record.agent or record.finished is None:
                    continue
                if not error or any(o.kind == "error" for o in record.outputs):
                    return record
        return None

    def __iter__(self) -> Iterator[CellRecord]:
        return iter(self.cells())

    # -- recording ----------------------------------------------------------------------

    def begin(self, source: str, *, cell_id: str | None = None, msg_id: str | None = None) -> CellRecord:
        record = CellRecord(source=source, cell_id=cell_id, msg_id=msg_id, agent=bool(AGENT_CELL.match(source)))
        with self._lock:
            self._cells[id(record)] = record
            self._size += record.size
            if msg_id:
                self._by_msg[msg_id] = record
            self.current = record
            self._trim()
        return record

    def finish(self, record: CellRecord, execution_count: int | None, error: BaseException | None = None) -> None:
        with self._lock:
            record.finished = time.time()
            if execution_count is not None and id(record) in self._cells:
                record.execution_count = execution_count
                self._by_count[execution_count] = record
                if self.first_count is None:
                    self.first_count = execution_count
            if error is not None and not record.agent:
                text = format_exception(error)
                self._add(record, Output("error", {"text/plain": text}, name=type(error).__name__))
            if self.current is record:
                self.current = None

    def record_for(self, msg_id: str | None) -> CellRecord | None:
        with self._lock:
            if msg_id and msg_id in self._by_msg:
                return self._by_msg[msg_id]
            return self.current

    def add(self, output: Output, msg_id: str | None = None) -> None:
        with self._lock:
            record = self.record_for(msg_id)
            if record is None or record.agent:
                return
            self._add(record, output)

    def add_stream(self, name: str, text: str, msg_id: str | None = None) -> None:
        if not text:
            return
        with self._lock:
            record = self.record_for(msg_id)
            if record is None or record.agent:
                return
            self._take_pending_clear(record)
            last = record.outputs[-1] if record.outputs else None
            if last is None or last.kind != "stream" or last.name != name:
                last = Output("stream", {"text/plain": ""}, name=name)
                record.outputs.append(last)
            before = last.size
            last.append_stream(text)
            self._size += last.size - before
            self._trim()

    def update_display(self, display_id: str, output: Output) -> None:
        """update_display_data: the output with that display id changes wherever it is."""
        with self._lock:
            for record in reversed(self._cells.values()):
                for index, old in enumerate(record.outputs):
                    if old.display_id == display_id:
                        output.kind = old.kind
                        output.display_id = display_id
                        record.outputs[index] = output
                        self._size += output.size - old.size
                        self._trim()
                        return

    def clear(self, msg_id: str | None = None, wait: bool = False) -> None:
        with self._lock:
            record = self.record_for(msg_id)
            if record is None:
                return
            if wait:
                record.clear_pending = True
            else:
                self._clear(record)

    def _take_pending_clear(self, record: CellRecord) -> None:
        if record.clear_pending:
            record.clear_pending = False
            self._clear(record)

    def _clear(self, record: CellRecord) -> None:
        self._size -= sum(o.size for o in record.outputs)
        record.outputs.clear()

    def _add(self, record: CellRecord, output: Output) -> None:
        self._take_pending_clear(record)
        record.outputs.append(output)
        self._size += output.size
        self._trim()

    def max_item(self) -> int:
        """The largest single output kept: a quarter of the budget."""
        return max(1, self.max_bytes // 4)

    # -- the budget ---------------------------------------------------------------------

    @observe("max_cells", "max_bytes")
    def _budget_changed(self, change: Any) -> None:
        with self._lock:
            self._trim()

    def _trim(self) -> None:
        while self._cells and (len(self._cells) > self.max_cells or self._size > self.max_bytes):
            oldest = next(iter(self._cells.values()))
            if oldest is self.current and len(self._cells) == 1:
                self._shed(oldest)
                return
            self._drop(oldest)

    def _drop(self, record: CellRecord) -> None:
        del self._cells[id(record)]
        self._size -= record.size
        self.dropped_cells += 1
        if record.execution_count is not None and self._by_count.get(record.execution_count) is record:
            del self._by_count[record.execution_count]
        if record.msg_id and self._by_msg.get(record.msg_id) is record:
            del self._by_msg[record.msg_id]
        if self.current is record:
            self.current = None

    def _shed(self, record: CellRecord) -> None:
        """The running cell alone is over budget: its oldest outputs give way to notes."""
        for output in record.outputs:
            if self._size <= self.max_bytes:
                return
            if output.size:
                before = output.size
                kinds = ", ".join(output.kinds())
                output.data = {}
                output.tail = ""
                output.notes.append(f"{kinds} of {before / 1e6:.1f} MB dropped (over the memory budget)")
                self._size -= before


# -- installing the hooks ---------------------------------------------------------------

_HISTORIES: "weakref.WeakKeyDictionary[Any, OutputHistory]" = weakref.WeakKeyDictionary()


def output_history(shell: Any) -> OutputHistory | None:
    """The recorder installed on ``shell``, if any."""
    return _HISTORIES.get(shell) if shell is not None else None


def _parent_msg_id(obj: Any) -> str | None:
    header = getattr(obj, "parent_header", None)
    if isinstance(header, dict):
        msg_id = header.get("msg_id") or (header.get("header") or {}).get("msg_id")
        return msg_id if isinstance(msg_id, str) and msg_id else None
    return None


def _cell_msg_id(shell: Any) -> str | None:
    get_parent = getattr(shell, "get_parent", None)
    try:
        parent = get_parent() if callable(get_parent) else getattr(shell, "parent_header", None)
    except Exception:
        parent = None
    header = (parent or {}).get("header") if isinstance(parent, dict) else None
    msg_id = (header or {}).get("msg_id") if isinstance(header, dict) else None
    if not msg_id and isinstance(parent, dict):
        msg_id = parent.get("msg_id")
    return msg_id if isinstance(msg_id, str) and msg_id else None


def _wrap_display_pub(shell: Any, history: OutputHistory) -> None:
    pub = getattr(shell, "display_pub", None)
    if pub is None or getattr(pub, "_codingcode_wrapped", False):
        return
    publish, clear_output = pub.publish, pub.clear_output

    def recording_publish(data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> Any:
        result = publish(data, metadata, *args, **kwargs)
        try:
            transient = kwargs.get("transient", args[0] if args else None)
            update = kwargs.get("update", args[1] if len(args) > 1 else False)
            output = bundle_output("display_data", data, transient, history.max_item())
            if update and output.display_id:
                history.update_display(output.display_id, output)
            else:
                history.add(output, _parent_msg_id(pub))
        except Exception:
            pass  # recording must never break what the person sees
        return result

    def recording_clear(*args: Any, **kwargs: Any) -> Any:
        result = clear_output(*args, **kwargs)
        try:
            wait = bool(kwargs.get("wait", args[0] if args else False))
            history.clear(_parent_msg_id(pub), wait=wait)
        except Exception:
            pass
        return result

    pub.publish = recording_publish
    pub.clear_output = recording_clear
    pub._codingcode_wrapped = True


def _wrap_displayhook(shell: Any, history: OutputHistory) -> None:
    hook = getattr(shell, "displayhook", None)
    if hook is None or getattr(hook, "_codingcode_wrapped", False) or not hasattr(hook, "log_output"):
        return
    log_output = hook.log_output

    def recording_log_output(format_dict: Any) -> Any:
        try:
            history.add(bundle_output("execute_result", format_dict, None, history.max_item()), _parent_msg_id(hook))
        except Exception:
            pass
        return log_output(format_dict)

    hook.log_output = recording_log_output
    hook._codingcode_wrapped = True


def _copy_streams(shell: Any, history: OutputHistory, record: CellRecord, count: int | None) -> None:
    """Without ipykernel's streams (a terminal), the text IPython 9 kept of the cell's streams."""
    kept = getattr(getattr(shell, "history_manager", None), "outputs", None)
    if count is None or not isinstance(kept, dict) or record.agent:
        return
    for item in kept.get(count, []):
        kind = getattr(item, "output_type", "")
        if kind in ("out_stream", "err_stream"):
            text = "".join(str(part) for part in (getattr(item, "bundle", {}) or {}).get("stream", []))
            history.add_stream("stdout" if kind == "out_stream" else "stderr", text)


def _hook_streams(history: OutputHistory) -> None:
    import sys

    try:
        from ipykernel.iostream import OutStream
    except ImportError:
        return  # a terminal: the person's streams are the terminal's

    def hook(msg: Any) -> Any:
        try:
            content = msg.get("content") or {}
            parent = (msg.get("parent_header") or {}).get("msg_id")
            history.add_stream(str(content.get("name", "stdout")), str(content.get("text", "")), parent)
        except Exception:
            pass
        return msg

    for stream in (sys.stdout, sys.stderr):
        if not isinstance(stream, OutStream) or getattr(stream, "_codingcode_hooked", False):
            continue
        stream.register_hook(hook)  # used when the stream flushes on this thread
        thread = getattr(stream, "pub_thread", None)
        if thread is not None and hasattr(thread, "schedule"):
            done = threading.Event()

            def register(stream: Any = stream, done: threading.Event = done) -> None:
                stream.register_hook(hook)
                done.set()

            thread.schedule(register)
            done.wait(5)
        # Marked on the stream itself: a later install (another extension load) must not hook it twice.
        setattr(stream, "_codingcode_hooked", True)  # noqa: B010
        history.streams_hooked = True


def install_output_recorder(shell: Any, **budget: Any) -> OutputHistory | None:
    """Start recording each cell's outputs on ``shell`` (once); the recorder is returned."""
    if shell is None:
        return None
    history = _HISTORIES.get(shell)
    if history is not None:
        return history
    history = OutputHistory(parent=shell, **budget)
    _HISTORIES[shell] = history
    configurables = getattr(shell, "configurables", None)
    if isinstance(configurables, list):
        configurables.append(history)  # %config OutputHistory.max_cells = 50

    def pre_run_cell(info: Any) -> None:
        if not getattr(info, "store_history", True):
            history.current = None  # not a numbered cell (a frontend's own request): nothing to file it under
            return
        history.begin(getattr(info, "raw_cell", "") or "", cell_id=getattr(info, "cell_id", None), msg_id=_cell_msg_id(shell))

    def post_run_cell(result: Any) -> None:
        record = history.current
        if record is None:
            return
        info = getattr(result, "info", None)
        if getattr(info, "raw_cell", record.source) != record.source:
            return
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        count = getattr(result, "execution_count", None)
        if not history.streams_hooked:
            _copy_streams(shell, history, record, count)
        history.finish(record, count, error)

    shell.events.register("pre_run_cell", pre_run_cell)
    shell.events.register("post_run_cell", post_run_cell)
    _wrap_display_pub(shell, history)
    _wrap_displayhook(shell, history)
    _hook_streams(history)
    return history


def install_recorders(shell: Any) -> None:
    """Record each cell's failure and outputs from now on (for the kernel tools and %agent fix)."""
    from .errors import install_error_recorder

    install_error_recorder(shell)
    install_output_recorder(shell)
