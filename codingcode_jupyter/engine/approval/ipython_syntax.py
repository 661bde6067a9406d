"""A cell's IPython syntax read for the judge: shell lines become calls it follows, known magics Python.

IPython turns ``!cmd``, ``x = !cmd``, ``%sx cmd`` and a ``%%bash`` cell into shell commands run
in the kernel, unsandboxed; other magics run code of their own (``%run``, ``%load_ext``,
``%env``, ``%cd``). :func:`read_cell` returns the cell as Python the judge parses: each line
that runs a command becomes a call of :attr:`Cell.marker` (a name no code can write) whose
arguments are the pieces of the command line as IPython expands it, so the command is judged
where it runs (after a ``chdir``, with the names bound before it), and :attr:`Cell.problems`
says what it cannot judge: a magic not on :data:`PYTHON_MAGICS` / :data:`QUIET_MAGICS`, a cell
magic not on :data:`SHELL_CELL_MAGICS` / :data:`PYTHON_CELL_MAGICS`, an expansion in a magic's
arguments.

IPython expands a line before it runs (``var_expand``, its ``DollarFormatter``): ``{expr}`` is
any Python expression, evaluated; ``$name`` a name or attribute (not inside single quotes);
``{{``, ``}}`` and ``$$`` stand for ``{``, ``}`` and ``$``. A field that cannot be evaluated
leaves the whole line as written: one that is not Python (``awk '{print $1}'``) always does, and
so is read here as text. :func:`expansion` is that reading. ``%sx`` and ``%system`` expand
twice (the magic, then ``getoutput``); ``%%system`` and ``%%sx`` expand their body; a magic's
line is expanded unless the magic opts out (``%time``, ``%timeit``, ``%prun``).

A line ``# %%`` (the percent format insert_cell joins several cells with) ends a cell.

IPython's API does what those lines do, expanding its text the same way: a statement
``get_ipython().system(S)``, ``x = get_ipython().getoutput(S)`` or
``get_ipython().run_line_magic(N, L)`` with constant text on a line of its own is read as the
line IPython would have turned into it (``!S``, ``x = !S``, ``%N L``) by :func:`api_lines`. Any
other use of ``get_ipython`` stays refused by the Python judge.
"""

from __future__ import annotations

import ast
import re
import secrets
import string
from dataclasses import dataclass, field

from ..budget import checked

__all__ = ["Cell", "Field", "read_cell", "expansion", "api_lines", "TWICE"]

# Line magics whose argument is Python, judged as such (they do not expand their line).
PYTHON_MAGICS = frozenset({"time", "timeit", "prun"})
# Line magics that change only how output looks or report on the namespace.
QUIET_MAGICS = frozenset({"matplotlib", "pwd", "who", "whos", "who_ls", "precision", "pprint", "xmode", "history",
                          "page", "pinfo", "pinfo2", "pdef", "pdoc", "psource", "lsmagic", "magic", "quickref"})
# Line magics that run their argument as a shell command.
SHELL_MAGICS = frozenset({"sx", "system"})
SHELL_CELL_MAGICS = frozenset({"bash", "sh", "script", "system", "sx"})
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
# Magics that expand no Python into their line.
_NO_EXPANSION = frozenset({"time", "timeit", "prun", "debug"})
# Cell magics whose body IPython expands (`getoutput(cell)`); the others hand it over as written.
_EXPANDED_BODY = frozenset({"system", "sx"})
# `%matplotlib NAME`: a backend by name; `module://x` would import the module x.
_MATPLOTLIB_ARGS = re.compile(r"\s*(?:(?:-l|--list)\s*)?[A-Za-z0-9_]*\s*")
# The keyword the marker gets for a line IPython expands twice.
TWICE = "twice"
_ASSIGN = re.compile(r"^(\s*)([A-Za-z_][\w.\[\], ]*)=\s*!(.*)$")
_MAGIC = re.compile(r"^(\s*)%(%?)(\w+)(.*)$")
# IPython's DollarFormatter: `$name` or `$a.b` outside single quotes; `$$name` stands for `$name`.
_DOLLAR = re.compile(r"(.*?)\$(\$?[\w\.]+)(?=([^']*'[^']*')*[^']*$)")


@dataclass(frozen=True)
class Field:
    """A Python expression IPython evaluates into a line, and its conversion (``!r``...)."""

    expression: str
    conversion: str | None = None


