"""No sandbox here: the person's once-per-session choice about commands that would run unconfined.

Where neither bubblewrap nor Landlock can confine a command (macOS, an old kernel), the
``sandbox`` layer would ask about every command the mode or a rule allowed. Instead, the first
time that happens in a session the front shows one card (:meth:`~..front.Front.ask_unconfined`)
with three answers:

- ``ask_each``: every such command is asked, as before;
- ``session``: for this session, what the judge resolves as harmless follows the mode and the
  rules, unconfined. Still asked: what it cannot resolve (by the ``rules`` layer), and what it
  sees would cross what the sandbox keeps (:func:`beyond_confinement`: a program that reaches the
  network by its nature, a write outside the project, the temp directory and ``allowWrite``, a
  credential store of the home);
- ``never``: ``sandbox.failIfUnavailable: true`` is saved in the person's own user settings,
  so on this machine no command runs unconfined (read-only ones still run).

The answer lives with the session (:attr:`~..deps.SessionDeps.unconfined`). Where nobody can
answer (no front attached: ``--approval-policy``, a script; or a front that could not show it)
``ask_each`` applies and one line says so; a saved ``failIfUnavailable`` is said the same way.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from ..events import Notice
from ..settings import SettingsError

if TYPE_CHECKING:
    from ..front import Front
    from ..project_settings import EffectiveSettings
    from ..tools.base import ToolContext
    from .subject import Subject

__all__ = ["UnconfinedAnswer", "UnconfinedRequest", "UnconfinedChoice", "UNCONFINED_CHOICES", "fail_closed_by",
           "save_never", "when_unavailable", "beyond_confinement"]

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


def fail_closed_by(settings: "EffectiveSettings") -> str | None:
    """The settings file that says ``sandbox.failIfUnavailable: true``, or None.

    Any file saying it holds (a stricter sandbox always applies): a project's ``false`` does not
    undo the person's "Never on this machine"."""
    for layer in settings.layers:
        if layer.settings.sandbox.failIfUnavailable:
            return str(layer.path)
    return None


def beyond_confinement(subject: "Subject", writable: list[Path]) -> str | None:
    """What the judge sees a command do that the sandbox would have stopped (None: nothing): such a
    command is asked even after "Run ordinary commands unconfined for this session"."""
    import tempfile

    from ..secret_files import credential_store
    from .program_traits import named

    downloaders = named("downloader")
    roots = [*writable, Path(tempfile.gettempdir()).resolve()]
    for part in [subject, *subject.inner]:
        command = part.command
        if command is None:
            continue
        if command.network:
            return f"it opens a network connection itself ({command.network[0]})"
        for simple in command.commands:
            reaching = sorted(simple.names & downloaders)
            if reaching:
                return f"{reaching[0]} reaches the network, which the sandbox keeps to the allowed domains"
        for ref in part.paths:
            path = ref.resolved
            if path is None:
                continue
            store = credential_store(path)
            if store is not None:
                return f"{ref.via} `{ref.raw}` reaches {store}, a credential store the sandbox hides"
            if ref.access in ("write", "unknown") and not any(path == r or r in path.parents for r in roots):
                return f"{ref.via} `{ref.raw}` writes outside the project ({path}), which the sandbox would refuse"
    return None


def save_never() -> Path:
    """Write ``sandbox.failIfUnavailable: true`` into the person's user settings (locked, atomic)."""
    from ..user_dir import user_dir
    from .amend import amend_settings

    def change(data: dict[str, object]) -> None:
        sandbox = data.setdefault("sandbox", {})
        if not isinstance(sandbox, dict):
            raise SettingsError("entry 'sandbox' must be an object, not overwriting it")
        sandbox["failIfUnavailable"] = True

    return amend_settings(user_dir() / "settings.json", change)


@dataclass
class UnconfinedChoice:
    """One session's answer, and the front that may be asked for it.

    Whoever runs a turn attaches its front (a notebook cell, a terminal) and detaches it at the
    end, as for MCP's requests; a turn where nobody may be asked attaches none."""

    answer: UnconfinedAnswer | None = None
    # Who gave the answer: "user", or "nobody" (no front, or it could not show the card).
    by: str = ""
    # The one line for runs without a card has been said in this session.
    told: bool = False
    _front: "Front | None" = field(default=None, repr=False)
    _asking: "asyncio.Future[UnconfinedAnswer] | None" = field(default=None, repr=False)

    def describe(self) -> str:
        """This session's answer, for ``%agent status``."""
        if self.answer is None:
            return "not asked yet in this session"
        said = {"ask_each": "ask for each command", "session": "ordinary commands run unconfined",
                "never": "never on this machine"}[self.answer]
        return f"this session: {said} ({'nobody could answer' if self.by == 'nobody' else 'your answer'})"

    def attach(self, front: "Front") -> None:
        self._front = front

    def detach(self, front: "Front") -> None:
        if self._front is front:
            self._front = None

    async def decide(self, ctx: "ToolContext", command: str, why: str) -> UnconfinedAnswer:
        """The session's answer, asking the attached front the first time (concurrent calls share the one card)."""
        if self.answer is not None:
            return self.answer
        if self._asking is not None:
            return await asyncio.shield(self._asking)
        from ..user_dir import user_dir

        self._asking = asyncio.get_running_loop().create_future()
        front = self._front
        answer: UnconfinedAnswer | None = None
        try:
            if front is not None:
                request = UnconfinedRequest(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent,
                                            tool_use_id=ctx.tool_use_id, command=command, why=why,
                                            settings_path=str(user_dir() / "settings.json"))
                answer = await front.ask_unconfined(request)
        except BaseException:
            # Interrupted before anyone answered: ask again next time.
            self._asking.cancel()
            self._asking = None
            raise
        if answer not in UNCONFINED_CHOICES:
            self.answer, self.by = "ask_each", "nobody"
            self.tell(ctx, why, "Nobody could answer whether to run commands unconfined here, so each such command "
                               "is asked (and denied when nobody answers); read-only commands run.")
        else:
            self.answer, self.by = answer, "user"
        self._asking.set_result(self.answer)
        self._asking = None
        return self.answer

    def tell(self, ctx: "ToolContext", why: str, which: str) -> None:
        """The one line of a session without the card: no sandbox, and which answer applies."""
        if self.told:
            return
        self.told = True
        ctx.emit(Notice(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent,
                        text=f"No command sandbox here ({why}). {which}"))
