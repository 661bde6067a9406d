"""Prompt references ({name}) and the %agent fix prompt, without a kernel."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell

from codingcode_jupyter.notebook import kernel as kt
from codingcode_jupyter.notebook.kernel import errors as kt_errors
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
    kt.install_error_recorder(ip)
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
