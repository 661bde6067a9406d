"""The public API is ``codingcode_jupyter.__all__``, and the README lists exactly that surface."""

from __future__ import annotations

import re
from pathlib import Path

import codingcode_jupyter

README = Path(__file__).resolve().parents[2] / "README.md"
# Named by the README as "the extension hooks", not one by one.
EXTENSION_HOOKS = {"load_ipython_extension", "unload_ipython_extension"}


def listed_names(text: str) -> set[str]:
    """The names the README's "The public API is ..." sentence lists (in backquotes)."""
    match = re.search(r"The public API is what `codingcode_jupyter.__all__` lists:(.*?)\.\n", text, re.S)
    assert match is not None, "the README no longer says what the public API is"
    return set(re.findall(r"`([A-Za-z_]+)`", match.group(1)))


def test_the_readme_lists_the_public_api_and_nothing_else() -> None:
    assert listed_names(README.read_text(encoding="utf-8")) == set(codingcode_jupyter.__all__) - EXTENSION_HOOKS


def test_every_public_name_resolves() -> None:
    for name in codingcode_jupyter.__all__:
        assert getattr(codingcode_jupyter, name) is not None


def test_a_name_the_readme_adds_is_caught() -> None:
    # Control: a README naming one more name does not match __all__.
    text = README.read_text(encoding="utf-8").replace("`ToolError`", "`ToolError`, `Session`", 1)
    assert listed_names(text) != set(codingcode_jupyter.__all__) - EXTENSION_HOOKS
