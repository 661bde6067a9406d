"""Outputs recorded per cell, read back by read_cell_output and notebook_history, on a plain IPython shell."""

from __future__ import annotations

import base64
import io

import pytest
from IPython.core.interactiveshell import InteractiveShell

from codingcode_jupyter.notebook.kernel import outputs as kt_outputs, pictures
from codingcode_jupyter.notebook.kernel.outputs import Output, OutputHistory, install_output_recorder, output_history
from tests.notebook.outputs_helpers import image_blocks, png, png_size


@pytest.fixture
def ip():
    shell = InteractiveShell.instance()
    shell.reset(new_session=False)
    history = install_output_recorder(shell)
    history.max_cells, history.max_bytes = 200, 64 * 1024 * 1024
    yield shell
    shell.reset(new_session=False)


def run(ip, code: str) -> int:
    count = ip.execution_count
    ip.run_cell(code, store_history=True)
    return count


async def read(tools, ctx, **args):
    result = await tools.get("read_cell_output").run(args, ctx)
    return result


def show_png(ip, data: bytes) -> int:
    ip.user_ns["_png"] = data
    return run(ip, "from IPython.display import Image, display\ndisplay(Image(_png))")


async def test_a_displayed_image_comes_back_as_an_image_block(ip, tools, ctx):
    count = show_png(ip, png(300, 200))
    result = await read(tools, ctx, cell=count)
    assert not result.is_error, result.text_content
    images = image_blocks(result.content)
    assert [png_size(data) for data in images] == [(300, 200)]
    assert f"In [{count}]" in result.text_content and "image/png, 300×200 px" in result.text_content
    assert "display(Image(_png))" in result.text_content  # the cell's source comes along


async def test_html_table_reads_as_a_markdown_table_and_history_names_the_kinds(ip, tools, ctx):
    import pandas as pd

    ip.user_ns["pd"] = pd
    count = run(ip, "pd.DataFrame({'city': ['Oslo', 'Lima'], 'temp': [3, 19]})")
    result = await read(tools, ctx, cell=count)
    text = result.text_content
    assert "| city | temp |" in text and "| --- |" in text
    assert "Oslo | 3" in text and "Lima | 19" in text and "<td>" not in text
    shown = show_png(ip, png(10, 10))
    history = (await tools.get("notebook_history").run({}, ctx)).text_content
    assert f"In [{count}] (outputs: table)" in history and f"In [{shown}] (outputs: image/png)" in history


async def test_last_error_and_last(ip, tools, ctx):
    run(ip, "x = 1")
    failing = run(ip, "def f(d):\n    return d['nope']\nf({})")
    run(ip, "%%agent\nhelp")  # an agent cell is never "the last cell"
    last_error = (await read(tools, ctx, cell="last_error")).text_content
    assert f"In [{failing}]" in last_error and "KeyError: 'nope'" in last_error and "return d['nope']" in last_error
    last = (await read(tools, ctx, cell="last")).text_content
    assert f"In [{failing}]" in last


async def test_missing_cells_are_clear_errors(ip, tools, ctx):
    result = await read(tools, ctx, cell=10_000)
    assert result.is_error and "There is no cell [10000]" in result.text_content


async def test_many_images_are_paged_with_a_note(ip, tools, ctx):
    ip.user_ns["pngs"] = [png(20 + i, 20) for i in range(5)]
    count = run(ip, "from IPython.display import Image, display\nfor p in pngs: display(Image(p))")
    first = await read(tools, ctx, cell=count, max_images=2)
    assert [png_size(d)[0] for d in image_blocks(first.content)] == [20, 21]
    assert "3 more image(s) in this cell: call again with skip_images=2" in first.text_content
    rest = await read(tools, ctx, cell=count, max_images=8, skip_images=2)
    assert [png_size(d)[0] for d in image_blocks(rest.content)] == [22, 23, 24]


async def test_long_text_is_clipped_with_a_note(ip, tools, ctx):
    ip.user_ns["long"] = "word " * 20_000
    count = run(ip, "from IPython.display import display, Markdown\ndisplay(Markdown(long))")
    text = (await read(tools, ctx, cell=count, max_chars=2000)).text_content
    assert "text clipped at 2000 characters" in text and len(text) < 2600


