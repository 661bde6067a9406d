"""A server asking the person for input (``elicitation/create``), as typed data.

Form mode sends a flat JSON schema; :func:`parse_form` turns it into :class:`FormField` s a
front can render (text, number, integer, boolean, a choice of one, a choice of several)
and :func:`check_answer` validates what the person filled in against the same fields, so
a front never sends the server something its schema rejects. URL mode asks the person to
open a link (a login, a payment) and say whether they did. The front answers through an
:data:`Elicitor`; where no front can ask, the request is declined.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Literal, TypedDict

__all__ = [
    "FieldKind",
    "Choice",
    "FormField",
    "ElicitationRequest",
    "ElicitationResponse",
    "Elicitor",
    "ElicitationSchemaError",
    "parse_form",
    "check_answer",
    "decline_without_front",
]

FieldKind = Literal["text", "number", "integer", "boolean", "choice", "choices"]
Action = Literal["accept", "decline", "cancel"]
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class ElicitationSchemaError(ValueError):
    """A requested schema this client cannot render (nested objects, unknown types)."""


@dataclass(frozen=True)
class Choice:
    value: str
    label: str


@dataclass(frozen=True)
class FormField:
    """One property of the requested schema."""

    name: str
    kind: FieldKind
    title: str
    required: bool = False
    description: str | None = None
    default: Any = None
    choices: tuple[Choice, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    # "email", "uri", "date", "date-time" for text fields.
    format: str | None = None


@dataclass(frozen=True)
class ElicitationRequest:
    """What a server asks, and where it came from (for placing the question in the right cell)."""

    server: str
    message: str
    mode: Literal["form", "url"] = "form"
    fields: tuple[FormField, ...] = ()
    url: str | None = None
    elicitation_id: str | None = None
    # The tool call during which the server asked (None: outside any call).
    tool_use_id: str | None = None
    agent: str = "main"
    session_id: str = ""
    turn_id: int = 0


@dataclass(frozen=True)
class ElicitationResponse:
    """The person's answer: accept (with the form's content), decline, or cancel (dismissed)."""

    action: Action
    content: dict[str, Any] | None = None
    # Why it ended this way, when the person did not choose (shown, never sent to the server).
    note: str = ""

    @classmethod
    def accept(cls, content: dict[str, Any] | None = None) -> "ElicitationResponse":
        return cls("accept", content)

    @classmethod
    def decline(cls, note: str = "") -> "ElicitationResponse":
        return cls("decline", None, note)

    @classmethod
    def cancel(cls, note: str = "") -> "ElicitationResponse":
        return cls("cancel", None, note)


Elicitor = Callable[[ElicitationRequest], Awaitable[ElicitationResponse]]


async def decline_without_front(request: ElicitationRequest) -> ElicitationResponse:
    """The elicitor of a session nobody can be asked in (scripts, tests, headless runs)."""
    return ElicitationResponse.decline(f"nobody could be asked for {request.server}'s input (no notebook front)")


def _choices(spec: dict[str, Any]) -> tuple[Choice, ...]:
    if isinstance(spec.get("oneOf"), list) or isinstance(spec.get("anyOf"), list):
        options: list[Any] = spec.get("oneOf") or spec.get("anyOf") or []
        return tuple(
            Choice(str(option["const"]), str(option.get("title") or option["const"]))
            for option in options
            if isinstance(option, dict) and "const" in option
        )
    values = spec.get("enum")
    if isinstance(values, list):
        names = spec.get("enumNames") if isinstance(spec.get("enumNames"), list) else None
        return tuple(
            Choice(str(value), str(names[i]) if names and i < len(names) else str(value))
            for i, value in enumerate(values)
        )
    return ()


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class _Common(TypedDict):
    """The keywords every kind of field is built with."""

    name: str
    title: str
    required: bool
    description: str | None
    default: Any


def _field(name: str, spec: Any, required: bool) -> FormField:
    if not isinstance(spec, dict):
        raise ElicitationSchemaError(f"property {name!r} is not a schema object")
    kind_name = spec.get("type")
    common = _Common(
        name=name,
        title=str(spec.get("title") or name),
        required=required,
        description=spec.get("description") if isinstance(spec.get("description"), str) else None,
        default=spec.get("default"),
    )
    if kind_name == "array":
        items: dict[str, Any] = spec["items"] if isinstance(spec.get("items"), dict) else {}
        choices = _choices(items)
        if not choices:
            raise ElicitationSchemaError(f"property {name!r}: only arrays of enumerated strings can be asked for")
        return FormField(kind="choices", choices=choices, min_items=spec.get("minItems"),
                         max_items=spec.get("maxItems"), **common)
    if kind_name == "string":
        choices = _choices(spec)
        if choices:
            return FormField(kind="choice", choices=choices, **common)
        return FormField(kind="text", min_length=spec.get("minLength"), max_length=spec.get("maxLength"),
                         format=spec.get("format"), **common)
    if kind_name in ("number", "integer"):
        return FormField(kind=kind_name, minimum=_number(spec.get("minimum")), maximum=_number(spec.get("maximum")),
                         **common)
    if kind_name == "boolean":
        return FormField(kind="boolean", **common)
    raise ElicitationSchemaError(f"property {name!r} has type {kind_name!r}, which a form cannot ask for")


def parse_form(schema: dict[str, Any]) -> tuple[FormField, ...]:
    """The fields of a requested schema, in the server's order; ElicitationSchemaError if unusable."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise ElicitationSchemaError("the requested schema must be an object")
    properties = schema.get("properties") or {}
    if not isinstance(properties, dict):
        raise ElicitationSchemaError("the requested schema's properties must be an object")
    required = set(schema.get("required") or [])
    return tuple(_field(name, spec, name in required) for name, spec in properties.items())


