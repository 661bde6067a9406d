"""Shell commands parsed the way bash will run them, so rules can judge every simple command.

bashlex gives the syntax tree; this module walks it and yields one :class:`SimpleCommand`
per command bash would execute: in lists, pipelines, subshells, functions, loops, command
and process substitutions, ``bash -c`` / ``eval`` strings, here-documents fed to a shell and
``find -exec`` clauses. Wrappers (env, timeout, nice, xargs, ...) are peeled so rules see
the command that really runs. Whatever cannot be known before the command runs (a command
name built from a variable, a script piped into a shell, syntax bashlex cannot read) is
reported in :attr:`ParsedCommand.unresolved`, never guessed.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

import bashlex

__all__ = ["SimpleCommand", "Redirect", "ParsedCommand", "parse_command", "SHELLS", "INTERPRETERS", "DOWNLOADERS"]

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "busybox"})
INTERPRETERS = frozenset(
    {"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "deno", "bun", "osascript"}
)
DOWNLOADERS = frozenset(
    {"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "nc", "ncat", "netcat", "socat",
     "lwp-request", "lwp-download", "GET", "tftp", "ftp"}
)
# Options after which the interpreter runs code given inline, not a file or stdin.
_INLINE_CODE_OPTIONS = frozenset({"-c", "-e", "-E", "-p", "-r", "-m", "--eval", "--print", "--command"})
_MAX_DEPTH = 6
_KNOWN_VARS = ("HOME", "PWD")
_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass
class Redirect:
    """One redirection: its operator and target word."""

    op: str
    target: str
    dynamic: bool = False


@dataclass
class SimpleCommand:
    """One command bash would execute, wrappers peeled, quotes removed."""

    argv: list[str]
    # Every spelling the command name may have (bashlex's word, the raw text unquoted).
    names: set[str] = field(default_factory=set)
    assignments: list[str] = field(default_factory=list)
    wrappers: list[str] = field(default_factory=list)
    full_argv: list[str] = field(default_factory=list)
    # Absolute working directory, or None when a `cd` to an unknown place came first.
    cwd: str | None = None
    # Parallel to argv: the word holds an expansion that is only known at run time.
    dynamic: list[bool] = field(default_factory=list)
    # xargs appends words read from stdin: the real argument list is longer than argv.
    dynamic_tail: bool = False
    redirects: list[Redirect] = field(default_factory=list)
    # Stdin comes from an earlier pipeline stage; `upstream` holds those stages' commands.
    piped_stdin: bool = False
    upstream: list["SimpleCommand"] = field(default_factory=list)
    # Commands inside $(...) / <(...) in this command's words.
    substituted: list["SimpleCommand"] = field(default_factory=list)
    # A `bash -c STR` / `eval STR` whose script is judged as separate commands.
    container: bool = False
    via: str = ""
    text: str = ""

    @property
    def name(self) -> str:
        """The command's basename (`/usr/bin/sudo` → `sudo`)."""
        return os.path.basename(self.argv[0]) if self.argv else ""

    @property
    def basenames(self) -> set[str]:
        """Basenames of every spelling of the command name."""
        return {os.path.basename(n) for n in self.names | {self.argv[0] if self.argv else ""}} - {""}

    def rule_text(self) -> str:
        """What rule patterns are matched against: assignments, then the peeled argv."""
        return " ".join([*self.assignments, *self.argv])

    def wrapped_text(self) -> str:
        return " ".join([*self.assignments, *self.full_argv])


@dataclass
class ParsedCommand:
    """Every simple command of a command line, and what could not be resolved statically."""

    source: str
    commands: list[SimpleCommand] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)


def parse_command(source: str, *, cwd: str | None = None, home: str | None = None) -> ParsedCommand:
    """Parse a command line; ``cwd`` is where it starts (absolute), ``home`` what ``~`` means."""
    home = home or os.path.expanduser("~")
    walker = _Walker(home=home)
    walker.parse(source, cwd=cwd, via="", depth=0)
    return ParsedCommand(source=source, commands=walker.commands, unresolved=walker.unresolved)


