"""Custom tools from a notebook cell: a typed Python function becomes an agent tool.

``@tool`` reads the function once, when the cell runs: parameters from type hints and
defaults (pydantic validates them; ``Annotated[..., Field(description=...)]`` and the
docstring's ``Args:`` / ``Parameters`` entries describe them), the description from the
docstring, the name from the function. A parameter annotated :class:`ToolContext` is
injected and never shown to the model. Every mistake in a definition is collected and
raised together, naming the function, so one run of the cell shows them all.

The tool goes into the process registry, so every session offers it from its next model
request on; defining the same name again (re-running the cell) replaces it. Sync functions
run in a worker thread so the kernel keeps serving clicks and interrupts meanwhile.

``@pre_tool_use`` and ``@on_approval`` register Python hooks with the approval pipeline,
with the same contract as shell hooks (see :mod:`..approval.hooks`).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import inspect
import io
import json
import re
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable

import docstring_parser
import pydantic_core
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PydanticSchemaGenerationError,
    PydanticUserError,
    create_model,
)
from pydantic.fields import FieldInfo

from .base import (
    ContentBlock,
    ToolContext,
    ToolDefinition,
    ToolError,
    ToolResult,
    text_block,
)
from .registry import ToolRegistry

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
# What the Messages API accepts in an image block, and its size limit per image.
IMAGE_MIME_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
MAX_IMAGE_BYTES = 5 * 1024 * 1024
_SIGNATURES = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


class ToolDefinitionError(TypeError):
    """A function that cannot become a tool; the message lists every problem found."""

    def __init__(self, qualname: str, problems: list[str]) -> None:
        self.qualname = qualname
        self.problems = problems
        lines = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(f"Cannot make a tool of {qualname}:\n{lines}")


@dataclass(frozen=True)
class Image:
    """Image bytes with their mime type, returned from a tool as an image content block."""

    data: bytes
    mime: str = "image/png"


# -- reading a function ---------------------------------------------------------------------


def _qualname(fn: Any) -> str:
    module = getattr(fn, "__module__", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"{module}.{name}" if module and module not in ("__main__", "builtins") else name


def _is_context(annotation: Any) -> bool:
    """True for ``ToolContext`` and ``ToolContext | None`` (the context is always given)."""
    if annotation is ToolContext:
        return True
    if typing.get_origin(annotation) is Annotated:
        return _is_context(typing.get_args(annotation)[0])
    args = typing.get_args(annotation)
    if args and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return len(rest) == 1 and rest[0] is ToolContext
    return False


def _explicit_description(annotation: Any, default: Any) -> str | None:
    try:
        return FieldInfo.from_annotated_attribute(annotation, default).description
    except Exception:  # a bad annotation is reported when the model is built
        return None


def _strip_titles(node: Any) -> Any:
    """The schema without pydantic's generated ``title`` keys (noise in every request)."""
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, dict):
            out[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        elif key in ("default", "examples", "const", "enum"):
            out[key] = value  # data, not schemas: a property may well be called "title"
        else:
            out[key] = _strip_titles(value)
    return out


def _resolve_hints(fn: Callable[..., Any], signature: inspect.Signature, problems: list[str]) -> dict[str, Any]:
    """Every parameter's type hint, with string annotations (``from __future__``) evaluated."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:
        pass  # find out which parameter is at fault, so the message can say so
    target = inspect.unwrap(fn)
    namespace = dict(getattr(target, "__globals__", {}))
    code, closure = getattr(target, "__code__", None), getattr(target, "__closure__", None)
    if code is not None and closure:
        for name, cell in zip(code.co_freevars, closure):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:  # a cell not filled yet
                pass
    hints: dict[str, Any] = {}
    for name, param in signature.parameters.items():
        annotation = param.annotation
        if annotation is inspect.Parameter.empty:
            continue
        try:
            # Evaluated like typing.get_type_hints does; twice for `x: "T"` under __future__.
            for _ in range(2):
                if isinstance(annotation, str):
                    annotation = eval(annotation, namespace)
        except Exception as error:
            problems.append(
                f"parameter '{name}': its type hint {param.annotation!r} cannot be resolved "
                f"({type(error).__name__}: {error})"
            )
            continue
        hints[name] = annotation
    return hints


@dataclass
class _Signature:
    """What a function's signature says, read once."""

    model: type[BaseModel] | None = None
    schema: dict[str, Any] | None = None
    # (parameter name, field name in the model, positional-only) in signature order
    fields: list[tuple[str, str, bool]] = field(default_factory=list)
    context: tuple[str, bool] | None = None  # (name, positional-only)


def _read_signature(
    fn: Callable[..., Any], tool_name: str, param_docs: dict[str, str], problems: list[str]
) -> _Signature:
    out = _Signature()
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as error:
        problems.append(f"its signature cannot be read ({error})")
        return out
    hints = _resolve_hints(fn, signature, problems)

    definitions: dict[str, Any] = {}
    for index, (name, param) in enumerate(signature.parameters.items()):
        annotation = hints.get(name, Any)
        positional_only = param.kind is inspect.Parameter.POSITIONAL_ONLY
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            star = "*" if param.kind is inspect.Parameter.VAR_POSITIONAL else "**"
            problems.append(f"parameter {star}{name}: *args and **kwargs cannot be described to the model")
            continue
        if _is_context(annotation):
            if out.context is not None:
                problems.append(f"parameter '{name}': only one parameter may be the ToolContext")
            out.context = (name, positional_only)
            continue
        if name in ("ctx", "context") and name not in hints:
            problems.append(f"parameter '{name}' has no annotation: annotate it as ToolContext to receive the context")
            continue
        if name.startswith("_"):
            problems.append(f"parameter '{name}': names starting with '_' cannot be tool arguments")
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        extra: dict[str, Any] = {}
        if _explicit_description(annotation, default) is None and name in param_docs:
            extra["description"] = param_docs[name]  # Field(description=None) would erase one
        # The model's field names are internal (arg0, arg1...) and the parameter names are
        # aliases, so a parameter may be called `json`, `schema` or `model_id`.
        field_name = f"arg{index}"
        aliased = Annotated[annotation, Field(alias=name, **extra)]
        definitions[field_name] = (aliased, default)
        out.fields.append((name, field_name, positional_only))

    if problems:
        return out
    try:
        out.model = create_model(  # type: ignore[call-overload]
            f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False), **definitions
        )
        out.schema = _strip_titles(out.model.model_json_schema())
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, ValueError) as error:
        first = str(error).strip().splitlines()[0]
        problems.append(f"its parameters cannot be described as JSON schema: {first}")
    return out


