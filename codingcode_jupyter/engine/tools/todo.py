"""todo_write: the agent's visible plan, replaced whole on every call."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from ..events import TodoItem, TodoUpdated
from .base import ToolContext, ToolDefinition

__all__ = ["PlanStep", "TodoWriteArgs", "render_plan", "todo_write_tool"]

MAX_ITEMS = 20
MAX_STEP_CHARS = 200
MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}


class PlanStep(BaseModel):
    """One step of the plan."""

    step: str = Field(description=f"What to do, in a few words (1-{MAX_STEP_CHARS} characters).")
    status: Literal["pending", "in_progress", "completed"] = Field(description="pending, in_progress or completed.")

    @field_validator("step")
    @classmethod
    def _step_text(cls, value: str) -> str:
        value = " ".join(value.split())
        if not value:
            raise ValueError("a step must not be empty")
        if len(value) > MAX_STEP_CHARS:
            raise ValueError(f"a step must be at most {MAX_STEP_CHARS} characters (got {len(value)})")
        return value


class TodoWriteArgs(BaseModel):
    """Parameters of todo_write."""

    plan: list[PlanStep] = Field(
        max_length=MAX_ITEMS,
        description=f"The whole plan (replaces the previous one), at most {MAX_ITEMS} steps, at most one in_progress.",
    )

    @model_validator(mode="after")
    def _one_in_progress(self) -> "TodoWriteArgs":
        active = [item.step for item in self.plan if item.status == "in_progress"]
        if len(active) > 1:
            raise ValueError(f"at most one step may be in_progress, got {len(active)}: " + "; ".join(active))
        return self


def render_plan(items: list[TodoItem]) -> str:
    """A compact text rendering: one `[x]`/`[>]`/`[ ]` line per step."""
    if not items:
        return "(plan cleared)"
    done = sum(1 for item in items if item.status == "completed")
    lines = [f"Plan ({done}/{len(items)} completed):"]
    lines += [f"{MARKS[item.status]} {item.step}" for item in items]
    return "\n".join(lines)


async def _todo_write(args: TodoWriteArgs, ctx: ToolContext) -> str:
    items = [TodoItem(step=step.step, status=step.status) for step in args.plan]
    if ctx.state is not None:
        ctx.state.todo = list(items)
    ctx.emit(TodoUpdated(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent, items=items))
    return render_plan(items)


def todo_write_tool() -> ToolDefinition:
    """The todo_write tool."""
    return ToolDefinition(
        name="todo_write",
        description=(
            "Write the task plan shown to the user: the full list of steps with their status "
            f"(pending / in_progress / completed), replacing the previous list. At most {MAX_ITEMS} steps "
            "and one in_progress at a time. Use it for multi-step work and keep it current."
        ),
        parameters=TodoWriteArgs,
        execute=_todo_write,
        read_only=True,
    )
