"""Describing live values without running user code: list_variables and inspect_variable.

The read-only tools never run a user-defined property or ``__getattr__`` (looked up with
``inspect.getattr_static``; array and frame libraries are trusted for ``shape`` and the
like); they do call ``repr`` and ``len``, as ``%whos`` and Jupyter's display do.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import itertools
import re
import reprlib
import sys
import types
from typing import Any, Callable

from pydantic import BaseModel, Field

from ...engine.tools.base import ToolError
from .namespace import KernelAccess

MAX_REPR = 120
MAX_INSPECT_CHARS = 12_000
_NAME_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


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


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters]"


def _int_item(values: Any, key: Any) -> int:
    return int(values[key])


def safe_call(fn: Callable[[], Any], default: Any = None) -> Any:
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
        return safe_call(lambda: getattr(obj, name, None))
    try:
        raw = inspect.getattr_static(obj, name)
    except AttributeError:
        return None
    if isinstance(raw, (property, functools.cached_property)):
        return None
    return safe_call(lambda: getattr(obj, name))


def _shape(obj: Any) -> str:
    shape = _plain_attr(obj, "shape")
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        return "×".join(str(n) for n in shape) if shape else "scalar"
    if isinstance(obj, (str, bytes, list, tuple, dict, set, frozenset)) or (
        hasattr(type(obj), "__len__") and not isinstance(obj, type)
    ):
        length = safe_call(lambda: len(obj))
        if isinstance(length, int):
            return f"len {length}"
    return ""


def _size(obj: Any) -> int | None:
    if _is_kind(obj, "pandas", "DataFrame", "Series"):
        frame_size = safe_call(lambda: int(obj.memory_usage(index=True, deep=False).sum()) if hasattr(obj, "columns")
                               else int(obj.memory_usage(index=True, deep=False)))
        return frame_size if isinstance(frame_size, int) else None
    nbytes = _plain_attr(obj, "nbytes")
    if isinstance(nbytes, int):
        return nbytes
    size = safe_call(lambda: sys.getsizeof(obj))
    return size if isinstance(size, int) else None


def _summary(obj: Any) -> str:
    """What a person would want to see first of a value, in one line."""
    if _is_kind(obj, "pandas", "DataFrame"):
        columns = safe_call(lambda: [f"{c}:{t}" for c, t in zip(obj.columns, obj.dtypes)], [])
        more = f", ... ({len(columns)} columns)" if len(columns) > 8 else ""
        return "columns " + ", ".join(str(c) for c in columns[:8]) + more
    if _is_kind(obj, "pandas", "Series"):
        return f"name {obj.name!r}, dtype {safe_call(lambda: obj.dtype)}"
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


class ListVariablesArgs(BaseModel):
    """Parameters of list_variables."""

    pattern: str | None = Field(default=None, description="Only names matching this glob (e.g. 'df*').")
    include_functions: bool = Field(default=False, description="Also list functions and classes defined in the notebook.")
    include_private: bool = Field(default=False, description="Also list names starting with an underscore.")
    limit: int = Field(default=100, ge=1, le=1000, description="At most this many variables (default 100).")


def list_variables_text(access: KernelAccess, args: ListVariablesArgs) -> str:
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


class InspectVariableArgs(BaseModel):
    """Parameters of inspect_variable."""

    name: str = Field(description="A variable name, or a dotted attribute path such as 'model.config'.")
    rows: int = Field(default=5, ge=1, le=50, description="Rows or items to show from the start (default 5).")


def lookup(access: KernelAccess, path: str) -> Any:
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
        nulls = safe_call(lambda: df.isna().sum(), None)
        schema = []
        for column, dtype in list(zip(df.columns, df.dtypes))[:200]:
            null = f", {int(nulls[column])} null" if nulls is not None and safe_call(functools.partial(_int_item, nulls, column)) else ""
            schema.append(f"  {column!s}: {dtype}{null}")
        if len(df.columns) > 200:
            schema.append(f"  ... {len(df.columns) - 200} more columns")
        out.append("columns:\n" + "\n".join(schema))
        out.append("head:\n" + _frame_text(safe_call(lambda: df.head(rows).to_string(), "(head failed)")))
        source = df if len(df) <= 1_000_000 else df.head(1_000_000)
        described = safe_call(lambda: source.describe(include="all").to_string(), None)
        if described:
            note = " (first 1,000,000 rows)" if source is not df else ""
            out.append(f"describe{note}:\n" + _frame_text(described))
    return out


def _inspect_series(series: Any, rows: int) -> list[str]:
    out = [f"name: {series.name!r}, dtype: {series.dtype}, length: {len(series)}, nulls: {safe_call(lambda: int(series.isna().sum()), '?')}"]
    out.append("head:\n" + _frame_text(safe_call(lambda: series.head(rows).to_string(), "(head failed)")))
    out.append("describe:\n" + _frame_text(safe_call(lambda: series.describe().to_string(), "(describe failed)")))
    if str(series.dtype) in ("object", "category", "string", "bool"):
        counts = safe_call(lambda: series.value_counts().head(10).to_string(), None)
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
        sample = safe_call(lambda: np.array2string(arr, threshold=max(rows * 10, 20), edgeitems=min(rows, 3), max_line_width=120), None)
        if sample:
            out.append("values:\n" + _frame_text(sample, 2000))
    return out


def _inspect_callable(obj: Any) -> list[str]:
    out = []
    signature = safe_call(lambda: str(inspect.signature(obj)), None)
    if signature:
        out.append(f"signature: {getattr(obj, '__name__', '')}{signature}")
    where = safe_call(lambda: f"{inspect.getsourcefile(obj)}:{inspect.getsourcelines(obj)[1]}", None)
    if where:
        out.append(f"defined at: {where}")
    source = safe_call(lambda: inspect.getsource(obj), None)
    if source and len(source) <= 3000:
        out.append("source:\n" + source.rstrip())
    return out


def _attributes(obj: Any, rows: int) -> list[str]:
    """Public attributes without running properties: instance values, class members by kind."""
    out = []
    instance = safe_call(lambda: vars(obj), None)
    if isinstance(instance, dict) and not isinstance(obj, type):
        shown = [(k, v) for k, v in instance.items() if not k.startswith("_")]
        if shown:
            lines = [f"  {k}: {_type_name(v)} = {_short_repr(v, 80)}" for k, v in shown[:40]]
            if len(shown) > 40:
                lines.append(f"  ... {len(shown) - 40} more")
            out.append("attributes:\n" + "\n".join(lines))
    members = []
    for name in sorted(n for n in safe_call(lambda: dir(obj), []) if not n.startswith("_")):
        if isinstance(instance, dict) and name in instance and not isinstance(obj, type):
            continue
        raw = safe_call(functools.partial(inspect.getattr_static, obj, name), None)
        if isinstance(raw, property):
            kind = "property"
        elif isinstance(raw, (staticmethod, classmethod)) or callable(raw):
            kind = "method"
        else:
            kind = _type_name(raw)
        members.append(f"{name} ({kind})")
    if members:
        listed = ", ".join(members[:60]) + (f", ... {len(members) - 60} more" if len(members) > 60 else "")
        out.append("members: " + listed)
    return out


def inspect_text(obj: Any, path: str, rows: int) -> str:
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
