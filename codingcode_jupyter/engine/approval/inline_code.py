"""The code an interpreter runs, judged from its text: one job, pure functions, no walker state.

Where the code a shell, ``eval``, ``source`` or an interpreter runs comes from (a ``-c`` / ``-e``
option, a script file, its stdin: :func:`code_source`, :func:`program_of`). Shell code is parsed
as shell and Python is read with ``ast`` (:mod:`.python_code`); everything else an interpreter
runs (perl/ruby/node ``-e``, awk programs, tcl, here-documents fed to an interpreter) can only be
read by its look (:func:`read_code`): the path literals it names, why its effect is unknown, and
the string literals to judge as shell when it starts other programs. The shell walker
(:mod:`.shell_parse`) calls these and does the recursing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .program_traits import INTERPRETERS, SHELLS
from .shell_words import option_cluster_has

__all__ = ["INTERPRETER_FAMILY", "CodeSource", "InlineCode", "code_source", "inline_option_code", "is_python",
           "program_of", "read_code", "reads_code_from_stdin", "runs_code", "string_literals"]

# Options after which the interpreter runs code given inline, not a file or stdin.
_INLINE_CODE_OPTIONS = frozenset({"-c", "-e", "-E", "-p", "-r", "-m", "--eval", "--print", "--command", "-Command",
                                  "-command", "-x"})
_PYTHONS = re.compile(r"(python|pypy)[\d.]*|ipython3?")
# Programs whose program text is their first operand or `-e` (awk, tcl-likes...), beside INTERPRETERS.
INTERPRETER_FAMILY = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk", "tclsh", "wish", "expect", "jimsh",
                                "Rscript", "julia", "pwsh", "irb", "jshell", "groovy", "guile", "racket", "sbcl"})
# Code that starts other programs or builds code at run time.
_SHELL_OUT = re.compile(
    r"\b(system|exec\w*|popen\w*|spawn\w*|subprocess|child_process|Popen|check_output|check_call|call|run|"
    r"shell_exec|passthru|proc_open|qx|eval|compile|__import__|importlib|getattr|ctypes|pty|os\.fork|fork|"
    r"Function|getline|Deno\.Command|Runtime)\b|`|\|\s*\"|\|&")
_CODE_LITERAL = re.compile(r"'((?:[^'\\\n]|\\.)*)'|\"((?:[^\"\\\n]|\\.)*)\"|`([^`]*)`")
# Inline code in other languages: calls that reach files, strings built at run time, risky calls.
_CODE_IO = re.compile(r"\b(open|fopen|sysopen|readFile\w*|writeFile\w*|createReadStream|file_get_contents|file_put_contents|"
                      r"readfile|fread|File\.\w+|IO\.\w+|fs\.\w+|unlink\w*|rm\w*|rmtree|rmdir\w*|remove|delete|"
                      r"copy\w*|rename\w*|slurp|spit|Path|homedir)\b")
_CODE_BUILT = re.compile(r"[\"'`]\s*[.+]\s*[\"'`$\w(]|[\w)\]]\s*[.+]\s*[\"'`]|\$\{|#\{|\bhomedir\b|\$ENV|%ENV|process\.env|"
                         r"\bENV\[|getenv|\bglob\b|<\$|\$_|\bsprintf\b|\bjoin\b")
_CODE_RISKY = re.compile(r"\b(kill|setuid|seteuid|setgid|POSIX::set\w*|Process::Sys|chmod\w*|fchmod|lchmod)\b")
_DELETE_WORDS = re.compile(r"\b(rmtree|remove|unlink|rmdir|rm_rf|rm_r|rmSync|rimraf|delete)\b")
_STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "-"})
# Interpreters whose code is shell-like commands too: the whole code is also judged as shell.
_SHELL_LIKE = ("tclsh", "wish", "expect", "jimsh")


def is_python(name: str) -> bool:
    """Whether ``name`` is a Python interpreter (python3.12, pypy3, ipython...)."""
    return bool(_PYTHONS.fullmatch(name))


def runs_code(name: str) -> bool:
    """Whether the program runs code it is given (an interpreter, awk, sed...), not only data."""
    return name in INTERPRETERS or is_python(name) or name in INTERPRETER_FAMILY or name == "sed"


def string_literals(code: str) -> list[str]:
    """The contents of the quoted strings in ``code`` ('...', "...", `...`), in order."""
    return [next(g for g in m.groups() if g is not None) for m in _CODE_LITERAL.finditer(code)]


@dataclass(frozen=True)
class InlineCode:
    """What a piece of inline code is seen to reach, read by its look without running it."""

    # Python (or gdb's): read with ast instead, nothing below is filled in.
    python: bool = False
    # tcl-like code: the whole code is also judged as shell commands.
    shell: bool = False
    # Path literals it names.
    paths: tuple[str, ...] = ()
    # Why what it does is only known when it runs.
    unresolved: tuple[str, ...] = ()
    # String literals to judge as shell commands: the code starts other programs.
    commands: tuple[str, ...] = ()
    # Said after those commands are judged, so that their own reasons come first.
    unresolved_after: tuple[str, ...] = ()


def read_code(name: str, code: str) -> InlineCode:
    """Judge ``code`` that the program ``name`` runs from its command line or a here-document.

    Inline code cannot be judged like shell, so: paths in its string literals are reached;
    if it starts programs, its literals are judged as shell commands and the call is asked.
    """
    if not code or name == "sed":
        return InlineCode()  # sed scripts are parsed command by command (programs.sed_effects)
    if is_python(name) or name in ("gdb",):
        return InlineCode(python=True)
    literals = string_literals(code)
    paths = []
    for literal in literals:
        text = literal.strip()
        if text.startswith(("/", "~", "./", "../")) or re.match(r"\.?[\w.-]+/", text) or text.startswith(".env") \
                or text in (".", ".."):
            paths.append(text)
    unresolved = []
    if _CODE_IO.search(code) and _CODE_BUILT.search(code):
        unresolved.append(f"the {name} code builds a path or argument at run time for a call that reaches files")
    if _CODE_RISKY.search(code):
        unresolved.append(f"the {name} code signals processes, changes users or file modes")
    commands: list[str] = []
    after = []
    if _SHELL_OUT.search(code):
        commands = literals
        after.append(f"the {name} code starts other programs; what they run is only known when it runs")
    elif _DELETE_WORDS.search(code) and any(p.strip() in ("/", "~", "~/") for p in literals):
        unresolved.append(f"the {name} code deletes files under / or the home directory")
    return InlineCode(shell=name in _SHELL_LIKE, paths=tuple(paths), unresolved=tuple(unresolved),
                      commands=tuple(commands), unresolved_after=tuple(after))


@dataclass(frozen=True)
class CodeSource:
    """Where the code a shell, ``eval``, ``source`` or an interpreter runs comes from."""

    # "shell": ``text`` is shell (``bash -c``, ``eval``); "inline": ``text`` is the interpreter's
    # own code (``-e``); "stdin": it reads its script from its input; "none": a script file, or nothing.
    kind: Literal["none", "shell", "inline", "stdin"] = "none"
    text: str = ""
    # What the shell text is called after the program's name (`bash -c`).
    option: str = ""
    # Why the code is only known when it runs (kind is then "none").
    unresolved: str | None = None


def code_source(name: str, args: list[str], dynamic: list[bool], *, substituted: bool) -> CodeSource:
    """Where the code ``name args`` runs comes from. ``dynamic`` says of each word of the argv
    (the program's name first) whether it is only known when it runs; ``substituted``: the
    command holds command substitutions."""
    if name == "eval":
        if any(dynamic[1:]):
            return CodeSource(unresolved="`eval` runs a string that is only known when it runs")
        return CodeSource("shell", " ".join(args))
    if name in (".", "source"):
        if any(dynamic[1:2]):
            return CodeSource(unresolved=f"`{name}` reads a script that is only known when it runs")
        return CodeSource("stdin" if args[:1] and args[0] in _STDIN_FILES else "none")
    if name in SHELLS:
        index = option_cluster_has(args, "c")
        if index is not None:
            script_at = index + 1
            if script_at >= len(args):
                return CodeSource()
            if dynamic[script_at + 1] and not substituted:
                return CodeSource(unresolved=f"`{name} -c` runs a script that is only known when it runs")
            if dynamic[script_at + 1]:
                return CodeSource(unresolved=f"`{name} -c` runs the output of a command substitution")
            return CodeSource("shell", args[script_at], option=" -c")
    if name in INTERPRETERS or is_python(name):
        code = inline_option_code(args)
        if code is not None:
            return CodeSource("inline", code)
    script = next((i for i, a in enumerate(args) if not a.startswith("-") and not a.startswith("+")), None)
    if script is not None and dynamic[script + 1]:
        return CodeSource(unresolved=f"`{name}` runs a script that is only known when it runs")
    if script is not None and args[script] in _STDIN_FILES - {"-"}:
        return CodeSource("stdin")
    return CodeSource("stdin" if reads_code_from_stdin(name, args) else "none")


def reads_code_from_stdin(name: str, args: list[str]) -> bool:
    """True when a shell or interpreter takes its program from stdin (no script, no -c)."""
    for arg in args:
        if arg in ("-", "-s"):
            return True
        if arg in _INLINE_CODE_OPTIONS or (arg.startswith("-") and not arg.startswith("--") and name not in SHELLS and arg[:2] in _INLINE_CODE_OPTIONS):
            return False
        if not arg.startswith("-") and not arg.startswith("+"):
            return False  # a script file
    return True


def inline_option_code(args: list[str]) -> str | None:
    """The code given with `-c` / `-e` / `-r` / `--eval` (also glued: `-e'code'`), if any."""
    for i, arg in enumerate(args):
        if arg in _INLINE_CODE_OPTIONS or arg in ("-pe", "-ne", "-le", "-lne", "-lpe"):
            return args[i + 1] if i + 1 < len(args) else ""
        if arg.startswith("--eval=") or arg.startswith("--print="):
            return arg.split("=", 1)[1]
        if re.fullmatch(r"-[a-zA-Z]*[ceErp]", arg) and i + 1 < len(args):
            return args[i + 1]
        if not arg.startswith("-"):
            return None
    return None


def program_of(name: str, args: list[str]) -> str | None:
    """The program text of awk / sed / tcl-like commands (first non-option word, or -e / --expression)."""
    with_value = {"awk": "fvF", "gawk": "fvFiEl", "mawk": "fvF", "nawk": "fvF", "sed": "fl"}.get(name, "")
    i = 0
    scripts: list[str] = []
    while i < len(args):
        arg = args[i]
        if arg in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1])
            i += 2
            continue
        if arg.startswith("--expression="):
            scripts.append(arg.split("=", 1)[1])
        elif arg.startswith("-") and len(arg) == 2 and arg[1] in with_value:
            if arg == "-f":
                return "\n".join(scripts) or None  # the program is a file
            i += 2
            continue
        elif not arg.startswith("-"):
            return "\n".join(scripts) if scripts else arg
        i += 1
    return "\n".join(scripts) or None