@dataclass
class Cell:
    """The cell as Python the judge parses, the name its shell lines call, what cannot be judged."""

    python: str
    marker: str
    problems: list[str] = field(default_factory=list)


def expansion(text: str) -> list[str | Field] | None:
    """``text`` as IPython expands it: literal pieces and the fields between them; None when the
    line runs as written (a field that cannot be evaluated, braces that do not pair)."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return None
    pieces: list[str | Field] = []
    for literal, name, spec, conversion in parsed:
        text_before, done = "", 0
        for match in _DOLLAR.finditer(literal):
            before, found = match.group(1, 2)
            if found.startswith("$"):
                text_before += before + found
            else:
                pieces += [text_before + before, Field(found)]
                text_before = ""
            done = match.end()
        pieces.append(text_before + literal[done:])
        if name is not None:
            pieces.append(Field(name + (":" + spec if spec else ""), conversion))
    for piece in pieces:
        if isinstance(piece, Field) and not _evaluable(piece):
            return None  # eval raises, and IPython keeps the line as it is
    return [piece for piece in pieces if piece != ""]


def _evaluable(piece: Field) -> bool:
    if piece.conversion not in (None, "r", "s", "a"):
        return False
    try:
        # Compiled only (never run), as eval would: what does not compile is never evaluated.
        compile(piece.expression, "<expansion>", "eval", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _call(marker: str, text: str, *, twice: bool = False, expand: bool = True) -> tuple[str, str | None]:
    """A call of ``marker`` with the pieces of ``text`` as IPython expands it, and a problem if any."""
    pieces: list[str | Field] | None = expansion(text) if expand else None
    if pieces is None:
        pieces = [text]
    args: list[str] = []
    for piece in pieces:
        if isinstance(piece, str):
            args.append(repr(piece))
        elif "\n" in piece.expression:
            return f"{marker}()", "an expansion `{...}` over several lines is not read"
        else:
            wrap = {"r": "repr", "a": "ascii"}.get(piece.conversion or "", "")
            args.append(f"{wrap}(({piece.expression}))" if wrap else f"({piece.expression})")
    if twice:
        args.append(f"{TWICE}=True")
    return f"{marker}({', '.join(args)})", None


def _expands(text: str) -> bool:
    pieces = expansion(text)
    return pieces is not None and any(isinstance(piece, Field) for piece in pieces)


def _line_magic(cell: Cell, indent: str, name: str, rest: str) -> str:
    """The Python that stands for `%name rest`, its problems noted in ``cell``."""
    if name in SHELL_MAGICS:
        call, problem = _call(cell.marker, rest.strip(), twice=True)
        if problem:
            cell.problems.append(problem)
        return indent + call
    if name in PYTHON_MAGICS:
        return indent + (rest.strip() or "pass")
    if name not in QUIET_MAGICS:
        cell.problems.append(f"`%{name}` is a magic the judge does not know (it may run anything)")
    elif _expands(rest):
        cell.problems.append(f"`%{name}`'s arguments are expanded from Python values when it runs")
    elif name == "matplotlib" and not _MATPLOTLIB_ARGS.fullmatch(rest):
        cell.problems.append(f"`%matplotlib{rest}` names a backend the judge does not know (module:// imports it)")
    elif name == "history" and re.search(r"(^|\s)-[a-zA-Z]*f", rest):
        cell.problems.append("`%history -f` writes a file")
    return indent + "pass"


def _cell_magic(cell: Cell, indent: str, name: str, rest: str) -> tuple[str, list[str] | None]:
    """The Python for `%%name rest`, and the list the body's lines go to if it is a shell's."""
    if name not in _NO_EXPANSION and _expands(rest):
        cell.problems.append(f"`%%{name}`'s line is expanded from Python values when it runs")
    if name in SHELL_CELL_MAGICS:
        program = rest.strip()
        if name == "script" and program not in ("bash", "sh"):
            cell.problems.append(f"`%%script {program}` runs a program the judge does not know")
        return "", []
    if name not in PYTHON_CELL_MAGICS:
        cell.problems.append(f"`%%{name}` is a cell magic the judge does not know (it may run anything)")
    return indent + "pass", None


def read_cell(source: str, marker: str | None = None) -> Cell:
    """Split IPython's syntax out of ``source`` (see the module docstring)."""
    cell = Cell("", marker=marker or f"__codingcode_shell_{secrets.token_hex(6)}")
    out: list[str] = []
    # The cell magic whose body is being read: (its name, where its call goes in ``out``, the body).
    body: tuple[str, int, list[str]] | None = None
    for line in source.splitlines():
        if line.strip() == "# %%" or line.startswith("# %% "):
            _end_body(cell, out, body)
            body = None
            out.append(line)
            continue
        if body is not None:
            body[2].append(line)
            out.append("")
            continue
        out.append(_line(cell, line))
        magic = _MAGIC.match(line)
        if magic is not None and magic.group(2):
            python, lines = _cell_magic(cell, magic.group(1), magic.group(3), magic.group(4))
            out[-1] = python
            if lines is not None:
                body = (magic.group(3), len(out) - 1, lines)
    _end_body(cell, out, body)
    cell.python = "\n".join(out)
    rewritten = api_lines(cell.python)
    if rewritten is not None:
        # A second pass reads the lines the API calls stand for, with the same marker.
        again = read_cell(rewritten, cell.marker)
        cell.python = again.python
        cell.problems.extend(again.problems)
    return cell


