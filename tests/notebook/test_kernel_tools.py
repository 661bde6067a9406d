"""The kernel tools on a plain IPython shell (no kernel process): what they show and run."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell

from codingcode_jupyter.engine.tools.base import ToolContext
from codingcode_jupyter.engine.tools.registry import ToolRegistry
from codingcode_jupyter.notebook.kernel import errors as kt_errors, run_python as kt_run
from codingcode_jupyter.notebook.kernel.errors import last_error
from codingcode_jupyter.notebook.kernel.tools import kernel_tools


@pytest.fixture
def ip():
    shell = InteractiveShell.instance()
    shell.reset(new_session=False)
    kt_errors._ERRORS.pop(shell, None)
    for name in ("last_exc", "last_value", "last_type", "last_traceback"):
        if hasattr(sys, name):
            delattr(sys, name)
    yield shell
    shell.reset(new_session=False)


async def call(tools, tool_name, ctx, **args):
    return await tools.get(tool_name).run(args, ctx)


async def text(tools, tool_name, ctx, **args) -> str:
    result = await call(tools, tool_name, ctx, **args)
    assert not result.is_error, result.text_content
    return result.text_content


def test_read_only_flags_and_previews(tools):
    flags = {t.name: t.read_only for t in tools}
    assert flags == {"list_variables": True, "inspect_variable": True, "notebook_history": True,
                     "read_cell_output": True, "read_notebook": True, "run_python": False, "insert_cell": False,
                     "edit_notebook": False, "run_cells": False}
    assert tools.get("read_cell_output").access.key == "cell" and tools.get("read_cell_output").source == "kernel"
    assert tools.get("run_python").preview is not None and tools.get("insert_cell").preview is not None
    # Cell edits are reviewed on the cells, not on a card; run_cells is judged on the cells' code.
    assert tools.get("edit_notebook").asks_in_place and not tools.get("run_python").asks_in_place
    assert tools.get("run_cells").access.code == "code" and tools.get("run_cells").resolve_input is not None


async def test_preview_is_the_code(tools, ctx):
    tool = tools.get("run_python")
    assert await tool.preview(tool.validate({"code": "x = 1\nprint(x)"}), ctx) == "x = 1\nprint(x)"


# ---------------------------------------------------------------- list_variables


async def test_list_variables_describes_user_values_and_hides_the_rest(ip, tools, ctx):
    ip.run_cell(
        "import os\nimport numpy as np, pandas as pd\n"
        "df = pd.DataFrame({'a': range(100), 'b': [0.5] * 100})\n"
        "arr = np.zeros((30, 4))\nbig = list(range(1_000_000))\nname = 'x' * 10_000\n"
        "_private = 1\ndef helper(): pass\nclass Thing: pass\n"
    )
    out = await text(tools, "list_variables", ctx)
    lines = {line.split(":")[0]: line for line in out.splitlines() if ":" in line and not line.startswith("(")}
    assert set(lines) == {"df", "arr", "big", "name"}
    assert "pandas.DataFrame" in lines["df"] and "100×2" in lines["df"] and "a:int64" in lines["df"]
    assert "numpy.ndarray" in lines["arr"] and "30×4" in lines["arr"] and "960 B" in lines["arr"]
    assert "len 1000000" in lines["big"]
    # Never dumps a big object: each line stays short.
    assert max(len(line) for line in out.splitlines()) < 300
    assert "3 modules" in out and "2 functions/classes" in out
    assert "In:" not in out and "Out:" not in out and "get_ipython" not in out

    with_functions = await text(tools, "list_variables", ctx, include_functions=True, include_private=True)
    assert "helper:" in with_functions and "Thing:" in with_functions and "_private:" in with_functions
    only_df = await text(tools, "list_variables", ctx, pattern="d*")
    assert only_df.startswith("df:") and "arr" not in only_df


async def test_list_variables_survives_hostile_objects(ip, tools, ctx):
    ip.run_cell(
        "class Bad:\n"
        "    def __repr__(self): raise RuntimeError('no repr')\n"
        "    def __len__(self): raise RuntimeError('no len')\n"
        "bad = Bad()\n"
    )
    out = await text(tools, "list_variables", ctx)
    assert "bad: __main__.Bad" in out and "Bad instance" in out


async def test_list_variables_on_a_plain_dict(ctx):
    registry = ToolRegistry(kernel_tools(namespace={"x": 42, "__builtins__": {}}))
    out = await text(registry, "list_variables", ctx)
    assert out.startswith("x: int") and "42" in out


# ---------------------------------------------------------------- inspect_variable


async def test_inspect_dataframe_schema_head_describe(ip, tools, ctx):
    ip.user_ns["df"] = pd.DataFrame({"city": ["a", "b", None, "a"], "temp": [1.0, 2.5, 3.0, np.nan]})
    out = await text(tools, "inspect_variable", ctx, name="df", rows=2)
    assert "4 rows × 2 columns" in out
    assert "city: object, 1 null" in out or "city: str, 1 null" in out
    assert "temp: float64, 1 null" in out
    assert "head:" in out and "2.5" in out and "describe" in out and "mean" in out


async def test_inspect_array_stats(ip, tools, ctx):
    ip.user_ns["arr"] = np.array([[1.0, 2.0], [3.0, np.nan]])
    out = await text(tools, "inspect_variable", ctx, name="arr")
    assert "shape: (2, 2), dtype: float64" in out
    assert "min 1" in out and "max 3" in out and "mean 2" in out and "1 NaN" in out


async def test_inspect_object_does_not_run_properties(ip, tools, ctx):
    ip.run_cell(
        "calls = []\n"
        "class Model:\n"
        "    '''A tiny model.'''\n"
        "    def __init__(self): self.rate = 0.1; self.layers = [1, 2]\n"
        "    @property\n"
        "    def expensive(self): calls.append(1); return 0\n"
        "    def fit(self, x, y=None): pass\n"
        "m = Model()\n"
    )
    out = await text(tools, "inspect_variable", ctx, name="m")
    assert "rate: float = 0.1" in out and "layers: list" in out
    assert "expensive (property)" in out and "fit (method)" in out
    assert "A tiny model." in out
    assert ip.user_ns["calls"] == []


async def test_inspect_function_shows_signature_and_source(ip, tools, ctx):
    ip.run_cell("def area(w: float, h: float = 2) -> float:\n    return w * h\n", store_history=True)
    out = await text(tools, "inspect_variable", ctx, name="area")
    assert "area(w: float, h: float = 2) -> float" in out and "return w * h" in out


async def test_inspect_dotted_path_and_errors(ip, tools, ctx):
    ip.run_cell("import types\ncfg = types.SimpleNamespace(lr=0.01)\ndataframe = 1\n")
    assert "0.01" in await text(tools, "inspect_variable", ctx, name="cfg.lr")
    missing = await call(tools, "inspect_variable", ctx, name="datafram")
    assert missing.is_error and "dataframe" in missing.text_content
    code = await call(tools, "inspect_variable", ctx, name="__import__('os').system('true')")
    assert code.is_error and "not a variable name" in code.text_content
    attr = await call(tools, "inspect_variable", ctx, name="cfg.nope")
    assert attr.is_error and "no plain attribute 'nope'" in attr.text_content


async def test_inspect_never_runs_properties_or_getattr(ip, tools, ctx):
    ip.run_cell(
        "effects = []\n"
        "class Lazy:\n"
        "    @property\n"
        "    def data(self): effects.append('property'); return 1\n"
        "    def __getattr__(self, name): effects.append(name); return 2\n"
        "lazy = Lazy()\n"
    )
    prop = await call(tools, "inspect_variable", ctx, name="lazy.data")
    assert prop.is_error and "is a property" in prop.text_content and "run_python" in prop.text_content
    dynamic = await call(tools, "inspect_variable", ctx, name="lazy.anything")
    assert dynamic.is_error and "__getattr__" in dynamic.text_content
    assert "lazy: __main__.Lazy" in await text(tools, "list_variables", ctx)
    assert ip.user_ns["effects"] == []
    # C-level attributes (numpy's shape, pandas' columns) still read fine.
    ip.user_ns["frame"] = pd.DataFrame({"a": [1]})
    assert "Index" in await text(tools, "inspect_variable", ctx, name="frame.columns")
    assert "(1, 1)" in await text(tools, "inspect_variable", ctx, name="frame.shape")


# ---------------------------------------------------------------- notebook_history


async def test_history_shows_inputs_outputs_and_last_error_with_its_cell(ip, tools, ctx):
    first = ip.execution_count
    ip.run_cell("a = 21", store_history=True)
    ip.run_cell("a * 2", store_history=True)
    ip.run_cell("def f(v):\n    return v['missing']\nf({})", store_history=True)
    ip.run_cell("%%agent\nplease help", store_history=True)  # fails: no magic here, and is not recorded
    out = await text(tools, "notebook_history", ctx)
    assert f"In [{first}]:\na = 21" in out and f"Out[{first + 1}]: 42" in out
    assert "(agent cell) %%agent" in out
    assert f"Last exception in cell [{first + 2}]: KeyError: 'missing'" in out
    assert "return v['missing']" in out  # the failing line, from the cell's source
    assert "interactiveshell.py" not in out  # IPython's own frames are dropped
    error = last_error(ip)
    assert error.execution_count == first + 2 and "f({})" in error.cell


async def test_history_without_cells_or_errors(ip, tools, ctx):
    out = await text(tools, "notebook_history", ctx)
    assert "No exception so far." in out


# ---------------------------------------------------------------- run_python


async def test_run_python_output_result_and_namespace(ip, tools, ctx):
    ip.user_ns["x"] = 20
    out = await text(tools, "run_python", ctx, code="print('hello')\ny = x + 1\ny * 2")
    assert "[stdout]\nhello" in out and "[result] 42" in out
    assert ip.user_ns["y"] == 21


async def test_run_python_exception_traceback_names_the_line(ip, tools, ctx):
    result = await call(tools, "run_python", ctx, code="a = 1\nb = {}\nb['k']\n")
    assert result.is_error
    assert "KeyError: 'k'" in result.text_content and "b['k']" in result.text_content
    assert "run_python.py" not in result.text_content and "codingcode_jupyter" not in result.text_content
    assert ip.user_ns["a"] == 1  # what ran before the error stays, as in a cell


async def test_run_python_syntax_error_is_clear(tools, ctx):
    result = await call(tools, "run_python", ctx, code="def broken(:\n")
    assert result.is_error and "did not compile" in result.text_content and "SyntaxError" in result.text_content


async def test_run_python_top_level_await(ip, tools, ctx):
    out = await text(tools, "run_python", ctx, code="import asyncio\nawait asyncio.sleep(0.01)\nz = 5\nz")
    assert "[result] 5" in out and ip.user_ns["z"] == 5


async def test_run_python_timeout_cannot_be_swallowed(ip, tools, ctx):
    alarm_before = signal.getsignal(signal.SIGALRM)
    started = time.monotonic()
    code = "import time\ntry:\n    time.sleep(30)\nexcept Exception:\n    swallowed = True\n"
    result = await call(tools, "run_python", ctx, code=code, timeout=0.3)
    assert time.monotonic() - started < 5
    assert result.is_error and "timeout" in result.text_content
    assert "swallowed" not in ip.user_ns
    assert signal.getsignal(signal.SIGALRM) is alarm_before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


async def test_run_python_interrupt_cancels_the_turn_quickly(tools, ctx):
    sigint_before = signal.getsignal(signal.SIGINT)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(asyncio.CancelledError):
            await call(tools, "run_python", ctx, code="import time\ntime.sleep(30)")
    finally:
        timer.cancel()
    assert time.monotonic() - started < 5
    assert ctx.cancelled.is_set()
    # The previous SIGINT handler is back.
    assert signal.getsignal(signal.SIGINT) is sigint_before


async def test_run_python_system_exit_is_reported_not_fatal(tools, ctx):
    result = await call(tools, "run_python", ctx, code="raise SystemExit(3)")
    assert result.is_error and "SystemExit" in result.text_content


async def test_run_python_big_output_is_capped_and_streamed(tools, tmp_path):
    lines = []
    ctx = ToolContext.standalone(tmp_path, session_id="s", turn_id=1, emit=lambda e: lines.append(e.text))
    out = await text(tools, "run_python", ctx, code="for i in range(200_000):\n    print(i)")
    assert len(out) < kt_run.MAX_OUTPUT_CHARS + 2000
    assert "characters of output cut" in out and "199999" in out and "\n0\n" in out
    assert lines  # progress streamed while it ran


# ---------------------------------------------------------------- insert_cell


class FakeShell:
    def __init__(self):
        self.user_ns = {}
        self.user_ns_hidden = {}
        self.execution_count = 7
        self.inputs = []

    def set_next_input(self, text, replace=False):
        self.inputs.append((text, replace))


async def test_insert_cell_proposes_below_and_joins_proposals_of_one_cell(ctx):
    shell = FakeShell()
    registry = ToolRegistry(kernel_tools(shell))
    out = await text(registry, "insert_cell", ctx, code="print(1)\n")
    assert "Proposed a new cell below" in out
    assert shell.inputs[-1] == ("print(1)", False)
    await text(registry, "insert_cell", ctx, code="print(2)")
    assert shell.inputs[-1] == ("# %%\nprint(1)\n\n# %%\nprint(2)", False)
    shell.execution_count = 8
    await text(registry, "insert_cell", ctx, code="print(3)")
    assert shell.inputs[-1] == ("print(3)", False)


async def test_insert_cell_takes_several_cells_markdown_included(ctx):
    shell = FakeShell()
    registry = ToolRegistry(kernel_tools(shell))
    out = await text(registry, "insert_cell", ctx, cells=[
        {"cell_type": "markdown", "source": "## Clean the data\n\nDrop empty rows."},
        {"source": "df = df.dropna()"},
    ])
    assert shell.inputs[-1] == (
        "# %% [markdown]\n# ## Clean the data\n#\n# Drop empty rows.\n\n# %%\ndf = df.dropna()", False
    )
    assert "Proposed 2 cells below" in out and "Split Cell" in out and "VS Code" in out
    # The card shows exactly the cell that will be inserted.
    tool = registry.get("insert_cell")
    preview = await tool.preview(tool.validate({"cells": [{"cell_type": "markdown", "source": "# Title"}]}), ctx)
    assert preview == "%%markdown\n# Title"
    bad = await call(registry, "insert_cell", ctx)
    assert bad.is_error and "give cells" in bad.text_content


async def test_insert_cell_without_a_shell_is_a_clear_error(ctx):
    registry = ToolRegistry(kernel_tools(namespace={}))
    result = await call(registry, "insert_cell", ctx, code="x")
    assert result.is_error and "needs a notebook" in result.text_content


def test_the_declared_kernel_tool_names_are_the_kernel_tools():
    """The names the notebook declares to the engine (before settings are read) are exactly its tools'."""
    from codingcode_jupyter.notebook.kernel.names import KERNEL_TOOL_NAMES

    assert [tool.name for tool in kernel_tools(namespace={})] == list(KERNEL_TOOL_NAMES)
