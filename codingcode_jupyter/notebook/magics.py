"""``%%agent`` and ``%agent``: parse the line, call the engine, display the result.

``%%agent`` cells are run as awaited code (see :mod:`.async_cell`) so approval clicks reach
the kernel while the agent works; :mod:`.agent_cell` runs the turn. A lone ``%agent ...``
line is awaited the same way (:mod:`.extension`), so subcommands (:mod:`.subcommands`)
that talk to MCP servers can finish before the cell does.
"""

from __future__ import annotations

import asyncio
import shlex
from typing import Any, Callable, TypeVar, cast

from IPython.core import magic as ipython_magic
from IPython.core.error import UsageError
from IPython.core.magic import Magics, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import Pretty, display

from . import prewarm
from .agent_cell import APPROVAL_POLICIES, NO_REQUEST, AgentCellRunner
from .config import CodingCode
from .failures import one_line
from .sessions import SessionRegistry
from .subcommands import Subcommands, help_text, mode_arg, nearest, unknown_subcommand

__all__ = ["AgentMagics"]

_Method = TypeVar("_Method", bound=Callable[..., Any])


# IPython annotates its markers with a type variable bound nowhere, so mypy reads the method they
# take as Never; called with a name, they return a decorator that keeps the method as it is.
def cell_magic(name: str) -> Callable[[_Method], _Method]:
    return cast(Callable[[_Method], _Method], ipython_magic.cell_magic(name))


def line_magic(name: str) -> Callable[[_Method], _Method]:
    return cast(Callable[[_Method], _Method], ipython_magic.line_magic(name))


def policy_arg(value: str) -> str:
    if value not in APPROVAL_POLICIES:
        raise UsageError(f"--approval-policy must be one of {', '.join(APPROVAL_POLICIES)}, not {value!r}")
    return value


@magics_class
class AgentMagics(Magics):
    """The ``agent`` magics; one instance per shell."""

    def __init__(self, shell: Any, config: CodingCode) -> None:
        super().__init__(shell)
        self.settings = config
        self.registry = SessionRegistry(shell, config)
        self.runner = AgentCellRunner(shell, config, self.registry)
        self.subcommands = Subcommands(shell, self.registry, self.runner, self.run_cell)

    # -- %%agent ---------------------------------------------------------------------------

    @magic_arguments(name="%agent")  # shown as %%agent in the usage line
    @argument("--mode", type=mode_arg, help="Permission mode for this cell: default, acceptEdits, plan, bypass, auto.")
    @argument("--model", help="Model for this cell (e.g. claude-sonnet-4-5, or demo).")
    @argument("--agent", dest="profile", metavar="PROFILE", help="Agent profile to run as.")
    @argument("--new", action="store_true", help="Start a new session instead of continuing this project's.")
    @argument("--approval-timeout", type=float, metavar="SECONDS", help="Deny approvals not answered within SECONDS.")
    @argument("--project", metavar="DIR", help="Project directory; it stays the notebook's project until changed "
              "(default: the last --project or %%agent project, else the kernel's working directory).")
    @argument("--approval-policy", type=policy_arg, metavar="POLICY",
              help="Who answers questions: ask (a person, the default), deny (nobody; only tools that read run) or "
                   "rules (nobody; what the rules and the mode allow runs, the rest is denied) — for scheduled runs.")
    @argument("request", nargs="*", help="A slash command (/name args) or an MCP prompt (/server:prompt arg=value ...)")
    @cell_magic("agent")
    def agent_cell(self, line: str, cell: str) -> Any:
        """Ask the coding agent; the cell body is the request.

        The model's text streams into the cell; each tool call that needs approval asks you
        first: Allow / Deny / Always allow / Never allow (buttons in a notebook, y/n/a/v in a terminal). The Stop button (or the kernel's
        interrupt) ends the turn. When the turn ends, the cell keeps a static record of it.
        """
        if not cell.strip():
            raise UsageError(NO_REQUEST)
        coro = self.run_cell(line, cell)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        coro.close()
        raise UsageError(
            "%%agent must run as its own cell (it is rewritten into an awaited call); "
            "it cannot be called through run_cell_magic while an event loop is running."
        )

    async def run_cell(self, line: str, body: str, *, expand: bool = True) -> None:
        """The body of a ``%%agent`` cell (the transformer awaits this).

        ``{name}`` in the body becomes a description of that live variable (``{{`` escapes).
        """
        args = parse_cell_line(self.agent_cell, line)
        # The engine, if %load_ext's background loading is not done yet; the cell's view takes the place
        # of the waiting line.
        line_handle = await prewarm.ready()
        await self.runner.run(args, body, expand=expand, reuse=line_handle)

    # -- %agent ----------------------------------------------------------------------------

    @line_magic("agent")
    def agent_line(self, line: str) -> Any:
        """Inspect and steer the agent: ``%agent help`` lists the subcommands (set below from their table)."""
        coro = self.run_line(line)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        words = split_words(line)
        if words[:1] == ["mcp"] and words[1:2] in (["add"], ["remove"], ["restart"], ["login"]):
            coro.close()
            raise UsageError(f"Put `%agent mcp {words[1]} ...` on a line of its own (it must be awaited).")
        # Every other subcommand completes without awaiting anything (once the engine is loaded).
        prewarm.wait()
        try:
            coro.send(None)
        except StopIteration as stop:
            return stop.value
        coro.close()
        raise UsageError(f"`%agent {line.strip()}` must be on a line of its own.")

    async def run_line(self, line: str) -> Any:
        """Run one ``%agent`` subcommand."""
        words = split_words(line)
        if not words:
            display(Pretty(help_text()))
            return None
        handler = self.subcommands.handler(words[0])
        if handler is None:
            raise UsageError(unknown_subcommand(words[0]))
        await prewarm.ready(show=False)  # a subcommand's own output follows at once
        try:
            result = handler(words[1:])
            if asyncio.iscoroutine(result):
                result = await result
        except UsageError:
            raise
        except Exception as error:  # noqa: BLE001 -- a broken settings file read by status, rules, ...
            raise UsageError(one_line(error)) from None
        # Displayed, not returned: a subcommand's answer shows wherever it stands in a cell.
        if isinstance(result, str):
            display(Pretty(result))
        elif result is not None:
            display(result)
        return None


