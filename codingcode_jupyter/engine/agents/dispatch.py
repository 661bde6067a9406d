"""dispatch_agent: run a sub-agent under a profile and return its final answer.

The child is an :class:`~..agent.AgentLoop` of its own: its own conversation (it never sees
the parent's), its own :class:`~..state.SessionState` (its todo list and read stamps are
its own), its profile's tools through the same resolver, its profile's step limit. What it
shares with the parent is the project, the session id, the approver (every call passes the
same approval pipeline, labelled with the child's name) and the front (``emit``, ``ask``),
so its stream and its approval cards appear in the same cell. Its permission mode is the
parent's, tightened by its profile's ``permission_mode`` (loosened only when that mode is
trusted: see :func:`~.profiles.profile_mode`).

dispatch_agent is read-only, so several calls in one assistant message run concurrently;
awaiting the child inside the tool means cancelling the parent cancels the child, whose
loop answers its own unfinished calls before the cancellation goes on up.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from pydantic import BaseModel, Field

from ..agent import AgentLoop, Conversation
from ..deps import SessionDeps
from ..events import ErrorEvent, TurnDone
from ..prompts import agent_profiles_section, build_system_prompt
from ..state import SessionState
from ..tools.access import ToolAccess
from ..tools.base import ToolContext, ToolDefinition, ToolError
from ..tools.registry import ToolRegistry
from ..tools.resolver import SessionToolResolver, ToolVisibilityPolicy
from ..transcript import MessageRecord, SubagentRecord, Transcript, TurnRecord, sessions_dir
from .env import MAX_DEPTH, DispatchEnv
from .profiles import (
    DISPATCH_TOOL_NAME,
    AgentProfile,
    ProfileError,
    profile_mode,
)

if TYPE_CHECKING:
    from ..mcp.manager import McpManager
    from ..plugins.catalog import Plugin

__all__ = [
    "DEFAULT_SUBAGENT_STEPS",
    "DispatchArgs",
    "agent_depth",
    "agent_profiles_section",
    "dispatch_agent_tool",
    "profile_policy",
    "profile_resolver",
    "profile_system_prompt",
]

# main (0) -> sub-agent (1) -> sub-sub-agent (2); an agent at depth 2 never gets dispatch_agent.
DEFAULT_SUBAGENT_STEPS = 50


def agent_depth(agent: str) -> int:
    """How many dispatches deep an agent label is: "main" 0, "main/explore#1" 1."""
    return agent.count("/")


def profile_policy(profile: AgentProfile, base: ToolVisibilityPolicy | None) -> ToolVisibilityPolicy:
    """The session's visibility policy narrowed by the profile's mcp_servers (never widened)."""
    policy = (base or ToolVisibilityPolicy()).model_copy(deep=True)
    if profile.mcp_servers is not None:
        wanted = set(profile.mcp_servers)
        policy.allowed_mcp_servers = wanted if policy.allowed_mcp_servers is None else policy.allowed_mcp_servers & wanted
    return policy


def profile_resolver(
    registry: ToolRegistry,
    profile: AgentProfile | None,
    *,
    state: SessionState,
    mcp: "McpManager | None" = None,
    policy: ToolVisibilityPolicy | None = None,
    can_dispatch: bool,
    more_tools: list[ToolDefinition] | None = None,
) -> SessionToolResolver:
    """The tool resolver of an agent running ``profile`` (None: the plain main agent); ``more_tools``
    are the session's own (load_skill)."""
    extra = ([dispatch_agent_tool()] if can_dispatch else []) + list(more_tools or [])
    if profile is None:
        return SessionToolResolver(registry, state=state, mcp=mcp, policy=policy, extra_tools=extra)
    return SessionToolResolver(
        registry,
        state=state,
        mcp=mcp,
        policy=profile_policy(profile, policy),
        profile_tools=list(profile.tools) if profile.tools is not None else None,
        extra_tools=extra,
        denied_tools=profile.disallowed_tools,
    )