def _docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The prose of the docstring, and the descriptions of its Args/Parameters entries."""
    raw = inspect.getdoc(fn) or ""
    if not raw:
        return "", {}
    try:
        parsed = docstring_parser.parse(raw)
    except Exception:  # an unusual docstring is still a fine description as it is
        return raw.strip(), {}
    prose = "\n\n".join(part for part in (parsed.short_description, parsed.long_description) if part)
    params = {p.arg_name: " ".join(p.description.split()) for p in parsed.params if p.description}
    return (prose or raw).strip(), params


# -- running it -----------------------------------------------------------------------------


def _image_bytes(value: Any) -> tuple[bytes, str] | None:
    """(bytes, mime) when ``value`` is an image we know how to send, else None."""
    if isinstance(value, Image):
        return value.data, value.mime
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], (bytes, bytearray)):
        if isinstance(value[1], str) and value[1].startswith("image/"):
            return bytes(value[0]), value[1]
    module = type(value).__module__ or ""
    # PIL and matplotlib are found by duck typing so neither is a dependency.
    if module.startswith("PIL.") and hasattr(value, "save") and hasattr(value, "mode"):
        buffer = io.BytesIO()
        image = value if value.mode in ("RGB", "RGBA", "L", "LA", "P", "1", "I;16") else value.convert("RGBA")
        image.save(buffer, format="PNG")
        return buffer.getvalue(), "image/png"
    if module.startswith("matplotlib.") and hasattr(value, "savefig"):
        buffer = io.BytesIO()
        value.savefig(buffer, format="png", bbox_inches="tight")
        return buffer.getvalue(), "image/png"
    for method, mime in (("_repr_png_", "image/png"), ("_repr_jpeg_", "image/jpeg")):
        render = getattr(value, method, None)
        if callable(render) and not isinstance(value, type):
            data = render()
            if isinstance(data, (bytes, bytearray)):
                return bytes(data), mime
    if isinstance(value, (bytes, bytearray)):
        head = bytes(value[:12])
        for signature, mime in _SIGNATURES.items():
            if head.startswith(signature):
                return bytes(value), mime
        if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
            return bytes(value), "image/webp"
    return None


def _image_block(data: bytes, mime: str) -> ContentBlock:
    if mime not in IMAGE_MIME_TYPES:
        raise ToolError(f"The tool returned an image of type {mime}; images must be one of {', '.join(IMAGE_MIME_TYPES)}.")
    if len(data) > MAX_IMAGE_BYTES:
        raise ToolError(
            f"The tool returned an image of {len(data) / 1e6:.1f} MB; the API accepts at most "
            f"{MAX_IMAGE_BYTES / 1e6:.0f} MB per image."
        )
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": base64.b64encode(data).decode()}}


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode()
        except UnicodeDecodeError:
            raise ToolError(
                f"The tool returned {len(value)} bytes that are neither text nor a PNG/JPEG/GIF/WebP image; "
                "return a str, or (bytes, 'image/...') for an image."
            ) from None
    if value is None or isinstance(value, (dict, list, tuple, set, frozenset, int, float, bool)) or dataclasses.is_dataclass(value):
        return json.dumps(pydantic_core.to_jsonable_python(value, fallback=str), ensure_ascii=False)
    return str(value)  # a DataFrame, a Path...: its own text reads better than a quoted JSON string


def to_tool_result(value: Any) -> ToolResult:
    """What a custom tool returned, as tool_result content: text, JSON, or image blocks."""
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult.text("(the tool returned nothing)")
    image = _image_bytes(value)
    if image is not None:
        return ToolResult([_image_block(*image)])
    # A list mixing text and images becomes several blocks; any other list is JSON data.
    if isinstance(value, (list, tuple)) and any(_image_bytes(item) is not None for item in value):
        blocks: list[ContentBlock] = []
        for item in value:
            found = _image_bytes(item)
            blocks.append(_image_block(*found) if found is not None else text_block(_as_text(item)))
        return ToolResult(blocks)
    return ToolResult.text(_as_text(value))


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def _make_executor(fn: Callable[..., Any], sig: _Signature, is_async: bool):
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

            threaded = dataclasses.replace(ctx, emit=emit)
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
) -> FunctionTool:
    """The tool a function makes, without registering it; ToolDefinitionError lists every mistake."""
    problems: list[str] = []
    qualname = _qualname(fn)
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
    prose, param_docs = _docstring(fn)
    text = description if description is not None else prose
    if not text.strip():
        problems.append("it has no description: write a docstring or pass description=... (the model reads it)")
    sig = _read_signature(fn, tool_name, param_docs, problems)
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
        function=fn,
    )


class _ToolDecorator:
    """``@tool`` / ``@tool(name=..., read_only=..., deferred=..., short_description=...)``.

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
        registry: ToolRegistry | None = None,
    ) -> Any:
        def decorate(function: Callable[..., Any]) -> FunctionTool:
            made = function_tool(
                function, name=name, description=description, short_description=short_description,
                deferred=deferred, read_only=read_only,
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
    from ..runtime import (
        global_registry,  # the runtime knows every layer; import it only when used
    )

    return global_registry()


tool = _ToolDecorator()


# -- Python hooks ---------------------------------------------------------------------------


def _same_function(a: Any, b: Any) -> bool:
    """The same function defined again (a re-run cell), not merely an equal name elsewhere."""
    key = lambda f: (getattr(f, "__module__", None), getattr(f, "__qualname__", None))  # noqa: E731
    return a is b or (key(a)[1] is not None and key(a) == key(b))


def pre_tool_use(matcher: str | Callable[..., Any] = "*") -> Any:
    """``@pre_tool_use("word_count")``: a PreToolUse hook in Python (same contract as shell hooks).

    The function gets the hook input as a dict (``tool_name``, ``tool_input``, ``session_id``,
    ``cwd``, ``permission_mode``, ``tool_use_id``) and returns None (continue) or a dict with
    ``decision`` (allow / deny / ask / continue), ``reason`` and ``modified_input``. It may be
    async. Defining it again (re-running the cell) replaces it; ``fn.unregister()`` removes it.
    """
    from ..approval import (
        hooks,  # lazily: the approval layer sits above the tools layer
    )

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
    from ..approval import hooks

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
