"""Approval as data: what is decided, what is asked, what is answered.

Every layer of the pipeline, and the pipeline itself, speaks in one :class:`Verdict`; its
:class:`Decision` is ordered (allow < ask < deny), and verdicts combine by taking the
strictest, so no layer can loosen what an earlier one said. A ``forced`` ask is stricter than
any other ask: it is asked in every mode, bypass included, and only a person answers it. When
a person must answer, the approver awaits the front's :data:`Asker` callback with an
:class:`ApprovalRequest`, the one request type from the pipeline to the front and its events.
"""

from __future__ import annotations

import enum
from typing import Any, Awaitable, Callable, Literal, Optional

from pydantic import BaseModel, Field, PrivateAttr

from ..command_preview import CommandPreview, PreviewOffer

__all__ = ["Answer", "Reply", "ApprovalRequest", "Asker", "Decision", "Verdict", "strictest", "Outcome",
           "UnconfinedAnswer", "UnconfinedRequest", "UNCONFINED_CHOICES", "when_unavailable"]

Answer = Literal["allow", "deny", "always", "never"]
Outcome = Literal["ok", "error", "denied", "interrupted"]


class Decision(str, enum.Enum):
    """What is done with a call, ordered from the loosest to the strictest (allow < ask < deny)."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"

    @property
    def rank(self) -> int:
        return _RANK[self.value]

    def __str__(self) -> str:
        return self.value

    def __lt__(self, other: object) -> bool:
        return self.rank < other.rank if isinstance(other, Decision) else NotImplemented

    def __le__(self, other: object) -> bool:
        return self.rank <= other.rank if isinstance(other, Decision) else NotImplemented

    def __gt__(self, other: object) -> bool:
        return self.rank > other.rank if isinstance(other, Decision) else NotImplemented

    def __ge__(self, other: object) -> bool:
        return self.rank >= other.rank if isinstance(other, Decision) else NotImplemented


_RANK = {"allow": 0, "ask": 1, "deny": 2}


class Verdict(BaseModel):
    """What a layer says about one call, and in the end what the pipeline decided.

    ``kind`` is None only in a trail (``layers``): the layer looked and had nothing to decide,
    perhaps with a note in ``reason``. ``forced`` marks an ask no mode, rule, hook, reviewer or
    saved answer outranks (a built-in rule, what cannot be judged before it runs, a protected
    path, an unavailable sandbox): it is asked even in bypass mode, and "Always allow" allows
    it once without saving a rule.
    """

    kind: Optional[Decision]
    layer: str = ""
    rule: str | None = None
    reason: str = ""
    # Who decided: "rule", "readonly", "mode", "sandbox", "hook", "user", "timeout"...
    by: str = ""
    forced: bool = False
    input: dict[str, Any] = Field(default_factory=dict)
    # What each layer said, in order (on the pipeline's verdict).
    layers: list["Verdict"] = Field(default_factory=list)
    # For an ask: what "Always allow" / "Never allow" may save, narrowest first, and the exact rules.
    exact_rules: list[str] = Field(default_factory=list)
    allow_choices: list[list[str]] = Field(default_factory=list)
    deny_choices: list[list[str]] = Field(default_factory=list)
    # What an answering layer adds to the audit record (the reviewer: its model and latency).
    detail: dict[str, Any] | None = None
    # Why no rule may be saved from the card (the organisation's managed settings hold this call).
    policy: str = ""

    @property
    def strength(self) -> tuple[int, bool]:
        """How strict the verdict is: its decision, then a forced ask above any other ask."""
        return (self.kind.rank if self.kind is not None else -1, self.forced)

    def trail_entry(self) -> dict[str, Any]:
        """The verdict as one row of the audit record's ``layers``."""
        entry = {"layer": self.layer, "verdict": self.kind.value if self.kind is not None else "continue",
                 "rule": self.rule, "reason": self.reason}
        return {**entry, **self.detail} if self.detail else entry


