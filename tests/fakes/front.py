"""A front for tests: it records what the engine shows and answers from a script.

It implements :class:`codingcode_jupyter.engine.front.Front` like the notebook's cell and the
terminal do, so an engine test drives a turn through the same contract a person would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from codingcode_jupyter.engine.approval.types import Answer, ApprovalRequest, Reply, UnconfinedAnswer, UnconfinedRequest
from codingcode_jupyter.engine.front import TrustAnswer
from codingcode_jupyter.engine.mcp.elicitation import ElicitationRequest, ElicitationResponse
from codingcode_jupyter.engine.trust.items import TrustItem

__all__ = ["ScriptedFront"]


class ScriptedFront:
    """Each channel answers from its script; an approval asked with none left is denied (and kept)."""

    def __init__(self, answers: list[Answer | Reply] | None = None, *,
                 elicited: ElicitationResponse | None = None, trust: TrustAnswer | None = None,
                 unconfined: UnconfinedAnswer | None = None) -> None:
        self.answers = list(answers or [])
        self.elicited = elicited
        self.trust = trust
        self.events: list[BaseModel] = []
        self.asked: list[ApprovalRequest] = []
        self.elicitations: list[ElicitationRequest] = []
        self.trust_asked: list[list[TrustItem]] = []
        self.unconfined = unconfined
        self.unconfined_asked: list[UnconfinedRequest] = []

    def __call__(self, event: BaseModel) -> None:
        self.events.append(event)

    def of(self, type_: str) -> list[Any]:
        return [event for event in self.events if getattr(event, "type", None) == type_]

    async def ask(self, request: ApprovalRequest) -> Answer | Reply:
        self.asked.append(request)
        return self.answers.pop(0) if self.answers else "deny"

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse:
        self.elicitations.append(request)
        return self.elicited or ElicitationResponse.decline("the test front has no answer for a form")

    async def ask_trust(self, items: list[TrustItem], project: Path) -> TrustAnswer | None:
        self.trust_asked.append(items)
        return self.trust

    async def ask_unconfined(self, request: UnconfinedRequest) -> UnconfinedAnswer | None:
        self.unconfined_asked.append(request)
        return self.unconfined
