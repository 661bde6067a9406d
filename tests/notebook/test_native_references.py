"""Prompt references ({name}) and the %agent fix prompt, without a kernel."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell

from codingcode_jupyter.notebook.kernel import errors as kt_errors
from codingcode_jupyter.notebook.kernel.errors import install_error_recorder
from codingcode_jupyter.notebook.kernel.outputs import install_output_recorder, install_recorders
from codingcode_jupyter.notebook.references import NoErrorToFix, expand_references, fix_prompt


def test_reference_becomes_a_short_description():
    ns = {"df": pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}), "n": 3}
    out = expand_references("Plot {df} against {n} points", ns)
    assert out.references == ["df", "n"] and out.unresolved == []
    assert "`df` (pandas.DataFrame, 2×2" in out.text and "a:int64" in out.text
    assert "`n` (int" in out.text and "— 3)" in out.text
    assert "{" not in out.text


def test_escapes_unknown_names_and_non_references_stay():
    ns = {"x": 1}
    out = expand_references('Use {{x}} literally, keep {"a": 1}, {0}, {missing} and {x}', ns)
    assert out.text.startswith("Use {x} literally")
    assert '{"a": 1}' in out.text and "{0}" in out.text and "{missing}" in out.text
    assert out.text.endswith("`x` (int, 28 B — 1)")
    assert out.unresolved == ["missing"]


def test_code_spans_and_fences_are_left_alone():
    ns = {"x": np.arange(3)}
    prompt = "Fix `f'{x}'` and\n```python\nprint(f'{x}')\n```\nbut describe {x}"
    out = expand_references(prompt, ns)
    assert "`f'{x}'`" in out.text and "print(f'{x}')" in out.text
    assert out.text.count("numpy.ndarray") == 1


def test_dotted_reference_reads_plain_attributes_but_never_runs_properties():
    class Config:
        calls = 0
        rate = 0.5

        @property
        def boom(self):
            Config.calls += 1
            return 1

    ns = {"cfg": Config()}
    out = expand_references("{cfg.rate} {cfg.boom}", ns)
    assert out.references == ["cfg.rate"] and out.unresolved == ["cfg.boom"]
    assert "`cfg.rate` (float" in out.text and "{cfg.boom}" in out.text
    assert Config.calls == 0
    hostile = expand_references("{__import__('os')}", ns)
    assert hostile.text == "{__import__('os')}" and hostile.references == []


def test_many_references_are_capped():
    ns = {f"v{i}": i for i in range(50)}
    out = expand_references(" ".join(f"{{v{i}}}" for i in range(50)), ns)
    assert len(out.references) == 20 and "{v49}" in out.text


def test_fix_prompt_holds_the_cell_and_traceback():
    ip = InteractiveShell.instance()
    kt_errors._ERRORS.pop(ip, None)
    install_error_recorder(ip)
    ip.run_cell("data = {'k': 1}\ndata['q']", store_history=True)
    prompt = fix_prompt(ip, "keep it short")
    assert "data['q']" in prompt and "KeyError: 'q'" in prompt
    assert "Traceback (most recent call last)" in prompt and "insert_cell" in prompt
    assert prompt.endswith("Also: keep it short")


def test_fix_without_an_error_is_a_clear_error(monkeypatch):
    for name in ("last_exc", "last_value"):
        monkeypatch.delattr(sys, name, raising=False)
    with pytest.raises(NoErrorToFix, match="nothing to fix"):
        fix_prompt(None)


# ---------------------------------------------------------------- pictures in the prompt


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(4, 3), dpi=100)
    axes.plot([1, 3, 2])
    return figure


def test_a_figure_reference_attaches_the_picture():
    from tests.notebook.outputs_helpers import image_blocks, png_size

    figure = _figure()
    out = expand_references("Why does {fig} dip?", {"fig": figure, "n": 1})
    assert out.references == ["fig"] and "image 1 attached below" in out.text
    content = out.content()
    assert content[0] == {"type": "text", "text": out.text}
    (data,) = image_blocks(content)
    width, height = png_size(data)
    assert 300 <= width <= 400 and 200 <= height <= 300  # 4×3 in at 100 dpi, trimmed to what was drawn
    # Without a picture the prompt stays a string.
    assert expand_references("{n}", {"n": 1}).content() == "`n` (int, 28 B — 1)"


def test_out_and_underscore_references_attach_what_the_cell_showed():
    from tests.notebook.outputs_helpers import image_blocks, png, png_size

    ip = InteractiveShell.instance()
    install_output_recorder(ip)
    ip.user_ns["_png"] = png(64, 48)
    count = ip.execution_count
    ip.run_cell("from IPython.display import Image, display\ndisplay(Image(_png))\n41 + 1", store_history=True)
    out = expand_references(f"Explain {{Out[{count}]}} and {{_}}", shell=ip)
    assert out.references == [f"Out[{count}]", "_"] and out.unresolved == []
    assert f"`Out[{count}]` (int" in out.text and f"cell [{count}] displayed: image 1 attached below" in out.text
    assert [png_size(d) for d in image_blocks(out.content())] == [(64, 48)]
    missing = expand_references("and {Out[99999]}", shell=ip)
    assert missing.unresolved == ["Out[99999]"] and missing.content() == "and {Out[99999]}"


def test_fences_of_any_length_are_left_alone():
    out = expand_references("````\n```\n{x}\n````\n{x}", {"x": 1})
    assert out.text.count("{x}") == 1 and out.text.endswith("`x` (int, 28 B — 1)")


def test_fix_prompt_attaches_what_the_failing_cell_displayed():
    from tests.notebook.outputs_helpers import image_blocks, png

    ip = InteractiveShell.instance()
    kt_errors._ERRORS.pop(ip, None)
    install_recorders(ip)
    ip.user_ns["_png"] = png(30, 20)
    count = ip.execution_count
    ip.run_cell("from IPython.display import Image, display\ndisplay(Image(_png))\nraise ValueError('bad {axis}')",
                store_history=True)
    prompt = fix_prompt(ip)
    assert f"What it displayed before failing: {{Out[{count}]}}" in prompt
    expanded = expand_references(prompt, shell=ip)
    # The cell's and the traceback's braces are code: only the images' reference expands.
    assert expanded.references == [f"Out[{count}]"] and "bad {axis}" in expanded.text
    assert len(image_blocks(expanded.content())) == 1
