"""What a tool is: a typed parameter model, an async execute, and the context it runs in.

A tool's JSON schema is built once, when the definition is made, with keys in canonical
(sorted) order, so the tools block of every request is byte-identical and prompt caching
holds. Failures the model should see are raised as :class:`ToolError`; anything else a
tool raises is reported to the model too, but as an unexpected failure.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol, Union

from pydantic import BaseModel, ConfigDict, ValidationError

from .. import messages
from ..approval.types import Asker, Outcome, Verdict
from ..events import EventSink, ToolProgress, Usage
from ..messages import ResultPartParam, ToolParam
from ..paths import resolve_path
from .access import BUILTIN_ACCESS, Origin, ToolAccess

if TYPE_CHECKING:
    import httpx

    from ..approval.review_state import ReviewerState
    from ..approval.unconfined_choice import UnconfinedChoice
    from ..checkpoints import CheckpointStore
    from ..messages import MessageParam
    from ..models.base import Model
    from ..project_settings import ProjectSettings
    from ..sandbox.bwrap import CommandSandbox
    from ..secret_values import KnownSecrets
    from ..settings import PermissionMode, WebSearchSettings
    from ..state import SessionState

__all__ = [
    "ToolError",
    "ToolResult",
    "ToolOutput",
    "ToolContext",
    "AgentTurn",
    "AgentRun",
    "ToolDefinition",
    "AnyArgs",
    "canonical_json_schema",
    "format_validation_error",
    "text_block",
    "ToolCall",
    "Approver",
    "declared_tool",
    "SessionParts",
    "BareParts",
    "SearchHit",
    "SearchBackend",
]

# One block of a tool's result (text, image, document...): the SDK's own tool_result content type.
ContentBlock = ResultPartParam


class ToolError(Exception):
    """A failure the model should read and can act on (bad path, no match, HTTP 404...)."""


class NoChange(ToolError):
    """Raised by a precheck: the call would change nothing (a file already has exactly this content).
    Not a failure: the call is done as it stands, nobody is asked, and the audit says why."""


def text_block(text: str) -> ContentBlock:
    return messages.text_block(text)


@dataclass
class ToolResult:
    """Content blocks in the Messages API's tool_result format, plus the error flag."""

    content: list[ContentBlock]
    is_error: bool = False
    # What a person sees for this result in a card or the audit trail; defaults to the text.
    display: str | None = None

    @classmethod
    def text(cls, text: str, *, is_error: bool = False) -> "ToolResult":
        return cls([text_block(text)], is_error=is_error)

    @property
    def text_content(self) -> str:
        parts = []
        for block in self.content:
            # A tool's output is not validated: a block without a type is named "[None]", not an error.
            if "type" in block and block["type"] == "text":
                parts.append(block["text"])
            else:
                parts.append(f"[{block.get('type')}]")
        return "\n".join(parts)


ToolOutput = Union[str, ToolResult, list[ContentBlock]]


class AnyArgs(BaseModel):
    """Parameters of a tool whose schema is given as JSON (MCP tools, hand-written json_schema)."""

    model_config = ConfigDict(extra="allow")


class AgentRun(Protocol):
    """The agent whose turn is running, for tools that act on its behalf (dispatch_agent) and
    for code the loop calls (compaction): its identity, its model and front, its turn's totals."""

    @property
    def agent(self) -> str: ...

    @property
    def session_id(self) -> str: ...

    @property
    def messages(self) -> list[MessageParam]:
        """The conversation as it stands (auto mode's reviewer reads the turn so far)."""
        ...

    @property
    def project(self) -> Path: ...

    @property
    def model(self) -> "Model": ...

    @property
    def approver(self) -> "Approver": ...

    @property
    def ask(self) -> "Asker | None": ...

    @property
    def emit(self) -> EventSink: ...

    @property
    def max_tokens(self) -> int: ...

    @property
    def model_name(self) -> str: ...

    def add_usage(self, usage: Usage, cost: float | None = None) -> None: ...

    def notify(self, text: str) -> None: ...


def _ignore(event: BaseModel) -> None:
    """The sink of a run nobody watches."""


@dataclass
class SearchHit:
    """One web search result."""

    title: str
    url: str
    snippet: str = ""


# A web search backend: (query, how many, the settings' webSearch, the call) -> hits.
SearchBackend = Callable[[str, int, "WebSearchSettings | None", "ToolContext"], Awaitable[list[SearchHit]]]


