"""Custom tools from a notebook cell: a typed Python function becomes an agent tool.

``@tool`` reads the function once, when the cell runs (:mod:`.function_schema`); what it
returns becomes content blocks (:mod:`.results`). The tool goes into the process registry,
so every session offers it from its next model request on; defining the same name again
(re-running the cell) replaces it. Sync functions run in a worker thread so the kernel
keeps serving clicks and interrupts meanwhile. A custom tool is judged as able to reach
anything its arguments name, unless it declares what it reaches (``access=``).

``@pre_tool_use`` and ``@on_approval`` register Python hooks with the approval pipeline,
with the same contract as shell hooks (see :mod:`..hooks.pre_tool_use`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from pydantic import BaseModel

from .access import ToolAccess
from .base import ToolContext, ToolDefinition, ToolResult
from .function_schema import Signature, ToolDefinitionError, function_name, read_docstring, read_signature
from .registry import ToolRegistry
from .results import Image, to_tool_result

__all__ = [
    "tool",
    "Image",
    "FunctionTool",
    "ToolDefinitionError",
    "function_tool",
    "to_tool_result",
    "pre_tool_use",
    "on_approval",
    "TOOL_NAME_PATTERN",
]

TOOL_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _is_async(fn: Any) -> bool:
    # An object whose own __call__ is async (callable() would not say which kind of call it is).
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


def _make_executor(fn: Callable[..., Any], sig: Signature,
                   is_async: bool) -> Callable[[BaseModel, ToolContext], Awaitable[ToolResult]]:
    def call_arguments(args: BaseModel, ctx: ToolContext) -> tuple[list[Any], dict[str, Any]]:
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        pairs = [(name, getattr(args, field_name), pos) for name, field_name, pos in sig.fields]
        if sig.context is not None:
            pairs.append((sig.context[0], ctx, sig.context[1]))
        order = list(inspect.signature(fn).parameters)
        for name, value, pos in sorted(pairs, key=lambda item: order.index(item[0])):
            if pos:
                positional.append(value)
            else:
                keywords[name] = value
        return positional, keywords

    async def execute(args: BaseModel, ctx: ToolContext) -> ToolResult:
        if is_async:
            positional, keywords = call_arguments(args, ctx)
            value = await fn(*positional, **keywords)
        else:
            loop = asyncio.get_running_loop()
            # The function runs on another thread; its progress lines go back through the
            # loop, so whoever renders events only ever sees them on the loop's thread.
            def emit(event: Any) -> None:
                try:
                    loop.call_soon_threadsafe(ctx.emit, event)
                except RuntimeError:  # the loop is gone (a thread left running after a cancel)
                    pass

            threaded = ctx.with_turn(emit=emit)
            positional, keywords = call_arguments(args, threaded)
            try:
                value = await asyncio.to_thread(fn, *positional, **keywords)
            except asyncio.CancelledError:
                ctx.cancelled.set()  # the thread cannot be stopped; a cooperative function polls this
                raise
            if inspect.isawaitable(value):
                value = await value
        return to_tool_result(value)

    return execute


# -- the public surface ---------------------------------------------------------------------


@dataclass(repr=False)
class FunctionTool(ToolDefinition):
    """A ToolDefinition made from a function; calling it calls the function."""

    function: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        assert self.function is not None
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        # What a cell shows when its last line is the tool: its wire signature, not the dataclass.
        props = self.input_schema.get("properties", {})
        required = set(self.input_schema.get("required", []))
        params = ", ".join(name if name in required else f"{name}=…" for name in props)
        flags = [flag for flag, on in (("read-only", self.read_only), ("deferred", self.deferred)) if on]
        extra = f" [{', '.join(flags)}]" if flags else ""
        return f"<custom tool {self.name}({params}){extra}: {self.short_description}>"


def function_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    short_description: str | None = None,
    deferred: bool = False,
    read_only: bool = False,
    access: ToolAccess | None = None,
) -> FunctionTool:
    """The tool a function makes, without registering it; ToolDefinitionError lists every mistake.

    ``access`` declares what its arguments reach (e.g. ``ToolAccess(paths=(PathArg("path", "read"),))``);
    without it the tool is judged as able to reach anything its arguments name.
    """
    problems: list[str] = []
    qualname = function_name(fn)
    if not callable(fn):
        raise ToolDefinitionError(qualname, ["it is not callable"])
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        problems.append("it is a generator; a tool must return its result (use ctx.progress(...) for partial output)")
    tool_name = name if name is not None else getattr(fn, "__name__", "")
    if not isinstance(tool_name, str) or not TOOL_NAME_PATTERN.match(tool_name):
        problems.append(
            f"the tool name {tool_name!r} is not valid: use 1-64 letters, digits, '_' or '-' "
            "(pass name=... to choose another)"
        )
        tool_name = "tool"
    prose, param_docs = read_docstring(fn)
    text = description if description is not None else prose
    if not text.strip():
        problems.append("it has no description: write a docstring or pass description=... (the model reads it)")
    sig = read_signature(fn, tool_name, param_docs, problems)
    if problems:
        raise ToolDefinitionError(qualname, problems)
    assert sig.model is not None and sig.schema is not None
    return FunctionTool(
        name=tool_name,
        description=text.strip(),
        parameters=sig.model,
        execute=_make_executor(fn, sig, _is_async(fn)),
        short_description=short_description,
        deferred=deferred,
        read_only=read_only,
        json_schema=sig.schema,
        source="custom",
        access=access if access is not None else ToolAccess(read_only=read_only, opaque=True),
        function=fn,
    )


class _ToolDecorator:
    """``@tool`` / ``@tool(name=..., read_only=..., deferred=..., short_description=..., access=...)``.

    Also ``tool.register(definition)`` for a hand-written ToolDefinition (e.g. with a
    ``json_schema`` override), ``tool.remove(name)`` and ``tool.custom()``.
    """

    def __call__(
        self,
        fn: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        short_description: str | None = None,
        deferred: bool = False,
        read_only: bool = False,
        access: ToolAccess | None = None,
        registry: ToolRegistry | None = None,
    ) -> Any:
        def decorate(function: Callable[..., Any]) -> FunctionTool:
            made = function_tool(
                function, name=name, description=description, short_description=short_description,
                deferred=deferred, read_only=read_only, access=access,
            )
            self.register(made, registry=registry)
            return made

        return decorate if fn is None else decorate(fn)

    def __repr__(self) -> str:
        return "<codingcode_jupyter.tool: @tool turns a typed function into an agent tool>"

    def register(self, definition: ToolDefinition, *, registry: ToolRegistry | None = None) -> ToolDefinition:
        """Add (or replace) a custom tool; a built-in or MCP tool of the same name is refused."""
        if not isinstance(definition, ToolDefinition):
            raise TypeError(f"tool.register expects a ToolDefinition, not {type(definition).__name__}")
        if not TOOL_NAME_PATTERN.match(definition.name):
            raise ValueError(f"Tool name {definition.name!r} is not valid: use 1-64 letters, digits, '_' or '-'.")
        if definition.source == "builtin":
            # Written by hand in a cell: it is a custom tool whatever the default said.
            definition = dataclasses.replace(definition, source="custom")
        registry = registry if registry is not None else _global_registry()
        existing = registry.get(definition.name)
        if existing is not None and existing.source != "custom":
            raise ValueError(
                f"'{definition.name}' is already a {existing.source} tool; give the custom tool another name."
            )
        return registry.register(definition)

    def remove(self, name: str, *, registry: ToolRegistry | None = None) -> bool:
        """Take a custom tool away (True if there was one); built-ins cannot be removed this way."""
        registry = registry if registry is not None else _global_registry()
        existing = registry.get(name)
        if existing is None:
            return False
        if existing.source != "custom":
            raise ValueError(f"'{name}' is a {existing.source} tool, not a custom one; it cannot be removed.")
        return registry.remove(name)

    def custom(self, *, registry: ToolRegistry | None = None) -> list[ToolDefinition]:
        """The custom tools registered now, in registration order."""
        registry = registry if registry is not None else _global_registry()
        return [t for t in registry if t.source == "custom"]


def _global_registry() -> ToolRegistry:
    from .builtin import global_registry  # the built-in tools' modules, imported only when used

    return global_registry()


tool = _ToolDecorator()


# -- Python hooks ---------------------------------------------------------------------------


def _same_function(a: Any, b: Any) -> bool:
    """The same function defined again (a re-run cell), not merely an equal name elsewhere."""
    def key(f: Any) -> tuple[Any, Any]:
        return getattr(f, "__module__", None), getattr(f, "__qualname__", None)

    return a is b or (key(a)[1] is not None and key(a) == key(b))


def pre_tool_use(matcher: str | Callable[..., Any] = "*") -> Any:
    """``@pre_tool_use("word_count")``: a PreToolUse hook in Python (same contract as shell hooks).

    The function gets the hook input as a dict (``tool_name``, ``tool_input``, ``session_id``,
    ``cwd``, ``permission_mode``, ``tool_use_id``) and returns None (continue) or a dict with
    ``decision`` (allow / deny / ask / continue), ``reason`` and ``modified_input``. It may be
    async. Defining it again (re-running the cell) replaces it; ``fn.unregister()`` removes it.
    """
    from ..hooks import pre_tool_use as hooks  # lazily: the hooks sit above the tools layer

    def decorate(fn: Callable[..., Any], pattern: str) -> Callable[..., Any]:
        if not callable(fn):
            raise TypeError(f"@pre_tool_use decorates a function, not {type(fn).__name__}")
        for old in hooks.pre_tool_use_hooks():
            if _same_function(old.fn, fn):
                hooks.unregister(old.fn)
        hooks.register_pre_tool_use(fn, matcher=pattern)
        _attach_unregister(fn, hooks)
        return fn

    if callable(matcher):  # used bare: @pre_tool_use
        return decorate(matcher, "*")
    if not isinstance(matcher, str):
        raise TypeError(f"pre_tool_use(matcher) takes a tool-name glob such as 'word_count' or '*', not {matcher!r}")
    return lambda fn: decorate(fn, matcher)


def on_approval(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``@on_approval``: called with every approval record (the approval.post event); may be async."""
    from ..hooks import pre_tool_use as hooks

    if not callable(fn):
        raise TypeError(f"@on_approval decorates a function, not {type(fn).__name__}")
    for old in hooks.approval_observers():
        if _same_function(old, fn):
            hooks.unregister(old)
    hooks.register_approval_observer(fn)
    _attach_unregister(fn, hooks)
    return fn


def _attach_unregister(fn: Any, hooks: Any) -> None:
    try:
        fn.unregister = lambda: hooks.unregister(fn)
    except (AttributeError, TypeError):  # a builtin or a bound method cannot take attributes
        pass
