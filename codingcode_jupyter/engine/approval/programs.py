"""What well-known programs do with their options: commands they run, files they write, where they move.

Many programs that look like readers or archivers run a command given in an option
(`tar --checkpoint-action=exec=CMD`, `rsync -e CMD`, `ssh -o ProxyCommand=CMD`, `vim -c '!CMD'`,
`gdb -ex 'shell CMD'`, `man -P CMD`), write a file named in an option (`sort -o F`, `uniq IN OUT`,
`xxd -r IN OUT`, sed's `w F`, `git log --output=F`) or change directory before touching
their operands (`tar -C D`, `make -C D`, `git -C D`). :func:`effects` says so for one
command's words, so the shell walker can judge the commands and the rules the paths.
:func:`find_exec`, :func:`script_commands` and :func:`symlink_made` read the options the walker
acts on itself (find's clauses run per root, `script -c`, the links `ln -s` makes).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Effects", "effects", "find_exec", "GIT_LISTINGS", "git_lists_only", "pytest_collects_only", "script_commands", "sed_effects", "sed_in_place", "version_query", "symlink_made"]


@dataclass
class Effects:
    """What a program does beyond its plain operands."""

    # Shell command lines it runs, with a label for the reason.
    commands: list[tuple[str, str]] = field(default_factory=list)
    # Python code it runs (gdb's `python`, vim's `py3`).
    python: list[tuple[str, str]] = field(default_factory=list)
    # Code in another language it runs: judged by the inline-code heuristics.
    code: list[tuple[str, str]] = field(default_factory=list)
    # (path, access, label) it reads or writes beyond what its operands say; tree: the whole directory.
    paths: list[tuple[str, str, str]] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    # The directory its relative operands are resolved in, when it moves there itself.
    cwd: str | None = None


def _values(args: list[str], shorts: tuple[str, ...], longs: tuple[str, ...]) -> list[str]:
    """Values of `-X V`, `-XV`, `--long V`, `--long=V` options."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            break
        key, eq, value = arg.partition("=")
        if key in longs:
            if eq:
                out.append(value)
            elif i + 1 < len(args):
                out.append(args[i + 1])
                i += 1
        elif arg in shorts:
            if i + 1 < len(args):
                out.append(args[i + 1])
                i += 1
        else:
            for short in shorts:
                if len(short) == 2 and arg.startswith(short) and len(arg) > 2 and not arg.startswith("--"):
                    out.append(arg[2:])
        i += 1
    return out


def _operands(args: list[str], takes_value: str = "") -> list[str]:
    out, i = [], 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out.extend(args[i + 1:])
            break
        if arg.startswith("-") and arg != "-":
            if len(arg) == 2 and arg[1] in takes_value:
                i += 1
        else:
            out.append(arg)
        i += 1
    return out


_SSH_COMMAND_OPTIONS = re.compile(r"(?i)\s*(ProxyCommand|LocalCommand|KnownHostsCommand|RemoteCommand)\s*[= ]\s*(.*)", re.S)
_VIM = frozenset({"vim", "vi", "nvim", "ex", "view", "vimdiff", "rvim", "rview", "gvim", "rgvim", "rgview", "evim",
                  "nvi", "vim.tiny", "vim.basic"})
_VIM_HARMLESS = re.compile(r"(set?|setl(ocal)?|syn(tax)?|filetype|colo(rscheme)?|noh(lsearch)?|q(uit)?|qa(ll)?|wq|x|"
                           r"%?s/.*|g/[^!]*/[dp]|\d+|\$|normal!? [^:!]*)!?(\s.*)?")
_VIM_FILE = re.compile(r"(r|read|e|edit|so|source|w|write|sav|saveas|wq|x|up|update|tabe|sp|split)!?\s+(.+)")


def _ssh_options(values: list[str], label: str, out: Effects) -> None:
    for value in values:
        match = _SSH_COMMAND_OPTIONS.fullmatch(value)
        if match and match.group(1).lower() != "remotecommand":
            command = match.group(2).strip()
            if command and command.lower() != "none":
                out.commands.append((command, f"{label} -o {match.group(1)}"))


