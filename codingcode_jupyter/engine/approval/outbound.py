"""The secrets layer: a call that would carry a known secret's value off the machine is refused.

A call sends its input out (:func:`sends_out`) when its tool is ``fetch_url`` or any tool declaring
a URL argument, ``web_search`` (its query goes to a search service), an MCP tool (its arguments go
to the server), or a command that reaches the network itself (``curl``, ``wget``, ``nc``, a
``/dev/tcp`` redirect: what the judge knows of the program). Its input is searched for the
session's known secrets (:mod:`..secret_values`) in every form :mod:`..redaction` knows, each
string alone, all of them joined, URL-decoded and with separators taken out. A hit is a deny in
every mode, no rule or hook outranks it, and its reason names the secret, never the value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..redaction import named
from ..tools.base import ToolDefinition
from .layers import Layer
from .program_traits import DOWNLOADERS
from .types import Decision, Verdict

if TYPE_CHECKING:
    from .judging import Judging
    from .subject import Subject

__all__ = ["Secrets", "sends_out", "refusal"]


def sends_out(definition: ToolDefinition, subject: "Subject") -> str | None:
    """What of the call leaves the machine, in words, or None when nothing does."""
    if definition.source == "mcp":
        return f"its arguments go to the MCP server {definition.mcp_server or ''}".rstrip()
    if definition.access.url is not None:
        return "its URL is requested"
    if definition.source == "builtin" and definition.name == "web_search":
        return "its query goes to a search service"
    for part in [subject, *subject.inner]:
        command = part.command
        if command is None:
            continue
        if command.network or any(simple.names & DOWNLOADERS for simple in command.commands):
            return "the command reaches the network itself"
    return None


def refusal(tool: str, found: list[tuple[str, str]], what: str = "call") -> str:
    """The one line a refused request gets: which secrets, by name and encoding, never the value."""
    return (f"Refused: this {tool} {what} would send the value of {named(found)}, a known secret, off the machine; "
            "secret values never leave by value (a reference such as an environment variable's name is fine).")


class Secrets(Layer):
    name = "secrets"
    summary = ("a call that sends its input off the machine (fetch_url, web_search, MCP tools, a command that "
               "reaches the network itself) carrying a known secret's value, or its base64, hex or URL-encoded "
               "form, is denied in every mode, whatever the rules and hooks say")

    async def judge(self, j: "Judging") -> list[Verdict]:
        definition = j.call.definition
        leaving = sends_out(definition, j.subject)
        if leaving is None:
            return []
        found = j.ctx.deps.secrets.leaving(j.subject.input)
        if not found:
            return [Verdict(kind=None, reason=f"no known secret in what leaves ({leaving})")]
        return [Verdict(kind=Decision.DENY, rule="builtin:secret-value", by="secrets",
                        reason=refusal(definition.display_name or definition.name, found))]
