"""The docs' list of approval layers is the code's list, in the code's order."""

from __future__ import annotations

import re
from pathlib import Path

from codingcode_jupyter.engine.approval.layers import layer_names
from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline

DOC = Path(__file__).resolve().parents[2] / "docs" / "approval.md"


def documented_layers(text: str) -> list[str]:
    section = text.split("## The layers", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\d+\. \*\*([a-z]+)\*\*", section, flags=re.MULTILINE)


def test_docs_list_the_layers_of_the_code_in_order(tmp_path):
    pipeline = ApprovalPipeline(tmp_path, python_hooks=[], audit=False)
    assert documented_layers(DOC.read_text(encoding="utf-8")) == layer_names(pipeline.layers)


def test_the_check_fails_on_a_list_out_of_order(tmp_path):
    """Positive control: two layers swapped in the text no longer match the code."""
    pipeline = ApprovalPipeline(tmp_path, python_hooks=[], audit=False)
    text = DOC.read_text(encoding="utf-8")
    swapped = text.replace("1. **secrets**", "1. **@**").replace("2. **rules**", "2. **secrets**").replace(
        "1. **@**", "1. **rules**")
    assert documented_layers(swapped) != layer_names(pipeline.layers)
    assert documented_layers(swapped)[:2] == ["rules", "secrets"]