def _vim_command(command: str, label: str, out: Effects) -> None:
    text = command.lstrip(":").strip()
    if not text:
        return
    if text.startswith("!"):
        out.commands.append((text[1:], f"{label} :!"))
        return
    head = text.split(None, 1)
    if head[0] in ("py", "py3", "python", "python3", "pyx", "pythonx") and len(head) > 1:
        out.python.append((head[1], f"{label} :{head[0]}"))
        return
    match = _VIM_FILE.fullmatch(text)
    if match:
        verb = match.group(1)
        access = "write" if verb in ("w", "write", "sav", "saveas", "wq", "x", "up", "update") else "read"
        target = match.group(2).strip()
        if target.startswith("!"):
            out.commands.append((target[1:], f"{label} :{verb} !"))
        else:
            out.paths.append((target, access, f"{label} :{verb}"))
        return
    if _VIM_HARMLESS.fullmatch(text):
        return
    out.unresolved.append(f"`{label}` runs the editor command `{text[:60]}`, which may do anything")


def _gdb_command(command: str, label: str, out: Effects) -> None:
    text = command.strip()
    head, _, rest = text.partition(" ")
    if text.startswith("!"):
        out.commands.append((text[1:], f"{label} !"))
    elif head in ("shell", "pipe", "|"):
        out.commands.append((rest, f"{label} {head}"))
    elif head in ("python", "py", "pi", "python-interactive"):
        out.python.append((rest, f"{label} python"))
    elif head in ("source", "so"):
        out.paths.append((rest.strip(), "read", f"{label} source"))
    elif re.search(r"\b(system|popen|exec\w*|dlopen)\s*\(", text) or head in ("guile", "gu"):
        out.unresolved.append(f"`{label}` calls into the debugged program (`{text[:60]}`)")


def _sqlite_command(command: str, label: str, out: Effects) -> None:
    text = command.strip()
    if not text.startswith("."):
        return
    head, _, rest = text.partition(" ")
    rest = rest.strip()
    if head in (".shell", ".system"):
        out.commands.append((rest, f"{label} {head}"))
    elif head in (".import", ".read", ".open", ".restore"):
        if rest.startswith("|"):
            out.commands.append((rest[1:], f"{label} {head} |"))
        elif rest:
            out.paths.append((rest.split()[0], "read", f"{label} {head}"))
    elif head in (".output", ".once", ".save", ".backup", ".log"):
        target = rest.split()[-1] if rest.split() else ""
        if target.startswith("|"):
            out.commands.append((rest[rest.index("|") + 1:], f"{label} {head} |"))
        elif target and not target.startswith("-"):
            out.paths.append((target, "write", f"{label} {head}"))
    elif head in (".load", ".excel", ".edit"):
        out.unresolved.append(f"`{label} {head}` loads or runs code outside the database")


def sed_effects(script: str, label: str = "sed") -> Effects:
    """The `w`/`W` files a sed script writes, the `r`/`R` files it reads, the `e` commands it runs.

    The script is read command by command (addresses, then a command letter), not matched as a
    whole, so a path's letters cannot change the verdict.
    """
    out = Effects()
    for command, argument, flags in _sed_commands(script):
        if command in "wW" and argument:
            out.paths.append((argument, "write", f"{label} {command}"))
        elif command in "rR" and argument:
            out.paths.append((argument, "read", f"{label} {command}"))
        elif command == "e":
            if argument:
                out.commands.append((argument, f"{label} e"))
            else:
                out.unresolved.append("the `sed` script runs its pattern space as a shell command (`e`)")
        elif command == "s":
            if "e" in flags:
                out.unresolved.append("the `sed` substitution runs its result as a shell command (the `e` flag)")
            if "w" in flags:
                target = flags.split("w", 1)[1].strip()
                if target:
                    out.paths.append((target, "write", f"{label} s///w"))
    return out


