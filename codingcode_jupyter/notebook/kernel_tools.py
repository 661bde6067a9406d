"""Tools only an agent living in the kernel can have: the user's live variables and history.

``list_variables``, ``inspect_variable`` and ``notebook_history`` only look (read-only, so
they run without asking); ``run_python`` runs code in the user's namespace and
``insert_cell`` proposes a new cell, both after approval (their card shows the code).

How ``run_python`` runs, and why (measured, see tests/notebook/test_kernel_tools*.py):
IPython's ``run_cell`` is not re-entrant while the ``%%agent`` cell runs as an awaited
cell, so the code is compiled and ``exec``'d in ``user_ns`` directly — on the kernel's main
thread, like a normal cell, not in a worker thread. A worker thread could not be stopped:
a ``time.sleep(600)`` in it would go on mutating the namespace after the turn was
cancelled. On the main thread the interrupt button raises KeyboardInterrupt inside the
code exactly as in a cell (SIGINT is switched back to Python's default handler for the
duration), and the tool turns it into a cancelled turn; a timeout (SIGALRM) bounds code
nobody interrupts. The event loop is paused while synchronous code runs, just as during a
normal cell. Code with top-level ``await`` is compiled as a coroutine and awaited on the
loop instead, so it stays responsive and the turn's own cancellation stops it.

The read-only tools never run a user-defined property or ``__getattr__`` (looked up with
``inspect.getattr_static``; array and frame libraries are trusted for ``shape`` and the
like); they do call ``repr`` and ``len``, as ``%whos`` and Jupyter's display do.

``insert_cell`` uses ``shell.set_next_input(code, replace=False)``: the kernel cannot add a
cell itself, it attaches a ``set_next_input`` payload to the ``%%agent`` cell's
execute_reply, and JupyterLab / Notebook insert a new, unrun cell below it when that cell
finishes (only when it finishes without an error). A reply carries one such payload, so
the proposals of one agent cell are joined into a single new cell.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import difflib
import functools
import inspect
import io
import itertools
import linecache
import re
import reprlib
import signal
import sys
import threading
import time
import traceback
import types
import weakref
from dataclasses import dataclass
from typing import Any, MutableMapping

from pydantic import BaseModel, Field

from ..engine.tools.base import ToolContext, ToolDefinition, ToolError, ToolResult
from ..engine.tools.registry import ToolRegistry
from . import async_cell

__all__ = [
    "KernelAccess",
    "LastError",
    "kernel_tools",
    "register_kernel_tools",
    "describe_value",
    "last_error",
    "install_error_recorder",
    "KERNEL_TOOL_NAMES",
]

KERNEL_TOOL_NAMES = ("list_variables", "inspect_variable", "notebook_history", "run_python", "insert_cell")

MAX_REPR = 120
MAX_INSPECT_CHARS = 12_000
MAX_OUTPUT_CHARS = 20_000
MAX_CODE_CHARS = 200_000
DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 3600.0
_NAME_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_AGENT_CELL = re.compile(r"^\s*%%?agent\b")
_run_counter = itertools.count(1)


# --------------------------------------------------------------------------- the namespace


class KernelAccess:
    """The user's namespace, and the IPython shell behind it when there is one."""

    def __init__(self, shell: Any = None, namespace: MutableMapping[str, Any] | None = None) -> None:
        if shell is None and namespace is None:
            raise ValueError("KernelAccess needs an IPython shell or a namespace dict")
        self.shell = shell
        self._namespace = namespace

    @property
    def user_ns(self) -> MutableMapping[str, Any]:
        return self._namespace if self._namespace is not None else self.shell.user_ns

    def hidden(self) -> set[str]:
        """Names the shell put there itself (In, Out, get_ipython...), not the user's."""
        names = {"__builtins__", "__builtin__", "__name__", "__doc__", "__spec__", "__loader__", "__package__"}
        if self.shell is not None:
            names |= set(getattr(self.shell, "user_ns_hidden", {}) or {})
        return names


# --------------------------------------------------------------------------- describing values


