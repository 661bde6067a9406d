"""How the run_python judge sees a live value of the notebook's namespace (kernel/namespace.describe)."""

from __future__ import annotations

import http.client
import io
import os
import subprocess

import pandas as pd

from codingcode_jupyter.notebook.kernel.namespace import KernelAccess, describe


class _Raising:
    def __getattribute__(self, name: str) -> object:
        raise RuntimeError("no")


def test_modules_and_functions_are_named_as_code_imports_them() -> None:
    assert (describe(subprocess).kind, describe(subprocess).qualified) == ("module", "subprocess")
    assert describe(subprocess.run).qualified == "subprocess.run"
    assert describe(os.system).qualified == "os.system"  # posix.system, by the name code uses
    assert describe(subprocess.Popen).kind == "callable"


def test_data_and_the_persons_own_code_are_understood() -> None:
    namespace: dict[str, object] = {"__name__": "__main__"}
    exec("def mine(x):\n    return x\nclass Mine:\n    pass\nobj = Mine()\n", namespace)  # noqa: S102
    for value in ([1], {"a": 1}, "text", 3.5, pd.DataFrame({"a": [1]}), io.StringIO(), namespace["mine"],
                  namespace["Mine"], namespace["obj"], [].append):
        assert describe(value).kind == "data", value


def test_other_objects_are_not_and_a_raising_one_is_asked() -> None:
    assert describe(http.client.HTTPConnection("127.0.0.1", 9)).kind == "object"
    access = KernelAccess(namespace={"odd": _Raising(), "x": 1})
    odd = access.live_name("odd")
    assert odd is not None and odd.kind == "object"
    assert access.live_name("missing") is None
    assert access.live_name("x") is not None and access.live_name("x").kind == "data"  # type: ignore[union-attr]