def profile_system_prompt(
    project: Path,
    profile: AgentProfile | None,
    dispatchable: list[AgentProfile],
    *,
    agent: str = "main",
    plugins: Sequence["Plugin"] = (),
) -> str:
    """The system prompt of an agent: the profile's body (or the default), the project, the
    project's instructions, and the sub-agents it may dispatch."""
    sections = []
    if agent != "main":
        sections.append(
            f"You run as the sub-agent '{agent}'. The agent that dispatched you sees only your final "
            "message, and nobody can answer questions while you work: finish the task as well as you "
            "can and put the whole answer in your last message."
        )
    listing = agent_profiles_section(dispatchable)
    if listing:
        sections.append(listing)
    sections.extend(_skill_sections(project, profile, agent, plugins))
    return build_system_prompt(
        project, "\n\n".join(sections), base=profile.system_prompt if profile is not None else None
    )


def _skill_sections(project: Path, profile: AgentProfile | None, agent: str,
                    plugins: Sequence["Plugin"] = ()) -> list[str]:
    """The skills the main agent may load (names and descriptions), and the instructions of
    the skills a profile names (Claude Code's `skills:` of an agent file)."""
    from ..skills import load_skills, skill_bodies, skills_section

    catalog = load_skills(project, plugins=plugins)
    sections = []
    if agent == "main":
        listing = skills_section(catalog)
        if listing:
            sections.append(listing)
    if profile is not None and profile.skills:
        bodies, missing = skill_bodies(catalog, profile.skills)
        if bodies:
            sections.append("Skills this agent works with (follow them):\n" + bodies)
        if missing:
            sections.append(f"(Skills named by this agent's profile but not found: {', '.join(missing)}.)")
    return sections


class DispatchArgs(BaseModel):
    """Arguments of dispatch_agent."""

    agent: str = Field(min_length=1, description="The sub-agent profile to run (one listed in the system prompt).")
    prompt: str = Field(
        min_length=1,
        description="The complete task: the sub-agent sees nothing of this conversation, so include every detail it needs.",
    )


_SAFE = re.compile(r"[^A-Za-z0-9_-]+")


def _transcript(env: DispatchEnv, session_id: str, agent: str) -> Transcript | None:
    if not env.keep_transcripts:
        return None
    # In a directory of its own: list_sessions only globs the top level for sessions.
    name = _SAFE.sub("-", agent.replace("/", "__"))
    return Transcript(sessions_dir(env.project) / session_id / "agents" / f"{name}.jsonl")