def _sed_commands(script: str) -> list[tuple[str, str, str]]:
    """(command letter, file or text argument, s-flags) for each command of a sed script."""
    out: list[tuple[str, str, str]] = []
    i, n = 0, len(script)

    def skip_blank() -> None:
        nonlocal i
        while i < n and script[i] in " \t;\n{}!":
            i += 1

    def skip_regex(delim: str) -> None:
        nonlocal i
        while i < n and script[i] != delim:
            i += 2 if script[i] == "\\" else 1
        i += 1

    def skip_address() -> None:
        nonlocal i
        if i < n and (script[i].isdigit() or script[i] == "$"):
            while i < n and (script[i].isdigit() or script[i] in "$~"):
                i += 1
        elif i < n and script[i] == "/":
            i += 1
            skip_regex("/")
            while i < n and script[i] in "IM":
                i += 1
        elif i + 1 < n and script[i] == "\\":
            delim = script[i + 1]
            i += 2
            skip_regex(delim)

    while i < n:
        skip_blank()
        if i >= n:
            break
        skip_address()
        if i < n and script[i] == ",":
            i += 1
            skip_address()
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            break
        letter = script[i]
        i += 1
        if letter in "wWrRe" or letter in "aic":
            end = script.find("\n", i)
            end = n if end < 0 else end
            argument = script[i:end].strip()
            i = end
            if letter in "wWrRe":
                out.append((letter, argument, ""))
        elif letter in "sy" and i < n:
            delim = script[i]
            i += 1
            skip_regex(delim)
            skip_regex(delim)
            if letter == "y":
                continue
            start = i
            while i < n and script[i] not in ";\n}":
                if script[i] == "w":
                    end = script.find("\n", i)
                    i = n if end < 0 else end
                    break
                i += 1
            out.append(("s", "", script[start:i]))
        elif letter in "bt:T":
            while i < n and script[i] not in ";\n":
                i += 1
        elif letter == "#":
            end = script.find("\n", i)
            i = n if end < 0 else end
        else:
            out.append((letter, "", ""))
    return out


def effects(name: str, argv: list[str], cwd: str | None) -> Effects:
    """What ``argv`` (a command whose basename is ``name``) runs, writes and where it moves."""
    out = Effects()
    handler = _EFFECTS.get(name)
    if handler is not None:
        handler(name, argv[1:], cwd, out)
    return out


# Each handler reads one program's options (its words after the name) into ``out``.
_Handler = Callable[[str, list[str], str | None, Effects], None]


def _tar_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """tar runs programs named in its options (checkpoints, compressors, volume scripts) and can move first."""
    for value in _values(args, (), ("--checkpoint-action",)):
        if value.startswith("exec="):
            out.commands.append((value[5:], "tar --checkpoint-action"))
    for value in _values(args, ("-I",), ("--to-command", "--use-compress-program", "--rsh-command",
                                          "--info-script", "--new-volume-script")):
        out.commands.append((value, "tar option"))
    for value in _values(args, ("-F",), ()):
        out.commands.append((value, "tar -F"))
    for value in _values(args, (), ("--mode",)):
        out.commands.append((f"chmod {value} tar-member", "tar --mode"))
    directories = _values(args, ("-C",), ("--directory",))
    if directories:
        out.cwd = _join(cwd, directories[0])


def _zip_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """zip tests its archive with a command given in an option."""
    for value in _values(args, ("-TT",), ("--unzip-command",)):
        out.commands.append((value, "zip -TT"))


def _rsync_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """rsync runs its remote shell (and remote rsync) as given, and its --chmod changes modes."""
    for value in _values(args, ("-e",), ("--rsh", "--rsync-path")):
        out.commands.append((value, "rsync -e"))
    for value in _values(args, (), ("--chmod",)):
        out.commands.append((f"chmod {value} rsync-target", "rsync --chmod"))


def _ssh_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """The ssh family runs commands its -o options name and reads the config and key files given."""
    _ssh_options(_values(args, ("-o",), ()), name, out)
    for value in _values(args, ("-F", "-i"), ()):
        out.paths.append((value, "read", f"{name} -F/-i"))
    if name in ("scp", "sftp"):
        for value in _values(args, ("-S",), ()):
            out.commands.append((value, f"{name} -S"))
    if name == "sshfs":
        for value in _values(args, ("-o",), ()):
            for part in value.split(","):
                key, _, command = part.partition("=")
                if key in ("ssh_command", "sftp_server") and command:
                    out.commands.append((command, f"sshfs -o {key}"))


def _man_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """man runs the pager (or HTML browser) it is given."""
    for value in _values(args, ("-P",), ("--pager", "--html")):
        out.commands.append((value, "man -P"))


def _pager_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """A pager's `+CMD` startup commands can run a shell command (`+!`) or pipe and save what it shows."""
    for arg in args:
        if arg.startswith("+"):
            text = arg[1:].lstrip("+")
            if text.startswith("!"):
                out.commands.append((text[1:], f"{name} +!"))
            elif text.startswith(("|", "s", "o")) and len(text) > 1 and name == "less":
                out.unresolved.append(f"`{name} {arg}` pipes or saves what it shows")