def strictest(*verdicts: "Verdict | None") -> "Verdict | None":
    """The strictest verdict; between equally strict ones, the earliest (the higher tier) stands."""
    best: Verdict | None = None
    for verdict in verdicts:
        if verdict is not None and verdict.kind is not None and (best is None or verdict.strength > best.strength):
            best = verdict
    return best


class ApprovalRequest(BaseModel):
    """Everything a person needs to decide on one tool call."""

    session_id: str
    turn_id: int
    agent: str = "main"
    tool_use_id: str
    tool: str  # the display name: `execute_command`, `server:tool`
    input: dict[str, Any]
    # What will happen: a unified diff, the command and its directory, the URL...
    preview: str = ""
    layer: str = ""
    rule: str | None = None
    reason: str = ""
    sandboxed: bool | None = None
    annotations: dict[str, Any] | None = None
    # The argument that says what the call is about, as its tool declares it.
    key: str | None = None
    # The rule sets "Always allow" / "Never allow" may save, narrowest first (the first is the default).
    allow_choices: list[list[str]] = Field(default_factory=list)
    deny_choices: list[list[str]] = Field(default_factory=list)
    # "Always allow" can only allow this once: the question comes from something no saved rule outranks.
    forced: bool = False
    # The organisation's managed settings hold this call: the card offers only Allow (once) and Deny,
    # and says why in this line.
    policy: str = ""
    # What a "no" (or no answer) does, in words, when it is not that the call does not run (a question
    # asked after a command ran, about what it left).
    refused: str = ""
    # A command's card offers a preview: the command run in a throwaway copy of the project
    # (engine/sandbox/preview.py). None: not offered (not a command, or one that only reads).
    dry_run: PreviewOffer | None = None
    # What runs the preview; set by the engine, never sent anywhere (a private attribute).
    _run_preview: Callable[[], Awaitable[CommandPreview]] | None = PrivateAttr(default=None)

    def with_preview(self, offer: PreviewOffer, run: Callable[[], Awaitable[CommandPreview]] | None) -> "ApprovalRequest":
        self.dry_run = offer
        self._run_preview = run if offer.available else None
        return self

    async def run_preview(self) -> CommandPreview:
        """Run the offered preview (the front's Preview button); the project is not touched."""
        if self._run_preview is None:
            reason = self.dry_run.reason if self.dry_run is not None else "no preview is offered for this call"
            return CommandPreview(error=reason)
        return await self._run_preview()


class Reply(BaseModel):
    """An answer with the rule set the person picked for "Always allow" / "Never allow"."""

    answer: Answer
    rules: list[str] | None = None


Asker = Callable[[ApprovalRequest], Awaitable["Answer | Reply"]]


# -- no sandbox here: the once-per-session card (approval/unconfined_choice.py keeps its answer) ------

UnconfinedAnswer = Literal["ask_each", "session", "never"]

# The card's answers in the order it shows them, with the words every front uses.
UNCONFINED_CHOICES: dict[UnconfinedAnswer, str] = {
    "ask_each": "Ask for each command",
    "session": "Run ordinary commands unconfined for this session",
    "never": "Never on this machine",
}


def when_unavailable(refused: bool) -> str:
    """What happens to commands while no sandbox can run (status, doctor, the CLI, the session's notice)."""
    if refused:
        return "commands that would run unconfined are refused (sandbox.failIfUnavailable); read-only commands run"
    return ("the first command that would run unconfined asks once how to run such commands this session (ask for "
            "each, ordinary ones unconfined, never on this machine); read-only commands run")


class UnconfinedRequest(BaseModel):
    """What the card says: why there is no sandbox, the command that needs the answer, where "never" goes."""

    session_id: str
    turn_id: int
    agent: str = "main"
    tool_use_id: str
    # The command as the card shows it (invisible characters escaped).
    command: str
    # Why no sandbox can run it here (the probes' reason).
    why: str
    # The user settings file "Never on this machine" writes.
    settings_path: str
