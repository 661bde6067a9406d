"""The front of an ACP turn, in the kernel: the engine's events and questions, relayed over the comm.

It shows nothing itself. Each event goes to the ACP process as JSON with what an editor needs
beside it and the kernel alone can say: a title in the words the notebook's cards use, and for
an edit the file's text before and after (an ACP diff carries whole texts; the kernel has the
file, the process may be elsewhere). Each question (a tool call, trusting the project, running
without a sandbox) is asked through :class:`Channel` and waits for the editor's answer; its
text is the terminal front's, so every front says the same thing.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence, cast

from ..engine.events import ToolCallFinished, ToolCallStarted
from ..notebook import words
from ..notebook.text_view import PROMPT, text_question
from .wire import ANSWERS, PREVIEW, TRUST_ANSWERS, UNCONFINED_ANSWERS

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..engine.approval.types import Answer, ApprovalRequest, UnconfinedAnswer, UnconfinedRequest
    from ..engine.front import TrustAnswer
    from ..engine.mcp.elicitation import ElicitationRequest, ElicitationResponse
    from ..engine.trust.items import TrustItem

__all__ = ["Channel", "RelayFront", "history", "MAX_DIFF_BYTES"]

log = logging.getLogger(__name__)

# A file bigger than this is not sent whole for the editor's diff (the card's diff still shows the change).
MAX_DIFF_BYTES = 1_000_000
_EDITS = ("write_file", "edit_file")


class Channel(Protocol):
    """The comm of the ACP process that runs the turn."""

    def send(self, data: dict[str, Any]) -> None:
        """Send one message to the ACP process (never raises)."""

    async def ask(self, kind: str, payload: dict[str, Any]) -> str | None:
        """Ask the editor ``kind`` of question; its answer, None when nobody is left to answer."""


def _text(path: Path) -> str | None:
    """The file's text, None when it is missing, too big for a diff, or not text."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_DIFF_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def planned_edit(project: Path, tool: str, tool_input: dict[str, Any]) -> dict[str, Any] | None:
    """``{"path", "old_text", "new_text"}`` of the edit a write_file/edit_file call asks for, or None."""
    raw = tool_input.get("path")
    if tool not in _EDITS or not isinstance(raw, str) or not raw:
        return None
    path = (project / raw).resolve() if not Path(raw).is_absolute() else Path(raw)
    before = _text(path)
    if tool == "write_file":
        content = tool_input.get("content")
        after = content if isinstance(content, str) else None
    else:
        old, new = tool_input.get("old_string"), tool_input.get("new_string")
        if before is None or not isinstance(old, str) or not isinstance(new, str) or old not in before:
            after = None
        else:
            after = before.replace(old, new, -1 if tool_input.get("replace_all") else 1)
    if after is None:
        return None
    return {"path": str(path), "old_text": before, "new_text": after}