def api_lines(python: str) -> str | None:
    """``python`` with each statement of IPython's API on constant text written as the line it
    stands for (``get_ipython().system('ls')`` as ``!ls``), or None when there is none to write.
    Nothing is written when the code binds ``get_ipython`` itself: it is then not IPython's."""
    try:
        tree = ast.parse(python)
    except (SyntaxError, ValueError):
        return None
    for node in checked(ast.walk(tree)):
        named = node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else None
        if named == "get_ipython" or (isinstance(node, ast.Name) and node.id == "get_ipython"
                                      and not isinstance(node.ctx, ast.Load)) or (
                isinstance(node, (ast.Import, ast.ImportFrom))
                and any((a.asname or a.name) == "get_ipython" for a in node.names)):
            return None
    lines = python.split("\n")
    written = False
    for node in checked(ast.walk(tree)):
        if not isinstance(node, (ast.Expr, ast.Assign)):
            continue
        text = _api_line(node)
        if text is None or node.end_lineno != node.lineno or node.end_col_offset is None:
            continue
        line = lines[node.lineno - 1]
        encoded = line.encode()
        # The statement must be the whole line (no `a(); get_ipython()...` beside it).
        if encoded[: node.col_offset].strip() or encoded[node.end_col_offset:].strip():
            continue
        lines[node.lineno - 1] = encoded[: node.col_offset].decode() + text
        written = True
    return "\n".join(lines) if written else None


def _api_line(node: ast.Expr | ast.Assign) -> str | None:
    """The IPython line a statement calling IPython's API with constant text stands for."""
    target = None
    if isinstance(node, ast.Assign):
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            return None
        target = node.targets[0].id
    call = node.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and not call.keywords
            and isinstance(call.func.value, ast.Call) and isinstance(call.func.value.func, ast.Name)
            and call.func.value.func.id == "get_ipython" and not call.func.value.args
            and not call.func.value.keywords):
        return None
    texts = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if len(texts) != len(call.args) or any("\n" in t or "\r" in t for t in texts):
        return None
    method = call.func.attr
    if method in ("system", "getoutput") and len(texts) == 1 and (target is None or method == "getoutput"):
        line = "!" + texts[0]
    elif method == "run_line_magic" and len(texts) == 2 and texts[0].isidentifier():
        line = f"%{texts[0]} {texts[1]}"
    else:
        return None
    return f"{target} = {line}" if target is not None else line


def _line(cell: Cell, line: str) -> str:
    """One line outside a cell magic's body, as Python (a cell magic's own line is read by the caller)."""
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if stripped.startswith("!"):
        call, problem = _call(cell.marker, stripped.lstrip("!").strip())
        if problem:
            cell.problems.append(problem)
        return indent + call
    assigned = _ASSIGN.match(line)
    if assigned:
        call, problem = _call(cell.marker, assigned.group(3).strip())
        if problem:
            cell.problems.append(problem)
        return f"{assigned.group(1)}{assigned.group(2)}= {call}"
    magic = _MAGIC.match(line)
    if magic is None:
        return line
    indent, double, name, rest = magic.groups()
    return "" if double else _line_magic(cell, indent, name, rest)


def _end_body(cell: Cell, out: list[str], body: tuple[str, int, list[str]] | None) -> None:
    """A shell cell magic's body, as one call on its magic's line."""
    if body is None:
        return
    name, at, lines = body
    call, problem = _call(cell.marker, "\n".join(lines), expand=name in _EXPANDED_BODY)
    if problem:
        cell.problems.append(problem)
    out[at] = call
