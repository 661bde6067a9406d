"""The notebook's fronts keep the engine's front contract (engine/front.py) to the letter:
every channel, with the protocol's own parameters, so nothing is looked up by name at run time."""

from __future__ import annotations

import inspect

import pytest

from codingcode_jupyter.engine.front import Front
from codingcode_jupyter.notebook.text_view import TextView
from codingcode_jupyter.notebook.view import TurnView
from tests.fakes.front import ScriptedFront

CHANNELS = ("__call__", "ask", "elicit", "ask_trust", "ask_unconfined")


def _shape(function) -> tuple[list[str], bool]:
    return list(inspect.signature(function).parameters), inspect.iscoroutinefunction(function)


@pytest.mark.parametrize("cls", [TurnView, TextView, ScriptedFront])
def test_each_front_has_every_channel_as_the_protocol_says(cls):
    for name in CHANNELS:
        assert _shape(getattr(cls, name)) == _shape(getattr(Front, name)), f"{cls.__name__}.{name}"


async def test_the_views_are_fronts():  # a TurnView belongs to a running loop
    assert isinstance(TurnView(frontend_wait=0.1), Front)
    assert isinstance(TextView(), Front)


def test_a_view_without_a_channel_is_not_a_front():
    # The control: the check above can fail.
    class NoForms:
        def __call__(self, event): ...

        async def ask(self, request): ...

        async def ask_trust(self, items, project): ...

        async def ask_unconfined(self, request): ...

    assert not isinstance(NoForms(), Front)
    assert "elicit" in CHANNELS