def _human_bytes(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def _type_name(obj: Any) -> str:
    cls = type(obj)
    module = cls.__module__ or ""
    if module == "builtins":
        return cls.__qualname__
    top = module.split(".")[0]
    return f"{top}.{cls.__qualname__}"


def _is_kind(obj: Any, module: str, *names: str) -> bool:
    cls = type(obj)
    return (cls.__module__ or "").split(".")[0] == module and cls.__name__ in names


def _safe(fn, default: Any = None) -> Any:
    try:
        return fn()
    except Exception:
        return default


_short = reprlib.Repr()
_short.maxstring = MAX_REPR
_short.maxother = MAX_REPR
_short.maxlist = _short.maxtuple = _short.maxset = _short.maxfrozenset = _short.maxdeque = 8
_short.maxdict = 6
_short.maxlevel = 2


def _short_repr(obj: Any, limit: int = MAX_REPR) -> str:
    """A one-line repr that never dumps a big object; a broken __repr__ is reported."""
    try:
        text = _short.repr(obj)
    except Exception as error:
        return f"<repr failed: {type(error).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Array and frame libraries whose `shape`/`nbytes` properties only compute metadata.
_TRUSTED_LIBRARIES = frozenset({"numpy", "pandas", "polars", "pyarrow", "torch", "xarray", "scipy", "jax", "jaxlib",
                                "tensorflow", "dask", "cupy", "sparse"})


def _plain_attr(obj: Any, name: str) -> Any:
    """``obj.name`` unless getting it would run a user-defined property or ``__getattr__``."""
    if (type(obj).__module__ or "").split(".")[0] in _TRUSTED_LIBRARIES:
        return _safe(lambda: getattr(obj, name, None))
    try:
        raw = inspect.getattr_static(obj, name)
    except AttributeError:
        return None
    if isinstance(raw, (property, functools.cached_property)):
        return None
    return _safe(lambda: getattr(obj, name))


def _shape(obj: Any) -> str:
    shape = _plain_attr(obj, "shape")
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        return "×".join(str(n) for n in shape) if shape else "scalar"
    if isinstance(obj, (str, bytes, list, tuple, dict, set, frozenset)) or (
        hasattr(type(obj), "__len__") and not isinstance(obj, type)
    ):
        length = _safe(lambda: len(obj))
        if isinstance(length, int):
            return f"len {length}"
    return ""


def _size(obj: Any) -> int | None:
    if _is_kind(obj, "pandas", "DataFrame", "Series"):
        return _safe(lambda: int(obj.memory_usage(index=True, deep=False).sum()) if hasattr(obj, "columns")
                     else int(obj.memory_usage(index=True, deep=False)))
    nbytes = _plain_attr(obj, "nbytes")
    if isinstance(nbytes, int):
        return nbytes
    return _safe(lambda: sys.getsizeof(obj))


def _summary(obj: Any) -> str:
    """What a person would want to see first of a value, in one line."""
    if _is_kind(obj, "pandas", "DataFrame"):
        columns = _safe(lambda: [f"{c}:{t}" for c, t in zip(obj.columns, obj.dtypes)], [])
        more = f", ... ({len(columns)} columns)" if len(columns) > 8 else ""
        return "columns " + ", ".join(str(c) for c in columns[:8]) + more
    if _is_kind(obj, "pandas", "Series"):
        return f"name {obj.name!r}, dtype {_safe(lambda: obj.dtype)}"
    if _is_kind(obj, "numpy", "ndarray"):
        return f"dtype {obj.dtype}"
    return _short_repr(obj)


def describe_value(name: str, obj: Any) -> str:
    """One line about a live value: type, shape or length, size and a short repr."""
    parts = [_type_name(obj)]
    shape = _shape(obj)
    if shape:
        parts.append(shape)
    size = _size(obj)
    if size is not None:
        parts.append(_human_bytes(size))
    return f"{name}: {', '.join(parts)} — {_summary(obj)}"


def _is_definition(obj: Any) -> bool:
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type, functools.partial))


# --------------------------------------------------------------------------- list_variables


class ListVariablesArgs(BaseModel):
    """Parameters of list_variables."""

    pattern: str | None = Field(default=None, description="Only names matching this glob (e.g. 'df*').")
    include_functions: bool = Field(default=False, description="Also list functions and classes defined in the notebook.")
    include_private: bool = Field(default=False, description="Also list names starting with an underscore.")
    limit: int = Field(default=100, ge=1, le=1000, description="At most this many variables (default 100).")


