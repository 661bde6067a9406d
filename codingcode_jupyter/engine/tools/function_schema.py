"""A typed Python function read once into a tool's argument model and JSON schema.

Parameters come from type hints and defaults (pydantic validates them;
``Annotated[..., Field(description=...)]`` and the docstring's ``Args:`` / ``Parameters``
entries describe them), the description from the docstring. A parameter annotated
:class:`~.base.ToolContext` is injected and never shown to the model. Every mistake is
collected and raised together as :class:`ToolDefinitionError`, naming the function.
"""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, PydanticSchemaGenerationError, PydanticUserError, create_model
from pydantic.fields import FieldInfo

from .base import ToolContext

__all__ = ["ToolDefinitionError", "Signature", "function_name", "read_signature", "read_docstring"]


class ToolDefinitionError(TypeError):
    """A function that cannot become a tool; the message lists every problem found."""

    def __init__(self, qualname: str, problems: list[str]) -> None:
        self.qualname = qualname
        self.problems = problems
        lines = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(f"Cannot make a tool of {qualname}:\n{lines}")


def function_name(fn: Any) -> str:
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
class Signature:
    """What a function's signature says, read once."""

    model: type[BaseModel] | None = None
    schema: dict[str, Any] | None = None
    # (parameter name, field name in the model, positional-only) in signature order
    fields: list[tuple[str, str, bool]] = field(default_factory=list)
    context: tuple[str, bool] | None = None  # (name, positional-only)


def read_signature(
    fn: Callable[..., Any], tool_name: str, param_docs: dict[str, str], problems: list[str]
) -> Signature:
    out = Signature()
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
        # A type built at run time from the function's own hints: mypy cannot check it statically.
        aliased = Annotated[annotation, Field(alias=name, **extra)]  # type: ignore[valid-type]
        definitions[field_name] = (aliased, default)
        out.fields.append((name, field_name, positional_only))

    if problems:
        return out
    try:
        out.model = create_model(
            f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False), **definitions
        )
        out.schema = _strip_titles(out.model.model_json_schema())
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, ValueError) as error:
        first = str(error).strip().splitlines()[0]
        problems.append(f"its parameters cannot be described as JSON schema: {first}")
    return out


def read_docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
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