def _check(field: FormField, value: Any) -> tuple[Any, str | None]:
    label = field.title
    if field.kind == "boolean":
        if isinstance(value, bool):
            return value, None
        return None, f"{label}: expected yes or no"
    if field.kind in ("number", "integer"):
        if isinstance(value, str) and value.strip():
            try:
                value = float(value) if field.kind == "number" else int(value.strip())
            except ValueError:
                return None, f"{label}: {value!r} is not a{'n integer' if field.kind == 'integer' else ' number'}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None, f"{label}: expected a number"
        if field.kind == "integer":
            if float(value) != int(value):
                return None, f"{label}: expected an integer"
            value = int(value)
        if field.minimum is not None and value < field.minimum:
            return None, f"{label}: must be at least {field.minimum:g}"
        if field.maximum is not None and value > field.maximum:
            return None, f"{label}: must be at most {field.maximum:g}"
        return value, None
    if field.kind == "choice":
        allowed = [choice.value for choice in field.choices]
        if value not in allowed:
            return None, f"{label}: choose one of {', '.join(allowed)}"
        return value, None
    if field.kind == "choices":
        if not isinstance(value, (list, tuple)):
            return None, f"{label}: expected a list of choices"
        allowed_values = {choice.value for choice in field.choices}
        bad = [item for item in value if item not in allowed_values]
        if bad:
            return None, f"{label}: not a choice: {', '.join(map(str, bad))}"
        if field.min_items is not None and len(value) < field.min_items:
            return None, f"{label}: choose at least {field.min_items}"
        if field.max_items is not None and len(value) > field.max_items:
            return None, f"{label}: choose at most {field.max_items}"
        return list(value), None
    if not isinstance(value, str):
        return None, f"{label}: expected text"
    if field.min_length is not None and len(value) < field.min_length:
        return None, f"{label}: at least {field.min_length} characters"
    if field.max_length is not None and len(value) > field.max_length:
        return None, f"{label}: at most {field.max_length} characters"
    if field.format == "email" and not _EMAIL.match(value):
        return None, f"{label}: not an email address"
    if field.format == "date" and not _DATE.match(value):
        return None, f"{label}: expected a date as YYYY-MM-DD"
    if field.format == "uri" and not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", value):
        return None, f"{label}: not a URI"
    return value, None


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == []


def check_answer(fields: tuple[FormField, ...], content: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The content with empty optional fields left out and values coerced, and every problem found."""
    clean: dict[str, Any] = {}
    problems: list[str] = []
    known = {f.name for f in fields}
    for name in content:
        if name not in known:
            problems.append(f"{name}: not a field of this form")
    for f in fields:
        value = content.get(f.name)
        if _empty(value):
            if f.required:
                problems.append(f"{f.title}: required")
            continue
        checked, problem = _check(f, value)
        if problem:
            problems.append(problem)
        else:
            clean[f.name] = checked
    return clean, problems