def _vim_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """vim runs the editor commands of -c, --cmd and +CMD, and the script files of -S."""
    for value in _values(args, ("-c",), ("--cmd",)):
        _vim_command(value, f"{name} -c", out)
    for arg in args:
        if arg.startswith("+") and len(arg) > 1:
            _vim_command(arg[1:], f"{name} +", out)
    for value in _values(args, ("-S",), ()):
        out.paths.append((value, "read", f"{name} -S"))
        out.unresolved.append(f"`{name} -S {value}` runs the editor script in that file")


def _gdb_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """gdb runs the debugger commands of -ex and the script files of -x."""
    for value in _values(args, ("-ex", "-iex", "--ex", "--iex"), ("--eval-command", "--init-eval-command")):
        _gdb_command(value, "gdb -ex", out)
    for value in _values(args, ("-x",), ("--command",)):
        out.paths.append((value, "read", "gdb -x"))
        out.unresolved.append(f"`gdb -x {value}` runs the debugger script in that file")


def _make_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """make evaluates the makefile text of --eval (recipes, $(shell)) and can move first (-C)."""
    for value in _values(args, ("-E",), ("--eval",)):
        _make_text(value, out)
    directories = _values(args, ("-C",), ("--directory",))
    if directories:
        out.cwd = _join(cwd, directories[0])


def _sqlite_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """sqlite3's dot-commands (from -cmd or its SQL operands) run commands and read or write files."""
    for value in _values(args, ("-cmd",), ()):
        _sqlite_command(value, "sqlite3 -cmd", out)
    for arg in _operands(args)[1:]:
        for line in arg.split("\n"):
            _sqlite_command(line, "sqlite3", out)


def _git_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """git moves before its subcommand (the last global -C wins) and writes what --output names."""
    directories = _values(_git_globals(args), ("-C",), ())
    if directories:
        out.cwd = _join(cwd, directories[-1])
    for value in _values(args, (), ("--output",)):
        out.paths.append((value, "write", "git --output"))


def _sort_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """sort writes the file -o names."""
    for value in _values(args, ("-o",), ("--output",)):
        out.paths.append((value, "write", "sort -o"))


def _uniq_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """uniq writes its second operand."""
    operands = _operands(args, "fsw")
    if len(operands) >= 2:
        out.paths.append((operands[1], "write", "uniq OUTPUT"))


def _xxd_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """xxd -r writes its second operand."""
    if any(a == "-r" or (a.startswith("-") and not a.startswith("--") and "r" in a[1:] and len(a) <= 4) for a in args):
        operands = _operands(args, "cglosC")
        if len(operands) >= 2:
            out.paths.append((operands[1], "write", "xxd -r OUTFILE"))


def _container_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """A container engine's volumes expose a host directory, whole, to whatever runs inside."""
    for value in _values(args, ("-v",), ("--volume", "--mount")):
        source = value
        if "source=" in value or "src=" in value:
            source = re.split(r"(?:source|src)=", value, maxsplit=1)[1].split(",")[0]
        else:
            source = value.split(":", 1)[0]
        if source.startswith(("/", "~", ".")):
            out.paths.append((source, "tree", f"{name} -v"))


def _fzf_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """fzf's key bindings and preview run the commands they name."""
    for value in _values(args, (), ("--bind", "--preview")):
        for command in re.findall(r"(?:execute(?:-silent)?|become|reload|preview)[(\[{<](.*?)[)\]}>]", value):
            out.commands.append((command, "fzf --bind"))


def _aria2c_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """aria2c runs the hook commands given for download events."""
    for value in _values(args, (), ("--on-download-complete", "--on-download-error", "--on-download-start",
                                     "--on-download-pause", "--on-download-stop", "--on-bt-download-complete")):
        out.commands.append((value, "aria2c --on-download"))


def _crontab_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """crontab, unless it only lists or removes, installs commands that run later."""
    if not any(a in ("-l", "-r", "-V", "--help") for a in args):
        out.unresolved.append("`crontab` installs commands that run later, out of sight of this check")


def _puppet_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """`puppet apply` runs a manifest: its exec commands when they can be read, else anything."""
    if args[:1] != ["apply"]:
        return
    for value in _values(args, ("-e",), ("--execute",)):
        commands = re.findall(r"command\s*=>\s*['\"]([^'\"]*)['\"]", value)
        out.commands.extend((c, "puppet exec") for c in commands)
        if not commands:
            out.unresolved.append("`puppet apply -e` applies a manifest that may do anything")
    if not _values(args, ("-e",), ("--execute",)):
        out.unresolved.append("`puppet apply` applies a manifest that may do anything")