class RelayFront:
    """The engine's :class:`~..engine.front.Front` for one session's turn over ACP."""

    def __init__(self, channel: Channel, session_id: str, project: Path) -> None:
        self.channel = channel
        self.session_id = session_id
        self.project = project
        # Edits under way: tool_use_id -> the planned edit (its diff is sent again with the file as left).
        self._edits: dict[str, dict[str, Any]] = {}

    def __call__(self, event: BaseModel) -> None:
        try:
            extra = self._extra(event)
        except Exception:  # noqa: BLE001 -- the event goes without what could not be added to it
            log.exception("the title or diff of an event could not be made")
            extra = None
        try:
            message: dict[str, Any] = {"type": "event", "session_id": self.session_id,
                                       "event": event.model_dump(mode="json")}
            if extra:
                message["extra"] = extra
            self.channel.send(message)
        except Exception:  # noqa: BLE001 -- a front never raises into the engine
            log.exception("an event could not be relayed to the ACP process")

    def _extra(self, event: BaseModel) -> dict[str, Any] | None:
        if isinstance(event, ToolCallStarted):
            sentence = words.action(event.tool, event.input, key=event.key, project=self.project)
            extra: dict[str, Any] = {"title": sentence[:1].upper() + sentence[1:]}
            edit = planned_edit(self.project, event.tool, event.input)
            if edit is not None:
                self._edits[event.tool_use_id] = edit
                extra["diff"] = edit
            return extra
        if isinstance(event, ToolCallFinished):
            edit = self._edits.pop(event.tool_use_id, None)
            if edit is not None and event.status == "ok":
                left = _text(Path(edit["path"]))
                return {"diff": {**edit, "new_text": left if left is not None else edit["new_text"]}}
        return None

    async def ask(self, request: ApprovalRequest) -> Answer:
        from ..notebook.widgets._text import reveal

        question = text_question(request, self.project).removesuffix(PROMPT).rstrip("\n")
        payload: dict[str, Any] = {"request": request.model_dump(mode="json"), "text": question}
        edit = planned_edit(self.project, request.tool, request.input)
        if edit is not None:
            # The editor shows the edit as its own diff: the card's words without the card's diff beside it.
            shown = reveal(words.relative(request.preview, self.project)).rstrip("\n")
            payload.update(diff=edit, summary=question.replace("\n" + shown, "") if shown else question)
        answer = await self.channel.ask("approval", payload)
        if answer == PREVIEW and request.dry_run is not None and request.dry_run.available:
            # The editor's Preview: the command runs in a throwaway copy of the project, and the same
            # question comes back with what it would change (offered once: the editor then decides).
            payload["preview_result"] = (await request.run_preview()).render()
            answer = await self.channel.ask("approval", payload)
        if answer is None:
            # Nobody is left to answer (the editor went away): as a terminal whose stdin closed.
            raise asyncio.TimeoutError()
        if answer in ANSWERS:
            return cast("Answer", answer)
        raise ValueError(f"the editor answered {answer!r}, which is not a known answer")

    async def ask_trust(self, items: list[TrustItem], project: Path) -> TrustAnswer | None:
        from ..notebook.widgets.trust import trust_lines

        text = "This project's files ask for things that loosen the agent:\n" + "\n".join(trust_lines(items, project))
        answer = await self.channel.ask("trust", {"text": text})
        return "trust" if answer == TRUST_ANSWERS[0] else "not_now" if answer == TRUST_ANSWERS[1] else None

    async def ask_unconfined(self, request: UnconfinedRequest) -> UnconfinedAnswer | None:
        from ..notebook.widgets.unconfined import unconfined_lines

        answer = await self.channel.ask("unconfined", {"request": request.model_dump(mode="json"),
                                                       "text": "\n".join(unconfined_lines(request))})
        return cast("UnconfinedAnswer", answer) if answer in UNCONFINED_ANSWERS else None

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse:
        """An MCP server's form: ACP's elicitation is not stable yet, so it is declined, and said so."""
        from ..engine.events import Notice
        from ..engine.mcp.elicitation import ElicitationResponse

        self(Notice(session_id=self.session_id, text=f"Declined MCP server {request.server}'s request for input "
                                                     f"({request.message}): forms are shown in a notebook only."))
        return ElicitationResponse.decline("acp")


def history(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A loaded conversation as the editor replays it: ``{"role", "text"}`` for what was said and
    ``{"role": "tool", "id", "tool", "input", "status"}`` for each call (its status from its result)."""
    failed = {block.get("tool_use_id") for message in messages if isinstance(message.get("content"), list)
              for block in message["content"]
              if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("is_error")}
    out: list[dict[str, Any]] = []
    for message in messages:
        role, content = message["role"], message.get("content")
        if isinstance(content, str):
            out.append({"role": role, "text": content})
            continue
        for block in content or []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and block.get("text"):
                out.append({"role": role, "text": block["text"]})
            elif kind == "tool_use":
                out.append({"role": "tool", "id": block.get("id"), "tool": block.get("name"),
                            "input": block.get("input") or {}, "status": "failed" if block.get("id") in failed else "completed"})
    return out
