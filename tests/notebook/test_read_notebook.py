"""read_notebook without a server: found from what each frontend leaves, read as saved, paged."""

from __future__ import annotations

import os
import sys
import types

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell

from codingcode_jupyter.notebook.kernel.outputs import install_output_recorder, output_history


def write_notebook(path, cells):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = cells
    nbformat.write(notebook, str(path))
    return notebook


@pytest.fixture
def ip(monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    shell = InteractiveShell.instance()
    shell.reset(new_session=False)
    install_output_recorder(shell)
    yield shell
    shell.reset(new_session=False)


async def read(tools, ctx, **args):
    return await tools.get("read_notebook").run(args, ctx)


async def test_a_server_session_relative_to_an_ancestor_is_read_in_order(ip, tools, ctx, tmp_path, monkeypatch):
    folder = tmp_path / "root" / "analysis"
    folder.mkdir(parents=True)
    code = nbformat.v4.new_code_cell("x = 1", execution_count=3)
    unrun = nbformat.v4.new_code_cell("plot(x)")
    write_notebook(folder / "study.ipynb", [nbformat.v4.new_markdown_cell("# Study\nWhy x?"), code, unrun])
    # The server names the session relative to its root; the kernel runs in the notebook's folder.
    monkeypatch.chdir(folder)
    monkeypatch.setenv("JPY_SESSION_NAME", "analysis/study.ipynb")
    result = await read(tools, ctx)
    text = result.text_content
    assert not result.is_error, text
    assert str(folder / "study.ipynb") in text and "3 cells" in text and "saved" in text
    first, second, third = (text.index(f"--- cell {n} ") for n in (1, 2, 3))
    assert first < second < third
    assert "--- cell 1 (markdown" in text and "# Study\nWhy x?" in text
    assert "In [3] when saved" in text and "not run when saved" in text and "plot(x)" in text


async def test_the_cell_running_the_agent_is_marked_by_its_id(ip, tools, ctx, tmp_path, monkeypatch):
    agent = nbformat.v4.new_code_cell("%%agent\nread the notebook")
    other = nbformat.v4.new_code_cell("%%agent\nread the notebook")  # same source, another cell
    write_notebook(tmp_path / "nb.ipynb", [other, agent])
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "nb.ipynb"))
    history = output_history(ip)
    history.begin("%%agent\nread the notebook", cell_id=agent["id"])
    try:
        text = (await read(tools, ctx)).text_content
    finally:
        history.current = None
    marked = [line for line in text.splitlines() if "RUNNING THE AGENT" in line]
    assert len(marked) == 1 and marked[0].startswith("--- cell 2 ") and agent["id"] in marked[0]


async def test_large_notebooks_are_paged(ip, tools, ctx, tmp_path, monkeypatch):
    write_notebook(tmp_path / "big.ipynb", [nbformat.v4.new_code_cell(f"step_{n} = {n}") for n in range(1, 31)])
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "big.ipynb"))
    text = (await read(tools, ctx, limit=10)).text_content
    assert "step_10 = 10" in text and "step_11" not in text
    assert "call read_notebook with start=11" in text
    rest = (await read(tools, ctx, start=28)).text_content
    assert "step_28 = 28" in rest and "step_30 = 30" in rest and "step_27" not in rest
    past = await read(tools, ctx, start=99)
    assert past.is_error and "30 cells" in past.text_content


async def test_vs_code_names_the_file_in_the_namespace(ip, tools, ctx, tmp_path):
    write_notebook(tmp_path / "vs.ipynb", [nbformat.v4.new_markdown_cell("From VS Code")])
    ip.user_ns["__vsc_ipynb_file__"] = str(tmp_path / "vs.ipynb")
    text = (await read(tools, ctx)).text_content
    assert "From VS Code" in text and "__vsc_ipynb_file__" in text


async def test_colab_answers_with_the_live_notebook(ip, tools, ctx, monkeypatch):
    colab = types.ModuleType("google.colab")
    message = types.ModuleType("google.colab._message")
    live = {"cells": [{"cell_type": "markdown", "source": ["Live ", "in Colab"]}]}
    message.blocking_request = lambda kind, request="", timeout_sec=0: {"ipynb": live} if kind == "get_ipynb" else None
    colab._message = message
    monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab._message", message)
    text = (await read(tools, ctx)).text_content
    assert "Colab's frontend" in text and "Live in Colab" in text


async def test_without_a_frontend_it_is_a_clear_error(ip, tools, ctx):
    assert "JPY_SESSION_NAME" not in os.environ
    result = await read(tools, ctx)
    assert result.is_error and "No notebook is known for this kernel" in result.text_content
    assert "terminal IPython or a console" in result.text_content


async def test_a_console_session_is_named_as_such(ip, tools, ctx, tmp_path, monkeypatch):
    (tmp_path / "console-1").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JPY_SESSION_NAME", "console-1")
    result = await read(tools, ctx)
    assert result.is_error and "is not a notebook file" in result.text_content