class SessionParts(Protocol):
    """What a tool or an approval layer may use of its session: its project and live settings, the
    command sandbox, the undo store, the person's standing answers, the seams a test or an embedder
    fills. The session's :class:`~..deps.SessionDeps` has these and what only the loop and the
    session use (MCP, hooks, sub-agents, the tool registry)."""

    @property
    def project(self) -> Path: ...

    @property
    def settings(self) -> "ProjectSettings": ...

    def sandbox(self) -> "CommandSandbox | None": ...

    @property
    def checkpoints(self) -> "CheckpointStore | None": ...

    @property
    def unconfined(self) -> "UnconfinedChoice": ...

    @property
    def reviewer(self) -> "ReviewerState": ...

    @property
    def http_transport(self) -> "httpx.AsyncBaseTransport | None": ...

    @property
    def web_search_backend(self) -> SearchBackend | None: ...

    @property
    def secrets(self) -> "KnownSecrets":
        """The values that never leave by value: redacted in results, refused in what goes out."""
        ...


@dataclass
class BareParts:
    """The parts of a call run outside any session (`permissions check`, a benchmark, a test): the
    project's settings and nothing else (no sandbox, no undo store)."""

    project: Path
    settings: "ProjectSettings"
    unconfined: "UnconfinedChoice"
    reviewer: "ReviewerState"
    secrets: "KnownSecrets"
    checkpoints: "CheckpointStore | None" = None
    http_transport: "httpx.AsyncBaseTransport | None" = None
    web_search_backend: SearchBackend | None = None

    @classmethod
    def of(cls, project: Path) -> "BareParts":
        from ..approval.review_state import ReviewerState
        from ..approval.unconfined_choice import UnconfinedChoice
        from ..project_settings import ProjectSettings
        from ..secret_values import KnownSecrets

        root = Path(project).resolve()
        return cls(project=root, settings=ProjectSettings(root), unconfined=UnconfinedChoice(), reviewer=ReviewerState(),
                   secrets=KnownSecrets(root))

    def sandbox(self) -> "CommandSandbox | None":
        return None


@dataclass(frozen=True)
class AgentTurn:
    """What every tool call of one agent's turn shares, made once per turn by the agent loop.

    The session's parts (``deps``), who is running (the session, the turn, the agent and its
    memory), where its events go and the turn's mode and approval timeout. A tool reads them
    through its :class:`ToolContext`.
    """

    deps: SessionParts
    session_id: str
    turn_id: int
    agent: str = "main"
    # What this agent remembers between its calls (files read, todo); None for a call run on its
    # own (no read-before-write check then).
    state: "SessionState | None" = None
    emit: EventSink = _ignore
    mode: "PermissionMode" = "default"
    approval_timeout: float | None = None
    # The agent running the turn; None outside a turn (tests, `permissions check`).
    run: AgentRun | None = None