def _list_variables(access: KernelAccess, args: ListVariablesArgs) -> str:
    import fnmatch

    hidden = access.hidden()
    rows = []
    skipped = {"modules": 0, "functions/classes": 0}
    for name, obj in list(access.user_ns.items()):
        if name in hidden or (name.startswith("_") and not args.include_private):
            continue
        if args.pattern and not fnmatch.fnmatchcase(name, args.pattern):
            continue
        if isinstance(obj, types.ModuleType):
            skipped["modules"] += 1
            continue
        if _is_definition(obj) and not args.include_functions:
            skipped["functions/classes"] += 1
            continue
        rows.append((name, obj))
    rows.sort(key=lambda row: row[0].lower())
    if not rows:
        text = "No user variables" + (f" matching {args.pattern!r}" if args.pattern else "") + "."
    else:
        lines = [describe_value(name, obj) for name, obj in rows[: args.limit]]
        if len(rows) > args.limit:
            lines.append(f"... and {len(rows) - args.limit} more (narrow with pattern, or raise limit)")
        text = "\n".join(lines)
    notes = [f"{count} {what}" for what, count in skipped.items() if count]
    if notes:
        text += "\n(not shown: " + ", ".join(notes) + (
            "; include_functions=true lists functions and classes)" if skipped["functions/classes"] else ")"
        )
    return text


# --------------------------------------------------------------------------- inspect_variable


class InspectVariableArgs(BaseModel):
    """Parameters of inspect_variable."""

    name: str = Field(description="A variable name, or a dotted attribute path such as 'model.config'.")
    rows: int = Field(default=5, ge=1, le=50, description="Rows or items to show from the start (default 5).")


def _lookup(access: KernelAccess, path: str) -> Any:
    if not _NAME_PATH.match(path):
        raise ToolError(f"{path!r} is not a variable name or a dotted attribute path (no calls or indexing).")
    head, *rest = path.split(".")
    ns = access.user_ns
    if head not in ns:
        close = difflib.get_close_matches(head, [n for n in ns if not n.startswith("_")], n=5, cutoff=0.6)
        hint = f" Did you mean: {', '.join(close)}?" if close else " list_variables shows what exists."
        raise ToolError(f"No variable named {head!r} in the notebook.{hint}")
    obj = ns[head]
    walked = head
    for part in rest:
        # Looked up statically first: this tool is read-only, so it must not run a property's
        # or a __getattr__'s code (which could change something) without approval.
        try:
            raw = inspect.getattr_static(obj, part)
        except AttributeError:
            raise ToolError(
                f"{walked} has no plain attribute {part!r} (it may be computed by __getattr__; "
                "run_python can evaluate it)."
            ) from None
        trusted = (type(obj).__module__ or "").split(".")[0] in _TRUSTED_LIBRARIES
        if isinstance(raw, (property, functools.cached_property)) and not trusted:
            raise ToolError(
                f"{walked}.{part} is a property: reading it runs code, so inspect_variable does not; "
                "run_python can evaluate it."
            )
        try:
            obj = getattr(obj, part)
        except Exception as error:
            raise ToolError(f"{walked}.{part} could not be read ({type(error).__name__}: {error}).") from None
        walked += "." + part
    return obj


def _frame_text(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters]"


def _inspect_dataframe(df: Any, rows: int) -> list[str]:
    import contextlib as _c

    out = [f"shape: {df.shape[0]} rows × {df.shape[1]} columns"]
    pd = sys.modules.get("pandas")
    options = pd.option_context("display.width", 160, "display.max_columns", 30, "display.max_colwidth", 40) if pd else _c.nullcontext()
    with options:
        nulls = _safe(lambda: df.isna().sum(), None)
        schema = []
        for column, dtype in list(zip(df.columns, df.dtypes))[:200]:
            null = f", {int(nulls[column])} null" if nulls is not None and _safe(lambda: int(nulls[column])) else ""
            schema.append(f"  {column!s}: {dtype}{null}")
        if len(df.columns) > 200:
            schema.append(f"  ... {len(df.columns) - 200} more columns")
        out.append("columns:\n" + "\n".join(schema))
        out.append("head:\n" + _frame_text(_safe(lambda: df.head(rows).to_string(), "(head failed)")))
        source = df if len(df) <= 1_000_000 else df.head(1_000_000)
        described = _safe(lambda: source.describe(include="all").to_string(), None)
        if described:
            note = " (first 1,000,000 rows)" if source is not df else ""
            out.append(f"describe{note}:\n" + _frame_text(described))
    return out