async def test_cells_run_before_recording_come_from_what_ipython_kept(tools, ctx):
    ip = InteractiveShell.instance()
    history = output_history(ip)
    count = ip.execution_count
    # As if the recorder had not seen this cell: it is run, then forgotten by the recorder.
    ip.run_cell("print('before'); 6 * 7", store_history=True)
    history._drop(history.get(count))
    text = (await read(tools, ctx, cell=count)).text_content
    assert "ran before outputs were recorded" in text and "42" in text and "before" in text


async def test_clear_output_and_display_updates_are_followed(ip, tools, ctx):
    count = run(
        ip,
        "from IPython.display import display, clear_output, HTML\n"
        "display(HTML('<b>first</b>'))\nclear_output()\n"
        "handle = display(HTML('<b>old</b>'), display_id=True)\nhandle.update(HTML('<b>new</b>'))",
    )
    text = (await read(tools, ctx, cell=count)).text_content
    assert "new" in text and "old" not in text.split("```")[-1] and "first" not in text.split("```")[-1]


def test_budget_drops_the_oldest_cells_first():
    history = OutputHistory(max_cells=3, max_bytes=10_000)
    for number in range(1, 6):
        record = history.begin(f"cell {number}")
        history.add(Output("display_data", {"text/plain": "x" * 1000}))
        history.finish(record, number)
    assert [r.execution_count for r in history.cells()] == [3, 4, 5]
    assert history.get(1) is None and history.dropped_cells == 2
    history.max_bytes = 2_500  # shrinking the budget trims at once
    assert [r.execution_count for r in history.cells()] == [4, 5] and history.size <= 2_500


def test_one_output_over_the_budget_is_named_not_kept():
    history = OutputHistory(max_cells=10, max_bytes=4_000)
    record = history.begin("show big")
    history.add(kt_outputs.bundle_output("display_data", {"image/png": png(100, 100, noise=True)}, None, history.max_item()))
    history.finish(record, 1)
    (output,) = history.get(1).outputs
    assert output.data == {} and "image/png of" in output.notes[0] and "not kept" in output.notes[0]
    assert history.get(1).kinds() == ["image/png"]


def test_stream_text_keeps_its_start_and_end():
    output = Output("stream", {"text/plain": ""}, name="stdout")
    for index in range(20_000):
        output.append_stream(f"line {index}\n")
    assert output.text.startswith("line 0\n") and output.text.rstrip().endswith("line 19999")
    assert "characters of output cut" in output.text and output.size < kt_outputs.STREAM_HEAD + kt_outputs.STREAM_TAIL + 1


def test_pictures_downscale_large_images_with_pillow():
    from PIL import Image

    image = Image.new("RGB", (4000, 1000), (200, 30, 30))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    picture = pictures.prepare_image(buffer.getvalue(), "image/png", "plot")
    data = base64.b64decode(picture.block["source"]["data"])
    assert png_size(data) == (1568, 392) and "downscaled to 1568×392" in picture.description


def test_pictures_without_pillow_send_small_images_and_describe_huge_ones(monkeypatch):
    monkeypatch.setattr(pictures, "_pillow", lambda: None)
    small = pictures.prepare_image(png(2000, 100), "image/png", "wide")
    assert small.block is not None and "full size (Pillow is not installed" in small.description
    huge = pictures.prepare_image(png(9000, 10), "image/png", "huge")
    assert huge.block is None and "9000×10 px" in huge.description and "too large" in huge.description


def test_svg_without_a_rasteriser_is_described_with_its_words(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_cairosvg(name, *args, **kwargs):
        if name == "cairosvg":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cairosvg)
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300"><title>Sales</title><text x="1">Q3 revenue</text></svg>'
    picture = pictures.prepare_svg(svg, "chart")
    assert picture.block is None and "400 × 300" in picture.description
    assert "Sales" in picture.description and "Q3 revenue" in picture.description and "cairosvg" in picture.description
