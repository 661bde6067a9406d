"""The agent sees what the person sees, in a real kernel (ipykernel 7, and 6 when configured).

Cells display an image, an HTML table, print and fail; a %%agent cell's scripted model reads
them back with read_cell_output, and what it is sent (the local Messages API server keeps
every request) carries the image as an image block, the table as a table, the traceback. A
matplotlib figure and a DataFrame, where the kernel's Python has them; ``{fig}`` in a prompt
and ``%agent fix`` attach pictures.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.notebook.kernel_harness import Kernel
from tests.notebook.outputs_helpers import image_blocks, png_expr, png_size, png_source
from tests.notebook.test_kernel import _pythons

pytestmark = pytest.mark.kernel

SETUP = "%load_ext codingcode_jupyter\n%config CodingCode.frontend_wait = 1.0\n%config CodingCode.headless_timeout = 4.0"


@pytest.fixture(params=_pythons())
def kernel(request, tmp_path: Path):
    python = request.param
    version = subprocess.run([python, "-c", "import ipykernel; print(ipykernel.__version__)"],
                             capture_output=True, text=True).stdout.strip()
    wanted = "6." if request.node.callspec.id.endswith("ipykernel6") else "7."
    if not version.startswith(wanted):
        pytest.skip(f"{python} has ipykernel {version or 'missing'}, not {wanted}x")
    project = tmp_path / "project"
    project.mkdir()
    fake = FakeAnthropic().start()
    env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test"}
    k = Kernel(python, project, env, tmp_path / "jupyter")
    k.fake = fake
    k.python = python
    try:
        # Cells run before the extension is loaded: IPython keeps some of what they showed.
        k.ok("print('before loading'); 6 * 7")
        k.ok(SETUP)
        yield k
    finally:
        k.close()
        fake.stop()


def has_module(k: Kernel, name: str) -> bool:
    return subprocess.run([k.python, "-c", f"import {name}"], capture_output=True).returncode == 0


def results(request: dict) -> dict[str, dict]:
    """tool_use_id -> {"text": ..., "images": [bytes]} from the last user message of a request."""
    out = {}
    for block in request["messages"][-1]["content"]:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            content = block["content"] if isinstance(block["content"], list) else []
            out[block["tool_use_id"]] = {
                "text": "\n".join(c.get("text", "") for c in content if c.get("type") == "text"),
                "images": image_blocks(content),
            }
    return out


def agent(k: Kernel, prompt: str, *calls: dict) -> str:
    k.fake.add(*([Reply(list(calls))] if calls else []), Reply([text("Seen.")]))
    msg_id = k.execute(f"%%agent\n{prompt}")
    reply = k.reply(msg_id, timeout=90)
    assert reply["status"] == "ok", k.text_output(msg_id)
    return msg_id


def widget_html(k: Kernel) -> str:
    """The live widgets' HTML (the record a finished turn leaves repeats it, so it is left out)."""
    return "".join(s.get("value", "") for s in k.widgets.values()
                   if isinstance(s.get("value"), str) and "codingcode-final" not in (s.get("_dom_classes") or []))


def test_images_tables_streams_and_tracebacks_reach_the_model(kernel):
    image = kernel.ok(png_source(320, 240))["execution_count"]
    table = kernel.ok("from IPython.display import HTML\n"
               "HTML('<style>td {color: red}</style><table><tr><th>city</th><th>temp</th></tr>"
               "<tr><td>Oslo</td><td>3</td></tr></table>')")["execution_count"]
    printed = kernel.ok("import threading\nprint('hello from the kernel')\n"
                 "t = threading.Thread(target=print, args=('and from a thread',)); t.start(); t.join()")["execution_count"]
    failing = kernel.execute("def ratio(a, b):\n    return a / b\n\nratio(1, 0)")
    assert kernel.reply(failing)["status"] == "error"
    agent(
        kernel, "What do my cells show?",
        tool_use("read_cell_output", {"cell": image}, id="img"),
        tool_use("read_cell_output", {"cell": table}, id="tbl"),
        tool_use("read_cell_output", {"cell": printed}, id="out"),
        tool_use("read_cell_output", {"cell": "last_error"}, id="err"),
        tool_use("read_cell_output", {"cell": 1}, id="old"),
        tool_use("notebook_history", {"cells": 10}, id="hist"),
    )
    seen = results(kernel.fake.requests[1])
    assert [png_size(data) for data in seen["img"]["images"]] == [(320, 240)]
    assert f"In [{image}]" in seen["img"]["text"] and "image/png, 320×240 px" in seen["img"]["text"]
    shown = seen["tbl"]["text"].split(f"Out[{table}]:")[1]  # after the cell's source
    assert "| city | temp |" in shown and "| Oslo | 3 |" in shown
    assert "color: red" not in shown and "<td>" not in shown and not seen["tbl"]["images"]
    assert "[stdout]" in seen["out"]["text"] and "hello from the kernel" in seen["out"]["text"]
    assert "and from a thread" in seen["out"]["text"]
    assert "ZeroDivisionError: division by zero" in seen["err"]["text"] and "return a / b" in seen["err"]["text"]
    assert "ratio(1, 0)" in seen["err"]["text"]
    # A cell run before %load_ext: what IPython kept of it.
    assert "ran before outputs were recorded" in seen["old"]["text"] and "42" in seen["old"]["text"]
    assert "before loading" in seen["old"]["text"]
    history = seen["hist"]["text"]
    assert f"In [{image}] (outputs: image/png)" in history and f"In [{table}] (outputs: table)" in history
    assert f"In [{printed}] (outputs: stdout)" in history