def _inspect_series(series: Any, rows: int) -> list[str]:
    out = [f"name: {series.name!r}, dtype: {series.dtype}, length: {len(series)}, nulls: {_safe(lambda: int(series.isna().sum()), '?')}"]
    out.append("head:\n" + _frame_text(_safe(lambda: series.head(rows).to_string(), "(head failed)")))
    out.append("describe:\n" + _frame_text(_safe(lambda: series.describe().to_string(), "(describe failed)")))
    if str(series.dtype) in ("object", "category", "string", "bool"):
        counts = _safe(lambda: series.value_counts().head(10).to_string(), None)
        if counts:
            out.append("most frequent:\n" + _frame_text(counts))
    return out


def _inspect_ndarray(arr: Any, rows: int) -> list[str]:
    np = sys.modules.get("numpy")
    out = [f"shape: {arr.shape}, dtype: {arr.dtype}, size: {arr.size}, {_human_bytes(arr.nbytes)}"]
    if np is not None and arr.size and arr.dtype.kind in "biufc":
        with np.errstate(all="ignore"):
            flat = arr
            if arr.dtype.kind == "b":
                flat = arr.astype(float)
            elif arr.dtype.kind == "c":
                out.append("complex values: the stats are of their magnitude")
                flat = np.abs(arr)
            nans = int(np.isnan(flat).sum()) if flat.dtype.kind == "f" else 0
            stats = {
                "min": np.nanmin(flat), "max": np.nanmax(flat), "mean": np.nanmean(flat), "std": np.nanstd(flat),
            } if nans < flat.size else {}
            text = ", ".join(f"{key} {float(value):.6g}" for key, value in stats.items())
            out.append(f"stats: {text}" + (f", {nans} NaN" if nans else ""))
    if np is not None:
        sample = _safe(lambda: np.array2string(arr, threshold=max(rows * 10, 20), edgeitems=min(rows, 3), max_line_width=120), None)
        if sample:
            out.append("values:\n" + _frame_text(sample, 2000))
    return out


def _inspect_callable(obj: Any) -> list[str]:
    out = []
    signature = _safe(lambda: str(inspect.signature(obj)), None)
    if signature:
        out.append(f"signature: {getattr(obj, '__name__', '')}{signature}")
    where = _safe(lambda: f"{inspect.getsourcefile(obj)}:{inspect.getsourcelines(obj)[1]}", None)
    if where:
        out.append(f"defined at: {where}")
    source = _safe(lambda: inspect.getsource(obj), None)
    if source and len(source) <= 3000:
        out.append("source:\n" + source.rstrip())
    return out


def _attributes(obj: Any, rows: int) -> list[str]:
    """Public attributes without running properties: instance values, class members by kind."""
    out = []
    instance = _safe(lambda: vars(obj), None)
    if isinstance(instance, dict) and not isinstance(obj, type):
        shown = [(k, v) for k, v in instance.items() if not k.startswith("_")]
        if shown:
            lines = [f"  {k}: {_type_name(v)} = {_short_repr(v, 80)}" for k, v in shown[:40]]
            if len(shown) > 40:
                lines.append(f"  ... {len(shown) - 40} more")
            out.append("attributes:\n" + "\n".join(lines))
    members = []
    for name in sorted(n for n in _safe(lambda: dir(obj), []) if not n.startswith("_")):
        if isinstance(instance, dict) and name in instance and not isinstance(obj, type):
            continue
        raw = _safe(lambda: inspect.getattr_static(obj, name), None)
        if isinstance(raw, property):
            kind = "property"
        elif isinstance(raw, (staticmethod, classmethod)) or callable(raw):
            kind = "method"
        else:
            kind = _type_name(raw)
        members.append(f"{name} ({kind})")
    if members:
        shown = ", ".join(members[:60]) + (f", ... {len(members) - 60} more" if len(members) > 60 else "")
        out.append("members: " + shown)
    return out


