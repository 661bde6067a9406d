"""What a confined fork sends back is data only: frames are read whole, and a kept value's pickle
loads only plain data (a pickle that would call a program is refused; numpy and pandas load)."""

from __future__ import annotations

import datetime
import io
import pickle

import numpy as np
import pandas as pd
import pytest

from codingcode_jupyter.notebook.kernel import transfer


class _Runs:
    def __reduce__(self):
        import os

        return (os.system, ("echo owned",))


class _Gets:
    def __reduce__(self):
        return (getattr, (object, "__subclasses__"))


@pytest.mark.parametrize("value", [_Runs(), _Gets(), type("Local", (), {})()])
def test_a_pickle_that_is_not_plain_data_is_refused(value):
    with pytest.raises((transfer.UnsafeValue, pickle.PicklingError, AttributeError)):
        transfer.load_value(pickle.dumps(value))


def test_data_comes_back_whole():
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "t": pd.to_datetime(["2020-01-01", "2021-06-01"])})
    for value in (frame, frame["a"], np.arange(12.0).reshape(3, 4), {"k": [1, 2.5, "s", None, (1, 2)]},
                  datetime.datetime(2020, 1, 2, 3, 4), pd.Series(["a", "b"], dtype="category")):
        loaded = transfer.load_value(pickle.dumps(value, protocol=5))
        assert pickle.dumps(loaded, protocol=5) == pickle.dumps(value, protocol=5)


def test_frames_are_read_whole_and_split_across_reads():
    stream = io.BytesIO()
    transfer.write_frame(stream, transfer.VALUE, {"repr": "12"})
    transfer.write_frame(stream, transfer.KEPT, b"\x01\x00xDATA")
    data = stream.getvalue()
    frames, rest = transfer.read_frames(data[:7])
    assert frames == [] and rest == data[:7]
    frames, rest = transfer.read_frames(rest + data[7:])
    assert [kind for kind, _ in frames] == [transfer.VALUE, transfer.KEPT] and rest == b""
