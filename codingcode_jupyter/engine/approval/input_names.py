"""Programs that work on file names read from a list: one job, pure functions, no walker state.

``xargs cat``, ``tar -T list``, ``cpio -o``, ``zip -@`` take the names of the files they work on
from their input or a file. :func:`input_names` says which names they get when the command
piped in prints them from its own words (``find src | xargs cat``), and why they are only known
when it runs otherwise (``git ls-files | xargs cat``, ``xargs -a list cat``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .program_traits import PRINTERS
from .shell_command import SimpleCommand

__all__ = ["InputNames", "input_names"]

# Upstream commands whose printed names are known from their own words (_named_paths): any other
# upstream (cat of a list, git ls-files, sort) prints names only known when it runs.
_NAME_PRINTERS = frozenset({"find", "ls", "echo", "printf"})


def _reads_names(name: str, args: list[str]) -> bool:
    """Whether a program takes the names of the files it reads from a list (its input, a file):
    cpio copy-out and pass-through, tar/rsync ``-T``/``--files-from``, zip ``-@``."""
    if name == "cpio":
        return any(a in ("--create", "--pass-through") or (a.startswith("-") and not a.startswith("--")
                                                           and ("o" in a[1:] or "p" in a[1:])) for a in args)
    if name in ("tar", "bsdtar", "rsync"):
        return any(a in ("-T", "--files-from") or a.startswith("--files-from=")
                   or (a.startswith("-T") and not a.startswith("--")) for a in args)
    if name == "zip":
        return any(a in ("-@", "--names-stdin") for a in args)
    return False


def _names_file(name: str, args: list[str]) -> bool:
    """``tar -T FILE`` / ``--files-from=FILE`` / ``xargs -a FILE``: the list is a file, whatever is piped in."""
    flags = {"tar": ("-T", "--files-from"), "bsdtar": ("-T", "--files-from"), "rsync": ("--files-from",),
             "xargs": ("-a", "--arg-file")}.get(name, ())
    for index, arg in enumerate(args):
        for flag in flags:
            value = arg[len(flag) + 1:] if arg.startswith(flag + "=") else (
                args[index + 1] if arg == flag and index + 1 < len(args) else None)
            if value is not None and value != "-":
                return True
    return False


def _named_paths(command: SimpleCommand) -> list[str]:
    """What an upstream command prints as file names for xargs: its path-like words, find's roots
    (ls with no operand lists the working directory)."""
    if command.name == "ls":
        return [w for w in command.argv[1:] if not w.startswith("-")] or ["."]
    if command.name == "find":
        roots = []
        for word in command.argv[1:]:
            if word.startswith("-") or word in ("(", "!", ")"):
                break
            roots.append(word)
        return roots or ["."]
    return [w for w in command.argv[1:] if not w.startswith("-")]


@dataclass(frozen=True)
class InputNames:
    """The file names a command gets from its input, as far as they are known before it runs."""

    # The names the command piped in prints; None when the command reads no names from its input.
    names: tuple[str, ...] | None = None
    # Why the names are only known when it runs.
    unresolved: str | None = None


def input_names(command: SimpleCommand) -> InputNames:
    """The names ``command`` (its wrappers peeled: ``xargs`` leaves a dynamic tail) works on from a list."""
    name, words = command.name, command.argv
    names = None
    if command.dynamic_tail or (command.piped_stdin and name in ("cpio", "tar", "zip", "rsync")):
        names = tuple(w for up in command.upstream[-1:] for w in _named_paths(up))
    unresolved = None
    if (command.dynamic_tail or _reads_names(name, words[1:])) and name not in PRINTERS:
        upstream = command.upstream[-1] if command.piped_stdin and command.upstream else None
        if upstream is None or upstream.name not in _NAME_PRINTERS or _names_file(name, words[1:]):
            # The names come from a file or a program's output (`xargs cat < list`, `git ls-files |
            # xargs cat`, `tar -T list`): which files it reads is known only when it runs.
            where = f"`{upstream.name}`" if upstream is not None else "a file or its input"
            unresolved = f"`{name}` works on names read from {where}, known only when it runs"
    return InputNames(names=names, unresolved=unresolved)