def _inspect(obj: Any, path: str, rows: int) -> str:
    lines = [describe_value(path, obj)]
    if _is_kind(obj, "pandas", "DataFrame"):
        lines += _inspect_dataframe(obj, rows)
    elif _is_kind(obj, "pandas", "Series"):
        lines += _inspect_series(obj, rows)
    elif _is_kind(obj, "numpy", "ndarray"):
        lines += _inspect_ndarray(obj, rows)
    elif isinstance(obj, dict):
        items = list(itertools.islice(obj.items(), rows * 4))
        lines.append(f"{len(obj)} keys; first {len(items)}:")
        lines += [f"  {_short_repr(k, 60)}: {_type_name(v)} = {_short_repr(v, 80)}" for k, v in items]
    elif isinstance(obj, (list, tuple, set, frozenset)):
        kinds: dict[str, int] = {}
        for item in itertools.islice(obj, 10_000):
            kinds[_type_name(item)] = kinds.get(_type_name(item), 0) + 1
        lines.append("element types: " + ", ".join(f"{k} ×{n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])))
        lines += [f"  [{i}] {_short_repr(v, 100)}" for i, v in enumerate(itertools.islice(obj, rows * 2))]
    elif isinstance(obj, (str, bytes)):
        lines.append(f"length {len(obj)}; start:\n{obj[:1500]!r}")
    elif isinstance(obj, types.ModuleType):
        lines.append(f"module {obj.__name__} from {getattr(obj, '__file__', '(built-in)')}")
    elif callable(obj):
        lines += _inspect_callable(obj)
    if isinstance(obj, type):
        lines.append("bases: " + " -> ".join(c.__qualname__ for c in obj.__mro__))
    doc = inspect.getdoc(obj) if not isinstance(obj, (str, bytes, int, float, list, dict, tuple, set)) else None
    if doc and not _is_kind(obj, "pandas", "DataFrame", "Series") and not _is_kind(obj, "numpy", "ndarray"):
        doc_lines = doc.splitlines()
        lines.append("doc:\n  " + "\n  ".join(doc_lines[:15]) + ("\n  ..." if len(doc_lines) > 15 else ""))
    if not isinstance(obj, (str, bytes, int, float, bool, list, tuple, dict, set, frozenset, types.ModuleType)) and not (
        _is_kind(obj, "pandas", "DataFrame", "Series") or _is_kind(obj, "numpy", "ndarray")
    ):
        lines += _attributes(obj, rows)
    text = "\n".join(lines)
    if len(text) > MAX_INSPECT_CHARS:
        text = text[:MAX_INSPECT_CHARS] + f"\n[... cut: {len(text) - MAX_INSPECT_CHARS} more characters]"
    return text


# --------------------------------------------------------------------------- history and errors


@dataclass
class LastError:
    """The newest exception raised by a cell: where, what, and its formatted traceback."""

    execution_count: int | None
    cell: str
    error: str
    traceback: str


_ERRORS: "weakref.WeakKeyDictionary[Any, LastError]" = weakref.WeakKeyDictionary()
_RECORDERS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def _strip_shell_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    # IPython's own frames (run_code's exec) come first; the user wants their code's frames.
    while tb is not None and (
        "/IPython/" in tb.tb_frame.f_code.co_filename or tb.tb_frame.f_code.co_filename == __file__
    ):
        tb = tb.tb_next
    return tb


def format_exception(error: BaseException) -> str:
    """The traceback as Python prints it, without the shell's frames, capped in the middle."""
    tb = _strip_shell_frames(error.__traceback__)
    text = "".join(traceback.format_exception(type(error), error, tb))
    if len(text) > 8000:
        text = text[:3000] + f"\n[... {len(text) - 7000} characters of traceback cut ...]\n" + text[-4000:]
    return text


def install_error_recorder(shell: Any) -> None:
    """Remember each failing cell (its source and traceback) for notebook_history and %agent fix."""
    if shell is None or shell in _RECORDERS:
        return

    def post_run_cell(result: Any) -> None:
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        if error is None:
            return
        info = getattr(result, "info", None)
        cell = getattr(info, "raw_cell", "") or ""
        if _AGENT_CELL.match(cell):
            return  # the agent's own cell failing is not the user's bug to fix
        _ERRORS[shell] = LastError(
            execution_count=getattr(result, "execution_count", None),
            cell=cell,
            error=f"{type(error).__name__}: {error}",
            traceback=format_exception(error),
        )

    shell.events.register("post_run_cell", post_run_cell)
    _RECORDERS[shell] = post_run_cell


def last_error(shell: Any) -> LastError | None:
    """The newest cell exception: recorded by the hook, else the one Python kept in sys."""
    if shell is not None and shell in _ERRORS:
        return _ERRORS[shell]
    error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    if not isinstance(error, BaseException):
        return None
    cell = ""
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    if history:
        for text in reversed(history):
            if text.strip() and not _AGENT_CELL.match(text):
                cell = text
                break
    return LastError(None, cell, f"{type(error).__name__}: {error}", format_exception(error))


class NotebookHistoryArgs(BaseModel):
    """Parameters of notebook_history."""

    cells: int = Field(default=10, ge=1, le=100, description="How many recent cells to show (default 10).")
    include_outputs: bool = Field(default=True, description="Show each cell's result value when it had one.")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters]"


def _notebook_history(access: KernelAccess, args: NotebookHistoryArgs) -> str:
    shell = access.shell
    ns = access.user_ns
    inputs = list(getattr(getattr(shell, "history_manager", None), "input_hist_raw", None) or ns.get("In") or [])
    outputs = ns.get("Out") if isinstance(ns.get("Out"), dict) else {}
    numbered = [(n, text) for n, text in enumerate(inputs) if text and text.strip()]
    parts = []
    for number, text in numbered[-args.cells :]:
        if _AGENT_CELL.match(text):
            first = text.strip().splitlines()[0]
            parts.append(f"In [{number}]: (agent cell) {first[:200]}")
            continue
        parts.append(f"In [{number}]:\n{_clip(text.rstrip(), 2000)}")
        if args.include_outputs and number in outputs:
            parts.append(f"Out[{number}]: {_clip(_safe(lambda: repr(outputs[number]), '<repr failed>'), 500)}")
    if not parts:
        parts.append("No cells have run yet.")
    error = last_error(shell)
    if error is not None:
        where = f" in cell [{error.execution_count}]" if error.execution_count else ""
        parts.append(f"\nLast exception{where}: {error.error}\n{error.traceback.rstrip()}")
    else:
        parts.append("\nNo exception so far.")
    return "\n".join(parts)


# --------------------------------------------------------------------------- run_python


class RunPythonArgs(BaseModel):
    """Parameters of run_python."""

    code: str = Field(min_length=1, max_length=MAX_CODE_CHARS, description="Python code to run in the notebook's namespace.")
    timeout: float = Field(
        default=DEFAULT_TIMEOUT, gt=0, le=MAX_TIMEOUT,
        description=f"Seconds before the code is stopped (default {DEFAULT_TIMEOUT:.0f}, max {MAX_TIMEOUT:.0f}).",
    )


class _RunTimeout(BaseException):
    """Raised inside the code when its time is up (BaseException: `except Exception` in it won't swallow it)."""


class _Capture(io.TextIOBase):
    """A stdout/stderr that keeps the head and the tail and streams whole lines as progress."""

    def __init__(self, ctx: ToolContext, label: str, limit: int = MAX_OUTPUT_CHARS) -> None:
        self.ctx, self.label, self.limit = ctx, label, limit
        self.head: list[str] = []
        self.head_len = 0
        self.tail: list[str] = []
        self.tail_len = 0
        self.dropped = 0
        self.pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.head_len < self.limit // 2:
            self.head.append(text)
            self.head_len += len(text)
        else:
            self.tail.append(text)
            self.tail_len += len(text)
            while self.tail_len > self.limit // 2 and len(self.tail) > 1:
                dropped = self.tail.pop(0)
                self.tail_len -= len(dropped)
                self.dropped += len(dropped)
        self.pending += text
        if "\n" in self.pending:
            lines, self.pending = self.pending.rsplit("\n", 1)
            with contextlib.suppress(Exception):
                self.ctx.progress(lines[-2000:])
        return len(text)

    def value(self) -> str:
        middle = f"\n[... {self.dropped} characters of output cut ...]\n" if self.dropped else ""
        return "".join(self.head) + middle + "".join(self.tail)


def _split_last_expression(tree: ast.Module) -> tuple[ast.Module, ast.Expression | None]:
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop()
        return tree, ast.Expression(last.value)
    return tree, None


@contextlib.contextmanager
def _time_limit(seconds: float):
    """SIGALRM-based limit for code on the main thread; a no-op elsewhere."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise _RunTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    old_timer = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if old_timer[0]:
            signal.setitimer(signal.ITIMER_REAL, *old_timer)


async def _run_python(access: KernelAccess, args: RunPythonArgs, ctx: ToolContext) -> ToolResult:
    filename = f"<agent-run_python-{next(_run_counter)}>"
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    try:
        tree = compile(args.code, filename, "exec", ast.PyCF_ONLY_AST | flags)
        body, last = _split_last_expression(tree)
        body_code = compile(body, filename, "exec", flags)
        last_code = compile(last, filename, "eval", flags) if last is not None else None
    except (SyntaxError, ValueError) as error:
        detail = "".join(traceback.format_exception_only(type(error), error))
        return ToolResult.text(f"The code did not compile:\n{detail}", is_error=True)
    # Registered so tracebacks (and inspect.getsource of functions it defines) show the code.
    linecache.cache[filename] = (len(args.code), None, args.code.splitlines(True), filename)

    out, err = _Capture(ctx, "stdout"), _Capture(ctx, "stderr")
    ns = access.user_ns
    started = time.monotonic()
    value: Any = None
    has_value = False
    failure: BaseException | None = None

    async def run(code: types.CodeType, mode: str) -> Any:
        if code.co_flags & inspect.CO_COROUTINE:
            # Top-level await: runs on the loop; the turn's cancellation reaches it.
            remaining = max(0.01, args.timeout - (time.monotonic() - started))
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                return await asyncio.wait_for(eval(code, ns), remaining)
        remaining = max(0.01, args.timeout - (time.monotonic() - started))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            with async_cell.sync_interrupts(), _time_limit(remaining):
                if mode == "exec":
                    exec(code, ns)
                    return None
                return eval(code, ns)

    if ctx.cancelled.is_set():
        raise asyncio.CancelledError()
    try:
        await run(body_code, "exec")
        if last_code is not None:
            value = await run(last_code, "eval")
            has_value = value is not None
    except KeyboardInterrupt:
        # The interrupt button: stop the turn, as it stops a cell.
        ctx.cancelled.set()
        raise asyncio.CancelledError() from None
    except (_RunTimeout, asyncio.TimeoutError) as error:
        failure = error
    except asyncio.CancelledError:
        raise
    except BaseException as error:  # SystemExit too: the code's failure, not the kernel's
        failure = error

    elapsed = time.monotonic() - started
    sections = []
    stdout, stderr = out.value(), err.value()
    if stdout:
        sections.append(f"[stdout]\n{stdout.rstrip()}")
    if stderr:
        sections.append(f"[stderr]\n{stderr.rstrip()}")
    if has_value:
        sections.append(f"[result] {_clip(_safe(lambda: repr(value), '<repr failed>'), 10_000)}")
    if isinstance(failure, (_RunTimeout, asyncio.TimeoutError)):
        sections.append(f"[error] Stopped after {args.timeout:g} s (timeout). Changes made before that remain.")
    elif failure is not None:
        sections.append("[error]\n" + format_exception(failure).rstrip())
    if not sections:
        sections.append("(ran without output)")
    sections.append(f"({elapsed:.2f} s)")
    return ToolResult.text("\n".join(sections), is_error=failure is not None)


async def _run_python_preview(args: RunPythonArgs, ctx: ToolContext) -> str:
    return args.code


# --------------------------------------------------------------------------- insert_cell


class InsertCellArgs(BaseModel):
    """Parameters of insert_cell."""

    code: str = Field(min_length=1, max_length=MAX_CODE_CHARS, description="The source of the new cell.")


# Per shell: (execution count of the agent cell, cells proposed during it).
_PROPOSED: "weakref.WeakKeyDictionary[Any, tuple[Any, list[str]]]" = weakref.WeakKeyDictionary()


def _insert_cell(access: KernelAccess, args: InsertCellArgs) -> str:
    shell = access.shell
    if shell is None or not hasattr(shell, "set_next_input"):
        raise ToolError("insert_cell needs a notebook: there is no IPython shell here.")
    count = getattr(shell, "execution_count", None)
    previous = _PROPOSED.get(shell)
    codes = previous[1] if previous is not None and previous[0] == count else []
    codes.append(args.code.rstrip("\n"))
    _PROPOSED[shell] = (count, codes)
    # A frontend inserts one cell per run (the payload is single), so proposals of one
    # agent cell are joined into that one cell.
    shell.set_next_input("\n\n".join(codes), replace=False)
    joined = f" It was joined with {len(codes) - 1} earlier proposal(s) of this cell into one." if len(codes) > 1 else ""
    return (
        "Proposed a new cell below the current one; it appears, not run, when this %%agent cell "
        f"finishes (the user runs it).{joined}"
    )


async def _insert_cell_preview(args: InsertCellArgs, ctx: ToolContext) -> str:
    return args.code


# --------------------------------------------------------------------------- the tools


def kernel_tools(shell: Any = None, namespace: MutableMapping[str, Any] | None = None) -> list[ToolDefinition]:
    """The five kernel tools bound to ``shell`` (or, for tests and scripts, a namespace dict)."""
    access = KernelAccess(shell, namespace)

    async def list_variables(args: ListVariablesArgs, ctx: ToolContext) -> str:
        return _list_variables(access, args)

    async def inspect_variable(args: InspectVariableArgs, ctx: ToolContext) -> str:
        return _inspect(_lookup(access, args.name), args.name, args.rows)

    async def notebook_history(args: NotebookHistoryArgs, ctx: ToolContext) -> str:
        return _notebook_history(access, args)

    async def run_python(args: RunPythonArgs, ctx: ToolContext) -> ToolResult:
        return await _run_python(access, args, ctx)

    async def insert_cell(args: InsertCellArgs, ctx: ToolContext) -> str:
        return _insert_cell(access, args)

    return [
        ToolDefinition(
            name="list_variables",
            description=(
                "List the live variables in the user's notebook kernel: type, shape or length, memory size and "
                "a short value. Modules, private names and (unless asked) functions and classes are left out."
            ),
            parameters=ListVariablesArgs, execute=list_variables, read_only=True,
        ),
        ToolDefinition(
            name="inspect_variable",
            description=(
                "Look closely at one live variable of the notebook: a DataFrame's columns, head and describe(); an "
                "array's shape, dtype and stats; a function's signature and source; an object's attributes and doc."
            ),
            parameters=InspectVariableArgs, execute=inspect_variable, read_only=True,
        ),
        ToolDefinition(
            name="notebook_history",
            description=(
                "The notebook's recent cells (inputs and result values) and the last exception with its traceback."
            ),
            parameters=NotebookHistoryArgs, execute=notebook_history, read_only=True,
        ),
        ToolDefinition(
            name="run_python",
            description=(
                "Run Python code in the user's live notebook namespace (it can read and change their variables). "
                "Returns printed output, the value of a final expression, and any exception with its traceback. "
                "Needs the user's approval. Prefer insert_cell for code the user should keep."
            ),
            parameters=RunPythonArgs, execute=run_python, preview=_run_python_preview,
        ),
        ToolDefinition(
            name="insert_cell",
            description=(
                "Propose a new code cell below the current one (it is inserted, not run, once this agent cell "
                "finishes). Needs the user's approval."
            ),
            parameters=InsertCellArgs, execute=insert_cell, preview=_insert_cell_preview,
        ),
    ]


def register_kernel_tools(registry: ToolRegistry, shell: Any) -> list[ToolDefinition]:
    """Register the kernel tools for ``shell`` in ``registry`` and start recording cell errors."""
    install_error_recorder(shell)
    tools = kernel_tools(shell)
    for tool in tools:
        registry.register(tool)
    return tools