def _emacs_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """emacs evaluates the Lisp of --eval."""
    for value in _values(args, (), ("--eval", "-eval", "-e")):
        out.code.append((value, f"{name} --eval"))


def _exiftool_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """exiftool evaluates the Perl of -if and -p."""
    for value in _values(args, ("-if", "-p"), ("-userparam",)):
        out.code.append((value, "exiftool -if"))


def _rpm_effects(name: str, args: list[str], cwd: str | None, out: Effects) -> None:
    """rpm expands the macros of --eval (which may run commands) and pipes its output to --pipe."""
    for value in _values(args, ("-E",), ("--eval",)):
        out.code.append((value, f"{name} --eval"))
        if "%(" in value or "lua:" in value:
            out.unresolved.append(f"`{name} --eval` runs a macro that may run commands")
    for value in _values(args, (), ("--pipe",)):
        out.commands.append((value, f"{name} --pipe"))


_EFFECTS: dict[str, _Handler] = {
    **dict.fromkeys(("tar", "bsdtar", "gtar"), _tar_effects),
    "zip": _zip_effects,
    "rsync": _rsync_effects,
    **dict.fromkeys(("ssh", "scp", "sftp", "sshfs", "autossh"), _ssh_effects),
    **dict.fromkeys(("man", "git-man"), _man_effects),
    **dict.fromkeys(("less", "more", "most"), _pager_effects),
    **dict.fromkeys(_VIM, _vim_effects),
    **dict.fromkeys(("gdb", "cgdb", "gdb-multiarch"), _gdb_effects),
    **dict.fromkeys(("make", "gmake", "remake"), _make_effects),
    **dict.fromkeys(("sqlite3", "sqlite"), _sqlite_effects),
    "git": _git_effects,
    "sort": _sort_effects,
    "uniq": _uniq_effects,
    "xxd": _xxd_effects,
    **dict.fromkeys(("docker", "podman", "nerdctl"), _container_effects),
    "fzf": _fzf_effects,
    "aria2c": _aria2c_effects,
    "crontab": _crontab_effects,
    "puppet": _puppet_effects,
    **dict.fromkeys(("emacs", "emacsclient"), _emacs_effects),
    "exiftool": _exiftool_effects,
    **dict.fromkeys(("rpm", "rpmquery", "rpmbuild", "rpmspec"), _rpm_effects),
}


