"""Wrappers peeled off a simple command (env, timeout, nice, xargs, `uv run`...), so rules see the
command that really runs; what a wrapper's own options reach (a file, a directory it moves to,
commands ssh options run) is kept for the command. A shell whose script only runs the words after
it (`bash -c '"$@"' _ CMD...`, :mod:`.shell_positional`) is a wrapper too, peeled at any depth."""

from __future__ import annotations

import os
import shlex
from typing import Literal

from . import programs
from .program_traits import COMMAND_WRAPPERS, SHELLS
from .shell_command import Reach
from .shell_positional import forwarded
from .shell_words import option_cluster_has

__all__ = ["WRAPPERS", "Peeled", "WrapperPeeler"]

# name -> (short options taking a value, long options taking a value, positionals to skip)
WRAPPERS: dict[str, tuple[str, frozenset[str], int]] = {
    "env": ("uCS", frozenset({"--unset", "--chdir", "--split-string"}), 0),
    "timeout": ("sk", frozenset({"--signal", "--kill-after"}), 1),
    "nice": ("n", frozenset({"--adjustment"}), 0),
    "nohup": ("", frozenset(), 0),
    "stdbuf": ("ioe", frozenset({"--input", "--output", "--error"}), 0),
    "time": ("fo", frozenset({"--format", "--output"}), 0),
    "command": ("", frozenset(), 0),
    "builtin": ("", frozenset(), 0),
    "exec": ("a", frozenset(), 0),
    "xargs": ("adEILnPs", frozenset({"--arg-file", "--delimiter", "--eof", "--replace", "--max-lines",
                                     "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}), 0),
    "setsid": ("", frozenset(), 0),
    "ionice": ("cnp", frozenset({"--class", "--classdata", "--pid"}), 0),
    "taskset": ("", frozenset(), 1),
    "unbuffer": ("", frozenset(), 0),
    "chronic": ("", frozenset(), 0),
    "nocache": ("", frozenset(), 0),
    "flock": ("wEnc", frozenset({"--wait", "--timeout", "--conflict-exit-code", "--command"}), 1),
    "strace": ("abeEIoOpPsSuUX", frozenset({"--output", "--trace", "--signal", "--user", "--env", "--attach"}), 0),
    "ltrace": ("abDeEFlLnoOpsSuwxAT", frozenset({"--output", "--library", "--indent"}), 0),
    "chroot": ("", frozenset({"--userspec", "--groups"}), 1),
    "unshare": ("SGRw", frozenset({"--setuid", "--setgid", "--root", "--wd"}), 0),
    "nsenter": ("tSGrwaUe", frozenset({"--target", "--setuid", "--setgid", "--root", "--wd"}), 0),
    "busybox": ("", frozenset(), 0),
    "watch": ("nq", frozenset({"--interval", "--equexit", "--differences"}), 0),
    "ssh": ("BbcDEeFIiJLlmOoPpQRSWw", frozenset(), 1),
    "systemd-run": ("pEuMH", frozenset({"--unit", "--property", "--setenv", "--slice", "--uid", "--gid", "--nice",
                                       "--working-directory", "--description", "--machine", "--host"}), 0),
    "chrt": ("", frozenset(), 1),
    "choom": ("np", frozenset({"--adjust", "--pid"}), 0),
    "aa-exec": ("pn", frozenset({"--profile", "--namespace"}), 0),
    "cpulimit": ("lpe", frozenset({"--limit", "--pid", "--exe"}), 0),
    "firejail": ("", frozenset(), 0),
    "proxychains": ("f", frozenset(), 0),
    "proxychains4": ("f", frozenset(), 0),
    "torsocks": ("uapP", frozenset(), 0),
    "catchsegv": ("", frozenset(), 0),
    "spawn": ("", frozenset(), 0),
}
# Wrapper options naming a file, and how the wrapper uses it.
_WRAPPER_PATH_OPTIONS: dict[tuple[str, str], str] = {
    ("strace", "-o"): "write", ("strace", "--output"): "write", ("ltrace", "-o"): "write",
    ("ltrace", "--output"): "write", ("time", "-o"): "write", ("time", "--output"): "write",
    ("xargs", "-a"): "read", ("xargs", "--arg-file"): "read", ("flock", ""): "unknown", ("chroot", ""): "tree",
    ("ltrace", "-F"): "read", ("strace", "-P"): "list",
}
# Wrapper options that set the working directory of the command they run.
_WRAPPER_CWD_OPTIONS = frozenset({("env", "-C"), ("env", "--chdir"), ("unshare", "-w"), ("unshare", "--wd"),
                                  ("nsenter", "-w"), ("nsenter", "--wd"), ("systemd-run", "--working-directory")})
# Wrappers that join the rest of their words into one string a shell runs.

# What _peel leaves: words, raw words, dynamic flags, assignments, wrappers, dynamic tail, and
# the other names the program may have.
Peeled = tuple[list[str], list[str], list[bool], list[str], list[str], bool, set[str]]


class WrapperPeeler:
    """Peels the wrappers of one simple command, starting in ``start_cwd``; ``unresolved`` is
    the line's list of what cannot be known before it runs (shared with the walker)."""

    def __init__(self, start_cwd: str | None, unresolved: list[str]) -> None:
        self.start_cwd = start_cwd
        self.unresolved = unresolved
        self.reach: list[Reach] = []
        # False: no wrapper moved the directory; None: one moved it somewhere only known at run time.
        self.cwd: str | None | Literal[False] = False
        self.xargs_replace: str | None = None
        # Commands a wrapper's options run (ssh -o ProxyCommand=...): (text, why).
        self.commands: list[tuple[str, str]] = []

    def peel(self, words: list[str], raws: list[str], dynamic: list[bool], assignments: list[str],
              wrappers: list[str], dynamic_tail: bool) -> Peeled:
        """Strip wrappers (env, timeout, xargs...) off the front; what their options reach is kept.

        Their path options land in :attr:`reach` (`strace -o F`, `xargs -a F`, the lock file of
        `flock`), a working directory they set in :attr:`cwd` (`env -C D`).
        """
        extra_names: set[str] = set()
        while words:
            name = os.path.basename(words[0])
            sub = COMMAND_WRAPPERS.get(name)
            if sub is not None and len(words) > 1 and (words[1] == sub or sub == "") and not dynamic[0]:
                # `uv run CMD`, `npm exec CMD`, `npx CMD`: a package tool that runs the command after it.
                i = _package_tool_command(words, sub)
                if i >= len(words):
                    break
                wrappers = [*wrappers, f"{name} {sub}".strip()]
                words, raws, dynamic = words[i:], raws[i:], dynamic[i:]
                continue
            forward = _forwarding_shell(words, dynamic) if name in SHELLS else None
            if forward is not None:
                # `bash -c '"$@"' _ CMD...` runs CMD: peeled here, so any depth of nesting is followed.
                start, resplit = forward
                wrappers = [*wrappers, f"{name} -c"]
                words, raws, dynamic = words[start:], raws[start:], dynamic[start:]
                if resplit:
                    words, raws, dynamic = _split_again(words, raws, dynamic)
                continue
            spec = WRAPPERS.get(name)
            if spec is None or dynamic[0]:
                break
            before = assignments
            if name == "command" and any(w in ("-v", "-V") for w in words[1:2]):
                break  # `command -v x` looks x up, it does not run it
            i, assignments, split = self._wrapper_options(name, spec, words, dynamic, assignments)
            if split is not None:
                step, value = split
                return self._env_split(words, raws, dynamic, i, step, value, assignments, wrappers, dynamic_tail)
            skip = spec[2]
            for offset in range(skip):
                if i + offset < len(words) and name in ("flock", "chroot"):
                    self._option(name, "", words[i + offset], dynamic[i + offset])
            i += skip
            if i >= len(words) and name != "xargs":
                # Nothing after it: the wrapper runs as itself (`env` prints the environment), so
                # the command is judged as written and `Bash(env)` can allow it.
                assignments = before
                break
            wrappers = [*wrappers, name]
            if name == "xargs":
                dynamic_tail = True
                if i >= len(words):  # xargs with no command runs echo
                    words, raws, dynamic = ["echo"], ["echo"], [False]
                    continue
            words, raws, dynamic = words[i:], raws[i:], dynamic[i:]
            if name == "xargs" and self.xargs_replace:
                # `xargs -I{} sh -c '{}'`: every word holding the replace string comes from stdin.
                dynamic = [d or self.xargs_replace in w for w, d in zip(words, dynamic)]
        return words, raws, dynamic, assignments, wrappers, dynamic_tail, extra_names

    def _wrapper_options(self, name: str, spec: tuple[str, frozenset[str], int], words: list[str],
                         dynamic: list[bool], assignments: list[str]) -> tuple[int, list[str], tuple[int, str] | None]:
        """The options of the wrapper ``words[0]`` (and env's NAME=VALUE words), each one's reach noted
        by :meth:`_option`: (index after them, the assignments, and env's split string as (words it
        takes, its text) if one is met, since the rest of the line is then read from that string)."""
        short_val, long_val, _ = spec
        i = 1
        while i < len(words):
            word = words[i]
            if word == "--":
                i += 1
                break
            if name == "env" and "=" in word and not word.startswith("-"):
                assignments = [*assignments, word]
                i += 1
                continue
            if not word.startswith("-") or word == "-":
                break
            if word.startswith("--"):
                key, has_value, value = word.partition("=")
                if name == "env" and key == "--split-string":
                    value = value if has_value else (words[i + 1] if i + 1 < len(words) else "")
                    return i, assignments, (1 if has_value else 2, value)
                takes = key in long_val and not has_value
                if takes and i + 1 < len(words):
                    value = words[i + 1]
                self._option(name, key, value if (has_value or takes) else None, dynamic[i + 1] if takes and i + 1 < len(dynamic) else dynamic[i])
                i += 2 if takes else 1
                continue
            letter = word[1:2]
            if name == "env" and letter == "S":
                value = word[2:] if len(word) > 2 else (words[i + 1] if i + 1 < len(words) else "")
                return i, assignments, (1 if len(word) > 2 else 2, value)
            if letter in short_val:
                glued = len(word) > 2
                option_value = word[2:] if glued else (words[i + 1] if i + 1 < len(words) else None)
                self._option(name, "-" + letter, option_value, dynamic[i] if glued else (dynamic[i + 1] if i + 1 < len(dynamic) else False))
                i += 1 if glued else 2
            else:
                i += 1
        return i, assignments, None

    def _option(self, name: str, option: str, value: str | None, dynamic: bool) -> None:
        """What one option of a wrapper reaches: a file it reads or writes, a directory it moves to."""
        if name == "xargs" and option in ("-I", "--replace", "-i"):
            self.xargs_replace = value or "{}"
            return
        if value is None:
            return
        if (name, option) in _WRAPPER_CWD_OPTIONS:
            if dynamic:
                self.cwd = None
                self.unresolved.append(f"`{name} {option}` moves to a directory that is only known when it runs")
            else:
                base = self.start_cwd
                self.cwd = os.path.normpath(value if os.path.isabs(value) or base is None else os.path.join(base, value))
            return
        if name == "ssh":
            found = programs.Effects()
            if option == "-o":
                programs._ssh_options([value], "ssh", found)
            elif option in ("-F", "-i", "-E"):
                found.paths.append((value, "write" if option == "-E" else "read", f"ssh {option}"))
            self.commands.extend(found.commands)
            self.reach.extend(Reach(p, a, f"`{w}`") for p, a, w in found.paths)
            return
        access = _WRAPPER_PATH_OPTIONS.get((name, option))
        if access is None:
            return
        if name == "chroot" and value != "/":
            self.unresolved.append(f"`chroot {value}` changes what every absolute path means")
        if dynamic:
            self.unresolved.append(f"`{name} {option}` names a file that is only known when it runs")
        self.reach.append(Reach(value, access, f"`{name} {option}`".replace(" `", "`")))

    def _env_split(self, words: list[str], raws: list[str], dynamic: list[bool], i: int, step: int, value: str,
                   assignments: list[str], wrappers: list[str], dynamic_tail: bool) -> Peeled:
        try:
            split = shlex.split(value)
        except ValueError:
            self.unresolved.append(f"`env -S {value}` could not be split")
            split = [value]
        rest = split + words[i + step:]
        rest_raw = split + raws[i + step:]
        rest_dyn = [dynamic[i + 1] if i + 1 < len(dynamic) else False] * len(split) + dynamic[i + step:]
        new_words = ["env", *rest]
        return self.peel(new_words, ["env", *rest_raw], [False, *rest_dyn], assignments, wrappers, dynamic_tail)


def _forwarding_shell(words: list[str], dynamic: list[bool]) -> tuple[int, bool] | None:
    """Where the words a `sh -c SCRIPT NAME WORDS...` runs start when its script only forwards them
    (``"$@"``, ``exec $*``...), and whether bash splits them again at blanks (unquoted, or
    ``"$*"``); None for any other shell line, or one with no words to run."""
    index = option_cluster_has(words[1:], "c")
    if dynamic[0] or index is None:
        return None
    script_at = index + 2  # in ``words``: the program's name first
    if script_at >= len(words) or dynamic[script_at]:
        return None
    script = words[script_at]
    how = forwarded(script)
    start = script_at + 2  # after the script, $0
    if how is None or start >= len(words):
        return None
    return start, how == "*" or '"' not in script


def _split_again(words: list[str], raws: list[str], dynamic: list[bool]) -> tuple[list[str], list[str], list[bool]]:
    """Words expanded unquoted: bash splits each known one at blanks, and each piece is a word."""
    out: list[str] = []
    out_raws: list[str] = []
    flags: list[bool] = []
    for word, raw, flag in zip(words, raws, dynamic):
        pieces = [word] if flag else (word.split() or [word])
        out.extend(pieces)
        out_raws.extend([raw] if len(pieces) == 1 else pieces)
        flags.extend([flag] * len(pieces))
    return out, out_raws, flags


def _package_tool_command(words: list[str], sub: str) -> int:
    """Where the command of `uv run [OPTIONS] [--] CMD` (``sub`` the tool's run word, or none) starts;
    ``len(words)`` when there is none."""
    i = 1 if sub == "" else 2
    while i < len(words) and words[i].startswith("-") and words[i] != "--":
        i += 1
    if i < len(words) and words[i] == "--":
        i += 1
    return i