# magic_arguments writes the usage for reStructuredText ("::" before it); a notebook shows it as text.
AgentMagics.agent_cell.__doc__ = (AgentMagics.agent_cell.__doc__ or "").replace("::\n\n", "", 1)
# `%agent?` shows the same lines as `%agent help`, from the table that dispatches the subcommands.
AgentMagics.agent_line.__doc__ = "Inspect and steer the agent.\n\n" + help_text()


def parse_cell_line(magic: Any, line: str) -> Any:
    """``%%agent``'s options parsed; a word it does not know is named with the nearest option and the
    list of them all (argparse alone says only "unrecognized arguments")."""
    try:
        return parse_argstring(magic, line)
    except UsageError as error:
        if not str(error).startswith(("unrecognized arguments", "ambiguous option")):
            raise  # a value the option refuses says what it takes
        options = [action for action in magic.parser._actions if action.option_strings]
        names = [name for action in options for name in action.option_strings]
        said = str(error)
        unknown = [word for word in said.removeprefix("unrecognized arguments:").split() if word.startswith("-")]
        if said.startswith("unrecognized arguments") and unknown:
            close = nearest(unknown[0], names)
            said = f"%%agent has no option {unknown[0]}" + (f" (did you mean {close}?)" if close else "")
        listed = ", ".join(" ".join([action.option_strings[0], *([] if action.nargs == 0 else
                                     [action.metavar or action.dest.upper()])]) for action in options)
        raise UsageError(f"{said}. Its options: {listed}. %%agent? says what each does.") from None


def split_words(line: str) -> list[str]:
    head = line.split(None, 3)
    if head[:2] == ["mcp", "add"] and len(head) == 4:
        # The server entry is kept as typed: JSON's quotes are not shell quoting.
        return head
    try:
        return shlex.split(line)
    except ValueError as error:
        raise UsageError(f"cannot parse {line!r}: {error}") from None