def find_exec(args: list[str]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """`find ROOTS ... -exec CMD {} ;`: find's roots and, in order, each non-empty -exec / -execdir /
    -ok / -okdir clause with its action (`{}` left in: it stands for each file under a root)."""
    i = 0
    while i < len(args) and args[i] in ("-H", "-L", "-P", "-D", "-O") or (i < len(args) and args[i].startswith("-O")):
        i += 2 if args[i] == "-D" else 1
    roots = []
    while i < len(args) and not (args[i].startswith("-") or args[i] in ("(", "!", ")")):
        roots.append(args[i])
        i += 1
    clauses = []
    while i < len(args):
        if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(args) and args[j] not in (";", "+"):
                j += 1
            if args[i + 1:j]:
                clauses.append((args[i], args[i + 1:j]))
            i = j + 1
        else:
            i += 1
    return roots or ["."], clauses


def script_commands(argv: list[str]) -> list[str]:
    """`script -c CMD` (also `--command=CMD`, `-qc CMD`): the commands script runs."""
    found = []
    for i, word in enumerate(argv[1:], start=1):
        value = None
        if word in ("-c", "--command") and i + 1 < len(argv):
            value = argv[i + 1]
        elif word.startswith("--command="):
            value = word.split("=", 1)[1]
        elif re.fullmatch(r"-[a-zA-Z]*c", word) and i + 1 < len(argv):
            value = argv[i + 1]
        if value is not None:
            found.append(value)
    return found


def symlink_made(args: list[str], cwd: str | None) -> tuple[str, str] | None:
    """`ln -s TARGET LINK` run in ``cwd``: (the link's absolute path, the absolute path it points to)."""
    import os

    if not any(a in ("--symbolic",) or (a.startswith("-") and not a.startswith("--") and "s" in a) for a in args):
        return None
    operands = [a for a in args if not a.startswith("-")]
    if not operands or cwd is None:
        return None
    target = operands[0]
    link = operands[1] if len(operands) > 1 else os.path.basename(target.rstrip("/"))
    link_abs = os.path.normpath(os.path.join(cwd, os.path.expanduser(link)))
    if os.path.isdir(link_abs) and len(operands) > 1 and not any("T" in a for a in args if a.startswith("-")):
        link_abs = os.path.join(link_abs, os.path.basename(target.rstrip("/")))
    target_abs = os.path.normpath(os.path.join(os.path.dirname(link_abs), os.path.expanduser(target)))
    return link_abs, target_abs


def _git_globals(args: list[str]) -> list[str]:
    """git's own options, before the subcommand."""
    out, i = [], 0
    while i < len(args) and args[i].startswith("-"):
        out.append(args[i])
        if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") and i + 1 < len(args):
            out.append(args[i + 1])
            i += 1
        i += 1
    return out


def _make_text(text: str, out: Effects) -> None:
    for command in re.findall(r"\$[({]shell\s+([^)}]*)[)}]", text):
        out.commands.append((command, "make $(shell)"))
    for line in text.split("\n"):
        if line.startswith("\t"):
            out.commands.append((line.lstrip("\t@-+"), "make recipe"))


def _join(cwd: str | None, directory: str) -> str | None:
    import os

    if os.path.isabs(directory):
        return os.path.normpath(directory)
    return os.path.normpath(os.path.join(cwd, directory)) if cwd is not None else None


# Options of git's listing subcommands that change something; their operands name what they create.
GIT_LISTINGS: dict[str, frozenset[str]] = {
    # subcommand: the options that make it write
    "branch": frozenset({"-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force",
                          "-u", "--set-upstream-to", "--unset-upstream", "--edit-description", "--track",
                          "--no-track", "-t", "--create-reflog"}),
    "tag": frozenset({"-d", "--delete", "-a", "--annotate", "-s", "--sign", "-u", "--local-user", "-f", "--force",
                       "-m", "--message", "-F", "--file", "-e", "--edit"}),
    "remote": frozenset(),
    "stash": frozenset(),
    "worktree": frozenset(),
}
_GIT_LIST_FLAGS = frozenset({"-l", "--list"})
_GIT_REMOTE_READS = frozenset({"get-url"})


def git_lists_only(args: list[str]) -> bool:
    """Whether git's listing subcommands (``args`` after `git`) only list: `git branch -a`,
    `git tag -l 'v*'`, `git remote -v`, `git stash list`. True for any other
    subcommand: the caller knows which of those read."""
    sub_at = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    if sub_at is None:
        return True
    sub, rest = args[sub_at], args[sub_at + 1:]
    if sub not in GIT_LISTINGS:
        return True  # a reading subcommand of the table's own list
    writing = GIT_LISTINGS[sub]
    options = [a for a in rest if a.startswith("-")]
    operands = [a for a in rest if not a.startswith("-")]
    if any(a.split("=", 1)[0] in writing or (a[:2] in writing and not a.startswith("--")) for a in options):
        return False
    if sub in ("branch", "tag"):
        return not operands or bool(_GIT_LIST_FLAGS & set(options)) or "--contains" in options \
            or "--merged" in options or "--no-merged" in options or "--points-at" in options
    if sub == "remote":
        return not operands or (operands[0] in _GIT_REMOTE_READS and len(operands) == 2)
    if sub == "stash":
        return operands == ["list"]
    return operands[:1] == ["list"]  # worktree


def sed_in_place(args: list[str]) -> bool:
    """Whether sed edits its files in place (`-i`, `-i.bak`, in a cluster `-ni`, `--in-place`)."""
    for arg in args:
        if arg == "--" or not arg.startswith("-"):
            continue
        if arg.startswith("--in-place") or (not arg.startswith("--") and "i" in arg[1:].split("e", 1)[0]):
            return True
    return False


def version_query(args: list[str]) -> bool:
    """`X --version` / `X -V`: the words ask a program for its version and name no file."""
    return len(args) == 1 and args[0] in ("--version", "-V")


def pytest_collects_only(args: list[str]) -> bool:
    """`pytest --collect-only` (or `--co`) lists the tests it would run (`-q`, paths and `-k` allowed)."""
    return any(a in ("--collect-only", "--co") for a in args) and not any(
        a.startswith(("--lf", "--ff", "--sw", "--junit", "--result-log", "--pastebin", "--basetemp", "--cache-clear",
                      "-p", "--pdb", "--debug", "--log-file", "--report-log", "-o", "--override-ini", "-c",
                      "--rootdir", "--confcutdir")) for a in args)