@dataclass
class ToolContext:
    """What a running tool may know and do besides its arguments: its turn (one object, shared by
    every call of the turn) and what belongs to this one call.

    pydantic-ai's ``RunContext[Deps]`` is the model: one context carrying the session's parts
    and the call's own facts, not a bag of fields copied from the loop at every call. It is not
    generic: the engine has exactly one kind of parts, :class:`~..deps.SessionDeps`.
    """

    turn: AgentTurn
    tool_use_id: str = ""
    # Set when the call is cancelled; sync tools running in a thread poll it, async tools
    # simply receive CancelledError.
    cancelled: threading.Event = field(default_factory=threading.Event)
    # What PreToolUse hooks added for the model (additionalContext); the loop appends it to the result.
    hook_context: list[str] = field(default_factory=list)
    # Set for a tool that asks in place (ToolDefinition.asks_in_place) when a person must answer.
    ask_in_place: bool = False

    @classmethod
    def standalone(cls, project: Path, *, deps: SessionParts | None = None, session_id: str = "s", turn_id: int = 1,
                   tool_use_id: str = "", agent: str = "main", state: "SessionState | None" = None,
                   emit: EventSink = _ignore, mode: "PermissionMode" = "default",
                   approval_timeout: float | None = None, run: AgentRun | None = None) -> "ToolContext":
        """A context for a call run outside any agent's turn (`permissions check`, benchmarks, tests):
        ``deps`` default to the project's settings and nothing else (no sandbox, MCP, checkpoints)."""
        if deps is None:
            deps = BareParts.of(project)
        turn = AgentTurn(deps=deps, session_id=session_id, turn_id=turn_id, agent=agent, state=state, emit=emit,
                         mode=mode, approval_timeout=approval_timeout, run=run)
        return cls(turn, tool_use_id)

    def with_turn(self, **changes: Any) -> "ToolContext":
        """This call's context in a turn changed as given (e.g. ``emit=``: a tool running on a thread
        sends its events through the event loop); the call's own facts are the same objects."""
        return dataclasses.replace(self, turn=dataclasses.replace(self.turn, **changes))

    # The turn's facts, read through the call's context.
    @property
    def deps(self) -> SessionParts:
        return self.turn.deps

    @property
    def project_path(self) -> Path:
        return self.turn.deps.project

    @property
    def session_id(self) -> str:
        return self.turn.session_id

    @property
    def turn_id(self) -> int:
        return self.turn.turn_id

    @property
    def agent(self) -> str:
        return self.turn.agent

    @property
    def state(self) -> "SessionState | None":
        return self.turn.state

    @property
    def emit(self) -> EventSink:
        return self.turn.emit

    @property
    def mode(self) -> "PermissionMode":
        return self.turn.mode

    @property
    def approval_timeout(self) -> float | None:
        return self.turn.approval_timeout

    @property
    def run(self) -> AgentRun | None:
        return self.turn.run

    def progress(self, text: str) -> None:
        """Stream a line of progress (e.g. command output) to whoever renders the turn, without the values
        of known secrets (the cell shows it; a line that cannot be checked is not shown)."""
        try:
            text = self.deps.secrets.redact(text, fresh=False)
        except Exception:  # noqa: BLE001 -- fail closed: the result says what happened
            text = "(output withheld: it could not be checked for secret values)"
        self.emit(
            ToolProgress(
                session_id=self.session_id,
                turn_id=self.turn_id,
                agent=self.agent,
                tool_use_id=self.tool_use_id,
                text=text,
            )
        )

    def resolve(self, path: str | Path) -> Path:
        """A path argument resolved against the project root (symlinks and `..` followed)."""
        return resolve_path(self.project_path, path)


def _sort_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sort_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sort_keys(item) for item in value]
    return value


def canonical_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every object's keys sorted, so it serialises identically every time."""
    cleaned = dict(schema)
    cleaned.pop("title", None)
    ordered: dict[str, Any] = _sort_keys(cleaned)  # a dict in, a dict out
    return ordered


@functools.lru_cache(maxsize=512)
def _model_schema(parameters: type[BaseModel]) -> dict[str, Any]:
    # pydantic builds the schema anew at each call (1 to 2 ms for a tool); every session makes
    # its own dispatch_agent definition, so its opening would pay it each time. Never handed
    # out as is: canonical_json_schema copies it.
    return parameters.model_json_schema()


