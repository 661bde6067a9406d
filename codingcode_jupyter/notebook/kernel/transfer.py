"""What a confined fork sends back to the kernel: framed messages, and values only as data.

The fork writes frames on its control pipe: one byte saying what it is, four giving its length,
then the payload (JSON, or a value's pickle). The kernel reads them; nothing in them is code the
kernel runs. A value the code was asked to keep (``keep=[...]``) comes back pickled and is loaded
by :func:`load_value`, an unpickler that builds only data types it knows (containers, numbers,
text, dates, numpy arrays, pandas frames): a pickle is a program, and the fork is not trusted to
write one the kernel would run.
"""

from __future__ import annotations

import io
import json
import pickle
import struct
from typing import Any, BinaryIO

__all__ = ["DISPLAY", "VALUE", "FAILURE", "KEPT", "REFUSED", "CONFINED", "write_frame", "read_frames", "FrameReader", "load_value",
           "UnsafeValue"]

# Frame kinds.
DISPLAY = b"D"  # {"data": mimebundle, "metadata": {...}}: a display() of the code
VALUE = b"V"  # {"repr": ...}: the code's last expression
FAILURE = b"F"  # {"text": traceback, "timed_out": bool}
KEPT = b"K"  # name length (2 bytes), name, pickle
REFUSED = b"R"  # {"name": ..., "why": ...}: a value that could not be sent
CONFINED = b"C"  # {"error": ...|null}: the confinement is in force (or why it failed)
_HEAD = struct.Struct("=cI")


def write_frame(stream: BinaryIO, kind: bytes, payload: bytes | dict[str, Any]) -> None:
    body = payload if isinstance(payload, bytes) else json.dumps(payload, default=str).encode()
    stream.write(_HEAD.pack(kind, len(body)) + body)
    stream.flush()


class FrameReader:
    """Frames from a stream read in chunks: each chunk is appended once, each frame cut once (a
    100 MB value is not copied again at every chunk)."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.frames: list[tuple[bytes, bytes]] = []

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk
        while len(self.buffer) >= _HEAD.size:
            kind, size = _HEAD.unpack_from(self.buffer, 0)
            if len(self.buffer) < _HEAD.size + size:
                return
            self.frames.append((kind, bytes(self.buffer[_HEAD.size:_HEAD.size + size])))
            del self.buffer[:_HEAD.size + size]


def read_frames(data: bytes) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The whole frames in ``data`` and what is left of a frame not yet complete."""
    reader = FrameReader()
    reader.feed(data)
    return reader.frames, bytes(reader.buffer)


class UnsafeValue(pickle.UnpicklingError):
    """The pickle asks for something that is not plain data."""


# What a kept value may be made of: (module, name) of each class or function the pickle may call.
_ALLOWED = frozenset({
    ("builtins", name) for name in ("int", "float", "complex", "str", "bytes", "bytearray", "list", "dict", "set",
                                    "frozenset", "tuple", "bool", "slice", "range", "object")
} | {
    ("collections", "OrderedDict"), ("collections", "deque"), ("collections", "Counter"),
    ("collections", "defaultdict"), ("copyreg", "_reconstructor"), ("datetime", "date"), ("datetime", "datetime"),
    ("datetime", "time"), ("datetime", "timedelta"), ("datetime", "timezone"), ("decimal", "Decimal"),
    ("fractions", "Fraction"), ("uuid", "UUID"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy._core.numeric", "_frombuffer"), ("numpy.core.numeric", "_frombuffer"),
    ("pandas.core.frame", "DataFrame"), ("pandas.core.series", "Series"),
    ("pandas.core.internals.managers", "BlockManager"), ("pandas.core.internals.managers", "SingleBlockManager"),
    ("pandas._libs.internals", "_unpickle_block"), ("pandas.core.internals.blocks", "new_block"),
    ("pandas.core.indexes.base", "_new_Index"), ("pandas.core.indexes.base", "Index"),
    ("pandas.core.indexes.range", "RangeIndex"), ("pandas.core.indexes.multi", "MultiIndex"),
    ("pandas.core.indexes.datetimes", "DatetimeIndex"), ("pandas.core.indexes.datetimes", "_new_DatetimeIndex"),
    ("pandas._libs.tslibs.timestamps", "_unpickle_timestamp"), ("pandas._libs.tslibs.timedeltas", "_timedelta_unpickle"),
    ("pandas.core.arrays.categorical", "Categorical"), ("pandas.core.indexes.category", "CategoricalIndex"),
    ("pandas.core.arrays.string_", "StringArray"), ("pandas.core.dtypes.dtypes", "CategoricalDtype"),
    ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"),
} | {
    ("pandas", name) for name in ("DataFrame", "Series", "Index", "RangeIndex", "MultiIndex", "DatetimeIndex",
                                  "TimedeltaIndex", "CategoricalIndex", "Categorical", "CategoricalDtype", "StringDtype",
                                  "Timestamp", "Timedelta", "Interval", "IntervalDtype", "DatetimeTZDtype")
} | {
    ("pandas.arrays", name) for name in ("DatetimeArray", "TimedeltaArray", "StringArray", "IntegerArray",
                                         "FloatingArray", "BooleanArray", "PeriodArray", "Categorical")
})  # fmt: skip
# numpy's DType classes (numpy.dtypes.Float64DType...) are data too.
_ALLOWED_MODULES = frozenset({"numpy.dtypes"})


class _DataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED or (module in _ALLOWED_MODULES and name.endswith("DType")):
            return super().find_class(module, name)
        raise UnsafeValue(f"{module}.{name} is not plain data")


def load_value(data: bytes) -> Any:
    """A kept value from its pickle, built only of data types (:class:`UnsafeValue` otherwise)."""
    return _DataUnpickler(io.BytesIO(data)).load()