def test_a_prompt_reference_attaches_the_picture_and_a_missing_one_says_so(kernel):
    kernel.ok(f"from IPython.display import Image\nimport base64\npic = Image({png_expr(96, 64)})")
    agent(kernel, "Describe {pic} and {nothere}.")
    message = kernel.fake.requests[-1]["messages"][-1]["content"]
    assert isinstance(message, list) and message[0]["type"] == "text"
    assert "`pic` (" in message[0]["text"] and "image 1 attached below" in message[0]["text"]
    assert [png_size(data) for data in image_blocks(message)] == [(96, 64)]
    assert "{nothere}" in message[0]["text"]
    notices = [line for line in widget_html(kernel).split("</div>") if "Not expanded" in line]
    assert len(notices) == 1 and "{nothere}" in notices[0]


def test_agent_fix_sends_the_cell_its_traceback_and_the_image_it_displayed(kernel):
    failing = kernel.execute(png_source(50, 40) + "\nraise ValueError('the plot is wrong: {bad}')")
    assert kernel.reply(failing)["status"] == "error"
    kernel.fake.add(Reply([text("Fixed.")]))
    kernel.ok("%agent fix")
    message = kernel.fake.requests[-1]["messages"][-1]["content"]
    sent = json.dumps(message)
    assert "Fix the error in cell" in sent and "ValueError: the plot is wrong: {bad}" in sent
    assert [png_size(data) for data in image_blocks(message)] == [(50, 40)]


def test_a_matplotlib_figure_and_a_dataframe(kernel):
    if not (has_module(kernel, "matplotlib") and has_module(kernel, "pandas")):
        pytest.skip("the kernel's Python has no matplotlib or pandas")
    figure = kernel.ok("%matplotlib inline\nimport matplotlib.pyplot as plt\n"
                "fig, ax = plt.subplots(figsize=(5, 4))\nax.plot([1, 4, 2, 3])\nax.set_title('growth')\n"
                "print(plt.get_backend(), plt.rcParams['figure.dpi'])")
    backend, dpi = figure["output"].split()[:2]
    frame = kernel.ok("import pandas as pd\npd.DataFrame({'name': ['ada', 'bo'], 'score': [9.5, 7.25]})")
    agent(
        kernel, "Look at {fig}.",
        tool_use("read_cell_output", {"cell": figure["execution_count"]}, id="fig"),
        tool_use("read_cell_output", {"cell": frame["execution_count"]}, id="df"),
    )
    # The inline backend renders with Agg, trimmed to what was drawn: about 5×4 inches at its dpi.
    assert "inline" in backend
    expected = (5 * float(dpi), 4 * float(dpi))
    prompt = kernel.fake.requests[-2]["messages"][-1]["content"]
    seen = results(kernel.fake.requests[-1])
    for data in [*image_blocks(prompt), *seen["fig"]["images"]]:
        width, height = png_size(data)
        assert 0.75 * expected[0] <= width <= 1.05 * expected[0] and 0.75 * expected[1] <= height <= 1.05 * expected[1]
    assert len(image_blocks(prompt)) == 1 and len(seen["fig"]["images"]) == 1
    assert "| name | score |" in seen["df"]["text"] and "| 0 | ada | 9.50 |" in seen["df"]["text"]
