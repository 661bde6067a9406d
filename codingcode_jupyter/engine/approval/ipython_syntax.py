"""A cell's IPython syntax read for the judge: shell lines become commands, known magics Python.

IPython turns ``!cmd``, ``x = !cmd``, ``%sx cmd`` and a ``%%bash`` cell into shell commands run
in the kernel, unsandboxed; other magics run code of their own (``%run``, ``%load_ext``,
``%env``, ``%cd``). :func:`read_cell` returns the cell with those lines replaced by neutral
Python (so the rest parses and is judged), the commands they run (judged as commands), and
what it cannot judge: a magic not on :data:`PYTHON_MAGICS` / :data:`QUIET_MAGICS` or a cell
magic not on :data:`SHELL_CELL_MAGICS` / :data:`PYTHON_CELL_MAGICS`.

A line ``# %%`` (the percent format insert_cell joins several cells with) ends a cell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Cell", "read_cell"]

# Line magics whose argument is Python, judged as such.
PYTHON_MAGICS = frozenset({"time", "timeit", "prun"})
# Line magics that change only how output looks or report on the namespace.
QUIET_MAGICS = frozenset({"matplotlib", "pwd", "who", "whos", "who_ls", "precision", "pprint", "xmode", "history",
                          "page", "pinfo", "pinfo2", "pdef", "pdoc", "psource", "lsmagic", "magic", "quickref"})
# Line magics that run their argument as a shell command.
SHELL_MAGICS = frozenset({"sx", "system"})
SHELL_CELL_MAGICS = frozenset({"bash", "sh", "script", "system", "sx"})
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
_ASSIGN = re.compile(r"^(\s*)([A-Za-z_][\w.\[\], ]*)=\s*!(.*)$")
_MAGIC = re.compile(r"^(\s*)%(%?)(\w+)(.*)$")


@dataclass
class Cell:
    """The cell as Python the judge parses, the shell commands it runs, what cannot be judged."""

    python: str
    commands: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def read_cell(source: str) -> Cell:
    """Split IPython's syntax out of ``source`` (see the module docstring)."""
    cell = Cell("")
    out: list[str] = []
    shell_body: list[str] | None = None
    for line in source.splitlines():
        if line.strip() == "# %%" or line.startswith("# %% "):
            if shell_body is not None:
                cell.commands.append("\n".join(shell_body))
                shell_body = None
            out.append(line)
            continue
        if shell_body is not None:
            shell_body.append(line)
            out.append("")
            continue
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if stripped.startswith("!"):
            cell.commands.append(stripped.lstrip("!").strip())
            out.append(indent + "pass")
            continue
        assigned = _ASSIGN.match(line)
        if assigned:
            cell.commands.append(assigned.group(3).strip())
            out.append(f"{assigned.group(1)}{assigned.group(2)}= []")
            continue
        magic = _MAGIC.match(line)
        if magic is None:
            out.append(line)
            continue
        _, double, name, rest = magic.groups()
        if double:
            if name in SHELL_CELL_MAGICS:
                shell_body = [rest.strip()] if name == "script" and rest.strip() not in ("bash", "sh") else []
                if name == "script" and rest.strip() not in ("bash", "sh"):
                    cell.problems.append(f"`%%script {rest.strip()}` runs a program the judge does not know")
                out.append("")
            elif name in PYTHON_CELL_MAGICS:
                out.append(indent + "pass")
            else:
                cell.problems.append(f"`%%{name}` is a cell magic the judge does not know (it may run anything)")
                out.append(indent + "pass")
        elif name in SHELL_MAGICS:
            cell.commands.append(rest.strip())
            out.append(indent + "pass")
        elif name in PYTHON_MAGICS:
            out.append(indent + (rest.strip() or "pass"))
        elif name in QUIET_MAGICS:
            out.append(indent + "pass")
        else:
            cell.problems.append(f"`%{name}` is a magic the judge does not know (it may run anything)")
            out.append(indent + "pass")
    if shell_body is not None:
        cell.commands.append("\n".join(shell_body))
    cell.python = "\n".join(out)
    return cell