async def _dispatch(args: DispatchArgs, ctx: ToolContext) -> str:
    # Sub-agents run with their parent's parts: only a session's (not a bare call's) has what they need.
    deps = ctx.deps
    parent = ctx.run
    if not isinstance(deps, SessionDeps) or deps.dispatch is None or parent is None:
        raise ToolError("Sub-agents are not available in this session (no dispatch environment).")
    env = deps.dispatch
    depth = agent_depth(parent.agent) + 1
    if depth > MAX_DEPTH:
        raise ToolError(f"Sub-agents may be nested at most {MAX_DEPTH} deep; '{parent.agent}' cannot dispatch another.")
    catalog = env.catalog()
    try:
        profile = catalog.get(args.agent.strip())
    except ProfileError as error:
        raise ToolError(str(error)) from None

    name = env.child_name(parent.agent, profile.name)
    state = SessionState()
    can_dispatch = bool(env.dispatchable(catalog, depth, profile))
    resolver = profile_resolver(
        env.registry, profile, state=state, mcp=env.mcp, policy=env.policy, can_dispatch=can_dispatch
    )
    mode = profile_mode(ctx.mode, profile)
    model_name = profile.model or parent.model_name
    refused = ctx.deps.settings.current().model_refusal(model_name)
    if refused is not None:
        # The profile's own model is refused by the policy: the parent's model (allowed, it is running) instead.
        ctx.progress(f"sub-agent {name}: {refused}; it runs with {parent.model_name}")
        model_name = parent.model_name
    try:
        model = env.model_factory(model_name)
    except Exception as error:  # a factory that cannot make the model: the parent's model reads why
        raise ToolError(f"Cannot start sub-agent '{name}' with model '{model_name}': {error}") from None

    finished: list[TurnDone] = []
    errors: list[str] = []

    def sink(event: Any) -> None:
        if getattr(event, "agent", None) == name:
            if isinstance(event, TurnDone):
                finished.append(event)
            elif isinstance(event, ErrorEvent):
                errors.append(event.message)
        parent.emit(event)

    transcript = _transcript(env, parent.session_id, name)
    conversation = Conversation()
    if transcript is not None:
        transcript.write(SubagentRecord(agent=name, profile=profile.name, origin=profile.origin,
                                        parent_tool_use_id=ctx.tool_use_id, model=model_name, prompt=args.prompt))
        conversation.on_append = lambda message: transcript.write(MessageRecord(message=message))

    child = AgentLoop(
        model=model,
        tools=resolver,
        approver=parent.approver,
        session_id=parent.session_id,
        state=state,
        system=profile_system_prompt(parent.project, profile, env.dispatchable(catalog, depth, profile), agent=name,
                                     plugins=env.plugins()),
        agent=name,
        emit=sink,
        ask=parent.ask,
        deps=deps,
        mode=mode,
        approval_timeout=ctx.approval_timeout,
        max_steps=profile.max_steps or DEFAULT_SUBAGENT_STEPS,
        max_tokens=parent.max_tokens,
    )
    # Ties the child's stream (events labelled `name`) to this call in the front.
    ctx.progress(f"sub-agent {name} started ({model_name})")
    prompt = await _started(deps, parent, name, profile.name, args.prompt, mode)
    try:
        done = await child.run(conversation, prompt, ctx.turn_id)
    finally:
        # Also on an interrupt: the tokens were spent either way.
        if finished:
            parent.add_usage(finished[-1].usage, finished[-1].cost_usd)
        if transcript is not None and finished:
            last = finished[-1]
            transcript.write(TurnRecord(stop_reason=last.stop_reason, usage=last.usage, cost_usd=last.cost_usd,
                                        steps=last.steps))
    if done.stop_reason == "error":
        detail = errors[-1] if errors else "the model request failed"
        raise ToolError(f"Sub-agent '{name}' failed: {detail}")
    answer = done.text.strip() or f"(sub-agent '{name}' finished without a final message)"
    if done.stop_reason == "max_steps":
        answer += f"\n\n[sub-agent '{name}' stopped at its limit of {child.max_steps} steps; the answer may be incomplete]"
    elif done.stop_reason == "max_tokens":
        answer += f"\n\n[sub-agent '{name}' hit the output token limit; the answer may be cut off]"
    return answer


async def _started(deps: SessionDeps, parent: Any, name: str, profile: str, prompt: str, mode: str) -> str:
    """SubagentStart hooks (matched on the profile's name): what they say for the sub-agent goes with its task."""
    hooks = deps.hooks
    if not hooks.configured("SubagentStart"):
        return prompt
    outcome = await hooks.subagent_start(session_id=parent.session_id, agent_id=name, agent_type=profile, mode=mode)
    for note in outcome.notices:
        parent.notify(note)
    if not outcome.context:
        return prompt
    return prompt + "\n\n<hook-context>\n" + "\n\n".join(outcome.context) + "\n</hook-context>"


def dispatch_agent_tool() -> ToolDefinition:
    """The dispatch_agent tool (offered to agents allowed to dispatch; see DispatchEnv.dispatchable)."""
    return ToolDefinition(
        name=DISPATCH_TOOL_NAME,
        description=(
            "Run a sub-agent (one of the profiles listed in the system prompt) on a self-contained task "
            "and get its final answer. The sub-agent starts with a fresh context: it sees only the prompt "
            "you give it, uses only its profile's tools, and its tool calls are approved like yours. "
            "Several dispatch_agent calls in one message run in parallel."
        ),
        parameters=DispatchArgs,
        execute=_dispatch,
        access=ToolAccess(key="agent", read_only=True),
        source="agent",
    )