# bashlex does not implement the `time` keyword; blank it out (same length keeps positions)
# where it starts a command, the wrapper list handles /usr/bin/time separately.
_TIME_KEYWORD = re.compile(r"(^|[;&|(){}\n]\s*|!\s+)time(\s+-p)?(?=\s)")


def _blank_time(source: str) -> str:
    return _TIME_KEYWORD.sub(lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), source)


def _unquote_raw(text: str) -> str:
    """The raw text of a word with quotes and backslashes dropped, as a second opinion."""
    return re.sub(r"\\(.)", r"\1", text).replace("'", "").replace('"', "")


def _option_cluster_has(args: list[str], letter: str) -> int | None:
    """Index of the first short-option cluster containing ``letter`` (e.g. `-lc`)."""
    for i, arg in enumerate(args):
        if arg == "--" or not arg.startswith("-") or arg.startswith("--"):
            if arg.startswith("--"):
                continue
            return None
        if letter in arg[1:]:
            return i
    return None


# name -> (short options taking a value, long options taking a value, positionals to skip)
_WRAPPERS: dict[str, tuple[str, frozenset[str], int]] = {
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
}


class _Walker:
    def __init__(self, home: str) -> None:
        self.home = home
        self.commands: list[SimpleCommand] = []
        self.unresolved: list[str] = []
        self.cwd: str | None = None

    # -- entry points ---------------------------------------------------------------

    def parse(self, source: str, *, cwd: str | None, via: str, depth: int) -> list[SimpleCommand]:
        """Walk ``source``; returns the commands it added."""
        start = len(self.commands)
        if depth > _MAX_DEPTH:
            self.unresolved.append(f"commands nested more than {_MAX_DEPTH} levels deep")
            return []
        if not source.strip():
            return []
        saved = self.cwd
        self.cwd = cwd
        try:
            trees = bashlex.parse(_blank_time(source))
        except Exception as error:  # bashlex raises several types for syntax it cannot read
            snippet = source if len(source) <= 80 else source[:77] + "..."
            self.unresolved.append(f"the shell syntax of `{snippet}` could not be parsed ({type(error).__name__}: {error})")
            self.cwd = saved
            return []
        for tree in trees:
            self._visit(tree, source, via=via, depth=depth, piped=False, upstream=[])
        added = self.commands[start:]
        self.cwd = saved if depth else self.cwd
        return added

    # -- tree walk ------------------------------------------------------------------

    def _visit(self, node, source: str, *, via: str, depth: int, piped: bool, upstream: list[SimpleCommand]) -> None:
        kind = node.kind
        if kind == "command":
            self._command(node, source, via=via, depth=depth, piped=piped, upstream=upstream)
        elif kind == "pipeline":
            stages = [p for p in node.parts if p.kind not in ("pipe", "reservedword")]
            before: list[SimpleCommand] = list(upstream)
            for index, stage in enumerate(stages):
                start = len(self.commands)
                self._visit(stage, source, via=via, depth=depth, piped=piped or index > 0, upstream=list(before))
                before.extend(self.commands[start:])
        elif kind == "compound":
            subshell = bool(node.list) and getattr(node.list[0], "word", "") == "("
            saved = self.cwd
            for part in node.list:
                self._visit(part, source, via=via, depth=depth, piped=piped, upstream=upstream)
            for redirect in getattr(node, "redirects", []) or []:
                self._redirect(redirect, source, via=via, depth=depth)
            if subshell:
                self.cwd = saved
        elif kind in ("list", "if", "for", "while", "until", "function"):
            for part in node.parts:
                if part.kind == "word":
                    self._word(part, source, via=via, depth=depth)
                else:
                    self._visit(part, source, via=via, depth=depth, piped=piped, upstream=upstream)
        elif kind in ("operator", "reservedword", "pipe"):
            return
        elif kind == "word":
            self._word(node, source, via=via, depth=depth)
        else:
            self.unresolved.append(f"unsupported shell construct `{kind}`")

    def _substitutions(self, node, source: str, *, via: str, depth: int) -> tuple[bool, list[SimpleCommand]]:
        """Judge the commands inside a word's $(...) / <(...); True if the word is dynamic."""
        dynamic = False
        found: list[SimpleCommand] = []
        for part in getattr(node, "parts", []) or []:
            if part.kind in ("commandsubstitution", "processsubstitution"):
                dynamic = True
                saved = self.cwd
                start = len(self.commands)
                label = "$(...)" if part.kind == "commandsubstitution" else "<(...)"
                self._visit(part.command, source, via=f"{via} {label}".strip(), depth=depth + 1, piped=False, upstream=[])
                found.extend(self.commands[start:])
                self.cwd = saved
            elif part.kind == "parameter":
                if getattr(part, "value", None) not in _KNOWN_VARS:
                    dynamic = True
            elif part.kind == "tilde":
                continue
        return dynamic, found

    def _word(self, node, source: str, *, via: str, depth: int) -> tuple[str, bool, list[SimpleCommand]]:
        dynamic, found = self._substitutions(node, source, via=via, depth=depth)
        value = node.word
        parts = getattr(node, "parts", []) or []
        if any(p.kind == "parameter" and getattr(p, "value", None) == "HOME" for p in parts):
            value = value.replace("${HOME}", self.home).replace("$HOME", self.home)
        if any(p.kind == "parameter" and getattr(p, "value", None) == "PWD" for p in parts):
            if self.cwd is None:
                dynamic = True
            else:
                value = value.replace("${PWD}", self.cwd).replace("$PWD", self.cwd)
        if any(p.kind == "tilde" for p in parts):
            if value == "~" or value.startswith("~/"):
                value = self.home + value[1:]
            elif value.startswith("~"):
                value = os.path.expanduser(value)  # ~user
        return value, dynamic, found

    def _redirect(self, node, source: str, *, via: str, depth: int) -> Redirect | None:
        target = node.output
        if node.type in ("<<", "<<-"):
            heredoc = getattr(node, "heredoc", None)
            text = getattr(heredoc, "value", "") if heredoc is not None else ""
            # bashlex keeps the terminator line in the value.
            body = text.rsplit("\n", 1)[0] if "\n" in text else ""
            return Redirect(op=node.type, target=body)
        if isinstance(target, int) or target is None:
            return None
        value, dynamic, _ = self._word(target, source, via=via, depth=depth)
        return Redirect(op=node.type, target=value, dynamic=dynamic)

    def _command(self, node, source: str, *, via: str, depth: int, piped: bool, upstream: list[SimpleCommand]) -> None:
        assignments: list[str] = []
        words: list[str] = []
        raws: list[str] = []
        dynamic: list[bool] = []
        substituted: list[SimpleCommand] = []
        redirects: list[Redirect] = []
        for part in node.parts:
            if part.kind == "assignment":
                dyn, found = self._substitutions(part, source, via=via, depth=depth)
                substituted.extend(found)
                assignments.append(part.word)
            elif part.kind == "word":
                value, dyn, found = self._word(part, source, via=via, depth=depth)
                substituted.extend(found)
                words.append(value)
                raws.append(_unquote_raw(source[part.pos[0]:part.pos[1]]) if part.pos[1] <= len(source) else value)
                dynamic.append(dyn)
            elif part.kind == "redirect":
                redirect = self._redirect(part, source, via=via, depth=depth)
                if redirect is not None:
                    redirects.append(redirect)
        text = source[node.pos[0]:node.pos[1]]
        if not words:
            return
        self._emit(
            words, raws, dynamic, assignments=assignments, redirects=redirects, substituted=substituted,
            via=via, depth=depth, piped=piped, upstream=upstream, text=text,
        )

    # -- one simple command -----------------------------------------------------------

    def _emit(self, words, raws, dynamic, *, assignments, redirects, substituted, via, depth, piped, upstream,
              text, wrappers=None, dynamic_tail=False) -> None:
        full = list(words)
        wrappers = list(wrappers or [])
        words, raws, dynamic, assignments, wrappers, dynamic_tail, extra_names = self._peel(
            words, raws, dynamic, assignments, wrappers, dynamic_tail
        )
        if words is None:
            return
        names = {words[0], raws[0]} | extra_names if words else set()
        command = SimpleCommand(
            argv=words, names=names, assignments=assignments, wrappers=wrappers, full_argv=full, cwd=self.cwd,
            dynamic=dynamic, dynamic_tail=dynamic_tail, redirects=redirects, piped_stdin=piped,
            upstream=upstream, substituted=substituted, via=via, text=text,
        )
        if not words:
            return
        self.commands.append(command)
        name = command.name
        if dynamic[0]:
            self.unresolved.append(f"the command name `{raws[0]}` is only known when it runs")
        elif _GLOB_CHARS.search(words[0]):
            self.unresolved.append(f"the command name `{words[0]}` is a glob pattern")
        if any(not ch.isprintable() for ch in words[0]):
            self.unresolved.append(f"the command name {words[0]!r} holds invisible characters")
        if name == "cd":
            self._cd(words, dynamic)
        elif name in SHELLS or name == "eval" or name in INTERPRETERS or name in (".", "source"):
            self._code_runner(command, raws, via=via, depth=depth)
        elif name == "find":
            self._find(command, via=via, depth=depth, piped=piped, upstream=upstream)

    def _peel(self, words, raws, dynamic, assignments, wrappers, dynamic_tail):
        extra_names: set[str] = set()
        while words:
            name = os.path.basename(words[0])
            spec = _WRAPPERS.get(name)
            if spec is None or dynamic[0]:
                break
            short_val, long_val, skip = spec
            i = 1
            if name == "command" and any(w in ("-v", "-V") for w in words[1:2]):
                break  # `command -v x` looks x up, it does not run it
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
                    key = word.split("=", 1)[0]
                    if name == "env" and key == "--split-string":
                        value = word.split("=", 1)[1] if "=" in word else (words[i + 1] if i + 1 < len(words) else "")
                        step = 1 if "=" in word else 2
                        return self._env_split(words, raws, dynamic, i, step, value, assignments, wrappers, dynamic_tail)
                    i += 2 if (key in long_val and "=" not in word) else 1
                    continue
                letter = word[1:2]
                if name == "env" and letter == "S":
                    value = word[2:] if len(word) > 2 else (words[i + 1] if i + 1 < len(words) else "")
                    step = 1 if len(word) > 2 else 2
                    return self._env_split(words, raws, dynamic, i, step, value, assignments, wrappers, dynamic_tail)
                if letter in short_val and len(word) == 2:
                    i += 2
                else:
                    i += 1
            i += skip
            wrappers = [*wrappers, name]
            if name == "xargs":
                dynamic_tail = True
                if i >= len(words):  # xargs with no command runs echo
                    words, raws, dynamic = ["echo"], ["echo"], [False]
                    continue
            if i >= len(words):
                return [], [], [], assignments, wrappers, dynamic_tail, extra_names
            words, raws, dynamic = words[i:], raws[i:], dynamic[i:]
        return words, raws, dynamic, assignments, wrappers, dynamic_tail, extra_names

    def _env_split(self, words, raws, dynamic, i, step, value, assignments, wrappers, dynamic_tail):
        try:
            split = shlex.split(value)
        except ValueError:
            self.unresolved.append(f"`env -S {value}` could not be split")
            split = [value]
        rest = split + words[i + step:]
        rest_raw = split + raws[i + step:]
        rest_dyn = [dynamic[i + 1] if i + 1 < len(dynamic) else False] * len(split) + dynamic[i + step:]
        new_words = ["env", *rest]
        return self._peel(new_words, ["env", *rest_raw], [False, *rest_dyn], assignments, wrappers, dynamic_tail)

    def _cd(self, words: list[str], dynamic: list[bool]) -> None:
        args = [w for w in words[1:] if w not in ("-L", "-P", "-e", "-@", "--")]
        if not args:
            self.cwd = self.home
            return
        if dynamic[words.index(args[0])] or args[0] == "-":
            self.cwd = None
            return
        target = args[0]
        if os.path.isabs(target):
            self.cwd = os.path.normpath(target)
        elif self.cwd is not None:
            self.cwd = os.path.normpath(os.path.join(self.cwd, target))

    def _code_runner(self, command: SimpleCommand, raws: list[str], *, via: str, depth: int) -> None:
        """Judge code a shell, eval or interpreter runs: inline strings, here-docs, stdin."""
        name = command.name
        args = command.argv[1:]
        label = f"{via} {name}".strip()
        if name == "eval":
            if any(command.dynamic[1:]):
                self.unresolved.append("`eval` runs a string that is only known when it runs")
                return
            command.container = True
            self.parse(" ".join(args), cwd=command.cwd, via=f"{label}", depth=depth + 1)
            return
        if name in (".", "source"):
            if any(command.dynamic[1:2]) and not command.substituted:
                self.unresolved.append(f"`{name}` reads a script whose name is only known when it runs")
            return
        if name in SHELLS:
            index = _option_cluster_has(args, "c")
            if index is not None:
                script_at = index + 1
                if script_at >= len(args):
                    return
                if command.dynamic[script_at + 1] and not command.substituted:
                    self.unresolved.append(f"`{name} -c` runs a script that is only known when it runs")
                    return
                if command.dynamic[script_at + 1]:
                    self.unresolved.append(f"`{name} -c` runs the output of a command substitution")
                    return
                command.container = True
                self.parse(args[script_at], cwd=command.cwd, via=f"{label} -c", depth=depth + 1)
                return
        reads_stdin = _reads_code_from_stdin(name, args)
        if not reads_stdin:
            return
        for redirect in command.redirects:
            if redirect.op in ("<<", "<<-", "<<<") and name in SHELLS:
                command.container = True
                self.parse(redirect.target, cwd=command.cwd, via=f"{label} <<", depth=depth + 1)
                return
            if redirect.op in ("<<", "<<-", "<<<"):
                return  # an interpreter's inline here-doc: static text, like a script file
            if redirect.op == "<":
                return  # a script file
        if command.piped_stdin or command.dynamic_tail:
            self.unresolved.append(f"`{command.text.strip() or name}` runs code piped into {name}; what it runs is only known when it runs")


    def _find(self, command: SimpleCommand, *, via: str, depth: int, piped: bool, upstream) -> None:
        args = command.argv[1:]
        i = 0
        while i < len(args) and args[i] in ("-H", "-L", "-P", "-D", "-O") or (i < len(args) and args[i].startswith("-O")):
            i += 2 if args[i] == "-D" else 1
        roots = []
        while i < len(args) and not (args[i].startswith("-") or args[i] in ("(", "!", ")")):
            roots.append(args[i])
            i += 1
        roots = roots or ["."]
        while i < len(args):
            if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(args) and args[j] not in (";", "+"):
                    j += 1
                clause = args[i + 1:j]
                if clause:
                    for root in roots:
                        words = [w.replace("{}", root) for w in clause]
                        self._emit(
                            words, list(words), [False] * len(words), assignments=[], redirects=[], substituted=[],
                            via=f"{via} find {args[i]}".strip(), depth=depth, piped=False, upstream=[],
                            text=" ".join(clause),
                        )
                i = j + 1
            else:
                i += 1


def _reads_code_from_stdin(name: str, args: list[str]) -> bool:
    """True when a shell or interpreter takes its program from stdin (no script, no -c)."""
    for arg in args:
        if arg in ("-", "-s"):
            return True
        if arg in _INLINE_CODE_OPTIONS or (arg.startswith("-") and not arg.startswith("--") and name not in SHELLS and arg[:2] in _INLINE_CODE_OPTIONS):
            return False
        if not arg.startswith("-") and not arg.startswith("+"):
            return False  # a script file
    return True