def format_validation_error(tool: str, error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "(arguments)"
        problems.append(f"{where}: {item['msg']}")
    return f"Invalid arguments for {tool}: " + "; ".join(problems)


Executor = Callable[[Any, ToolContext], Awaitable[ToolOutput]]
# The default of ToolDefinition.access, told apart by identity from a declared ToolAccess().
UNDECLARED = ToolAccess()


@dataclass
class ToolDefinition:
    """A tool the model can call.

    ``name`` is what the model sees on the wire (``^[a-zA-Z0-9_-]{1,64}$``);
    ``display_name`` is what a person reads and what rules match (``server:tool`` for MCP).
    """

    name: str
    description: str
    parameters: type[BaseModel]
    execute: Executor
    short_description: str | None = None
    deferred: bool = False
    # Shorthand for ``access.read_only``; after construction the two always agree.
    read_only: bool = False
    json_schema: dict[str, Any] | None = None
    source: Origin = "builtin"
    # What the arguments reach; undeclared: opaque for tools the project did not write
    # (custom, MCP), nothing beyond ``read_only`` for the others.
    access: ToolAccess = UNDECLARED
    display_name: str | None = None
    mcp_server: str | None = None
    # MCP tool annotations (readOnlyHint, destructiveHint, ...): shown, never trusted.
    annotations: dict[str, Any] | None = None
    # Renders what a call will do (a diff, the command and its directory) for a person
    # deciding on it; may return "" when the input says it all.
    preview: Callable[[Any, ToolContext], Awaitable[str]] | None = None
    # Checks, before anyone is asked, that the call can succeed at all (the file was read,
    # the text to replace is there); raises ToolError, which the model gets as the result.
    # The tool's own execute checks again: things may change while a person decides.
    precheck: Callable[[Any, ToolContext], Awaitable[None]] | None = None
    # Fills in, before anyone decides, what the call will really act on that its arguments only
    # name (run_cells: the code of the cells named by id), so the approval judges that and the
    # tool runs exactly what was judged. Returns the full input; raises ToolError.
    resolve_input: Callable[[Any, ToolContext], Awaitable[dict[str, Any]]] | None = None
    # When a person would be asked, the tool asks them itself, where the change shows (the
    # notebook's cells), instead of a card: the call goes ahead with ``ctx.ask_in_place`` set.
    asks_in_place: bool = False
    # For a tool that runs code: whether this call will run confined (a kernel's code in a confined
    # fork); the pipeline then judges it as it judges a sandboxed command. None: never confined.
    runs_confined: Callable[[dict[str, Any], "ToolContext"], bool] | None = None
    _schema: dict[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        raw = self.json_schema if self.json_schema is not None else _model_schema(self.parameters)
        self._schema = canonical_json_schema(raw)
        if self.short_description is None:
            first = self.description.strip().splitlines()[0] if self.description.strip() else self.name
            self.short_description = first[:120]
        if self.display_name is None:
            self.display_name = self.name
        if self.access is UNDECLARED:
            self.access = ToolAccess(read_only=self.read_only, opaque=self.source in ("custom", "mcp"))
        elif self.read_only and not self.access.read_only:
            self.access = dataclasses.replace(self.access, read_only=True)
        self.read_only = self.access.read_only

    @property
    def input_schema(self) -> dict[str, Any]:
        return self._schema

    def to_api(self) -> ToolParam:
        return {"name": self.name, "description": self.description, "input_schema": self._schema}

    def validate(self, raw_input: dict[str, Any]) -> BaseModel:
        """Parsed arguments, or ToolError with a message naming every bad field."""
        try:
            return self.parameters.model_validate(raw_input)
        except ValidationError as error:
            raise ToolError(format_validation_error(self.display_name or self.name, error)) from None

    async def run(self, raw_input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Validate and execute; every failure becomes an is_error result, never an exception.

        CancelledError passes through: cancellation belongs to the caller.
        """
        try:
            args = self.validate(raw_input)
            output = await self.execute(args, ctx)
        except ToolError as error:
            return ToolResult.text(str(error), is_error=True)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a bug or an unexpected failure in the tool
            return ToolResult.text(f"{self.display_name} failed: {type(error).__name__}: {error}", is_error=True)
        return to_result(output)


def to_result(output: ToolOutput) -> ToolResult:
    if isinstance(output, ToolResult):
        return output
    if isinstance(output, str):
        return ToolResult.text(output)
    if isinstance(output, list):
        return ToolResult(list(output))
    return ToolResult.text(json.dumps(output, default=str))


@dataclass(frozen=True)
class ToolCall:
    """One call to approve: its id, the tool's definition and the input as the model wrote it."""

    tool_use_id: str
    tool: ToolDefinition
    input: dict[str, Any]

    @property
    def definition(self) -> ToolDefinition:
        return self.tool


class Approver(Protocol):
    """The contract between the agent loop and the approval pipeline."""

    async def decide(self, call: ToolCall, ctx: ToolContext, ask: Asker | None) -> Verdict: ...

    def record_outcome(
        self, call: ToolCall, ctx: ToolContext, decision: Verdict, outcome: Outcome, duration_ms: float
    ) -> None: ...


async def _declared_only(args: Any, ctx: ToolContext) -> ToolOutput:
    raise ToolError("a tool declared for judging only cannot run")


def declared_tool(name: str) -> ToolDefinition:
    """A built-in tool as the judge sees it: its name and its declaration (``BUILTIN_ACCESS``), with
    nothing to run; the judge's tables check their examples through it, below the tools themselves."""
    return ToolDefinition(name=name, description=name, parameters=AnyArgs, execute=_declared_only,
                          access=BUILTIN_ACCESS[name])
