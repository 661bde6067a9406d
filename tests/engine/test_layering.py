"""The engine knows nothing of Jupyter: importing every engine module loads no Jupyter module."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import codingcode_jupyter.engine as engine

JUPYTER = ("IPython", "ipywidgets", "ipykernel", "jupyter_client", "traitlets", "comm")


@pytest.mark.slow
def test_every_engine_module_imports_without_jupyter():
    modules = sorted(m.name for m in pkgutil.walk_packages(engine.__path__, prefix="codingcode_jupyter.engine."))
    assert "codingcode_jupyter.engine.agent" in modules and "codingcode_jupyter.engine.runtime" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {JUPYTER!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"the engine pulled in Jupyter modules: {out}"
