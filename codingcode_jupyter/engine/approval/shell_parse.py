"""Shell commands parsed the way bash will run them, so rules can judge every simple command.

bashlex gives the syntax tree; this module walks it and yields one :class:`SimpleCommand`
per command bash would execute: in lists, pipelines, subshells, functions, loops, command
and process substitutions, ``bash -c`` / ``eval`` strings, here-documents fed to a shell and
``find -exec`` clauses. Wrappers (env, timeout, nice, xargs, ...) are peeled so rules see
the command that really runs. Whatever cannot be known before the command runs (a command
name built from a variable, a script piped into a shell, syntax bashlex cannot read) is
reported in :attr:`ParsedCommand.unresolved`, never guessed. What an interpreter's own code
reaches is :mod:`.inline_code`, what git settings run :mod:`.git_settings`, what text that may
run names :mod:`.may_run`: this module only calls them and recurses.
"""

from __future__ import annotations

import os
import re
import secrets
from typing import Any

from .. import budget
from . import programs
from .git_settings import environment_settings, git_settings, setting_effect
from .heredocs import HereDoc, cut_heredocs
from .inline_code import (
    INTERPRETER_FAMILY,
    code_source,
    is_python,
    program_of,
    read_code,
    runs_code,
)
from .input_names import input_names
from .may_run import commands_in_args, text_may_run

# What each program is (shells, interpreters, privilege tools, wrappers...): the program table.
from .program_traits import (
    DATA_INPUT,
    DOWNLOADERS,
    INTERPRETERS,
    NEVER_RUN_ARGS,
    PRINTERS,
    SHELLS,
    SPECULATIVE_NAMES,
)
from .python_code import analyse_python
from .shell_command import ParsedCommand, Reach, Redirect, SimpleCommand
from .shell_positional import fill_positional
from .shell_words import (
    RESERVED_WORDS,
    blank_arithmetic,
    blank_time,
    dequote,
    expand_braces,
    option_cluster_has,
    quote_word,
    split_segments,
    tolerant_words,
    unquote_raw,
)
from .shell_wrappers import WrapperPeeler

__all__ = ["split_segments", "quote_word", "expand_braces", "SimpleCommand", "Reach", "Redirect", "PRINTERS", "SPECULATIVE_NAMES", "ParsedCommand", "parse_command", "SHELLS", "INTERPRETERS", "DOWNLOADERS"]

_MKTEMP = re.compile(r"\$\(\s*mktemp(\s+(-[dqut]+|-p\s+\S+|--tmpdir(=\S+)?|--suffix=\S+|[A-Za-z0-9_./-]*X{3,}[A-Za-z0-9_.-]*))*\s*\)")
_MAX_DEPTH = 6
# The longest text given to bashlex, whose pure-Python lexer takes about 5 µs a character and cannot be
# stopped halfway: a longer line (here-documents aside) is asked about unread.
_PARSE_MAX = 64 * 1024
_KNOWN_VARS = ("HOME", "PWD")
_GLOB_CHARS = re.compile(r"[*?\[]")
# `${name<op>` before an expansion's operand.
_PARAM_HEAD = re.compile(r"[#!]?(?:[A-Za-z_]\w*|\d+|[@*#?$!-])(?:\[[^\]]*\])?(?::?[-=+?]|##?|%%?|//?|\^\^?|,,?|:)?")
# Variables whose value a program runs as a shell command.
_COMMAND_VARS = frozenset({"PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR", "VISUAL", "GIT_EDITOR",
                           "GIT_SEQUENCE_EDITOR", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "LESSOPEN", "LESSCLOSE",
                           "PROMPT_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS"})
_COMMAND_VAR_NAME = re.compile(r"[A-Z0-9_]*(PAGER|EDITOR|_COMMAND|_CMD|ASKPASS|BROWSER)")
# Variables that make a program load code from a file of the caller's choosing.
_LOADER_VARS = frozenset({"BASH_ENV", "ENV", "LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "PYTHONSTARTUP",
                          "PERL5OPT", "NODE_OPTIONS", "RUBYOPT", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_GLOBAL",
                          "GIT_CONFIG_SYSTEM", "GIT_EXEC_PATH", "GIT_DIR"})


def _bashlex_parse(text: str) -> Any:
    # Imported at the first command judged, not with the module: it builds its parse tables at
    # import (0.15 s), which a session's opening and first request do not need; nor is that import
    # the judging of the call that happens to come first.
    with budget.not_counted():
        import bashlex
    return bashlex.parse(text)


def parse_command(source: str, *, cwd: str | None = None, home: str | None = None) -> ParsedCommand:
    """Parse a command line; ``cwd`` is where it starts (absolute), ``home`` what ``~`` means."""
    home = home or os.path.expanduser("~")
    walker = _Walker(home=home)
    walker.parse(source, cwd=cwd, via="", depth=0)
    return ParsedCommand(source=source, commands=walker.commands, unresolved=walker.unresolved, network=walker.network,
                         symlinks=walker.symlinks)


def _with_positional(command: SimpleCommand, script: str) -> str:
    """A `sh -c` script with its `$0`, `$1`... and `"$@"` written in from the words after it, when
    those are known (:mod:`.shell_positional`); else the script as it is (its parameters unknown)."""
    index = option_cluster_has(command.argv[1:], "c")
    if index is None:
        return script
    after = index + 3  # the program's name, the options up to -c, the script
    if after > len(command.argv) or any(command.dynamic[after:]):
        return script
    name = command.argv[after] if after < len(command.argv) else command.name
    filled = fill_positional(script, name, command.argv[after + 1:])
    return script if filled is None else filled


def _literal_dollar(source: str, word_start: int, at: int) -> bool:
    """Whether the `$` at ``at`` stands for itself: not `$'...'` (ANSI-C quoting) nor `$"..."` (a
    translated string), i.e. not followed by a quote it opens."""
    after = source[at + 1:at + 2]
    if after not in ("'", '"'):
        return True
    before = source[word_start:at].replace('\\"', "")
    return after == '"' and before.count('"') % 2 == 1  # the quote closes the string the `$` is in


_JOINING_WRAPPERS = frozenset({"watch", "ssh"})
def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Walker:
    def __init__(self, home: str) -> None:
        self.home = home
        self.commands: list[SimpleCommand] = []
        self.unresolved: list[str] = []
        self.network: list[str] = []
        self.cwd: str | None = None
        # Variables assigned earlier on the same line (`F=/etc/shadow; cat $F`); None: unknown value.
        self.vars: dict[str, str | None] = {}
        self.symlinks: list[tuple[str, str]] = []
        self._temp_count = 0
        # Above zero while judging what a program may run (arguments, scripts written to files).
        self.speculating = 0
        # Files written on this line with known content (`echo '...' > f`): the content may be run later.
        self.written: dict[str, str] = {}
        # Here-documents cut out of the text parsed (:mod:`.heredocs`), by the placeholder standing for
        # each; the placeholder carries a nonce so that no word on the line can name one.
        self.heredocs: dict[str, HereDoc] = {}
        self._placeholder = f"__codingcode_heredoc_{secrets.token_hex(6)}_"

    # -- entry points ---------------------------------------------------------------

    def parse(self, source: str, *, cwd: str | None, via: str, depth: int, fallback: bool = False) -> list[SimpleCommand]:
        """Walk ``source``; returns the commands it added (``fallback``: a piece of a line bashlex could not read)."""
        start = len(self.commands)
        if depth > _MAX_DEPTH:
            self.unresolved.append(f"commands nested more than {_MAX_DEPTH} levels deep")
            return []
        if not source.strip():
            return []
        saved = self.cwd
        self.cwd = cwd
        budget.check()
        # Here-documents are cut out first: their bodies are data, judged as the input of the program
        # that reads them (bashlex cannot read a quoted delimiter, and a body is not shell words).
        text, bodies = cut_heredocs(source, self._placeholder)
        self.heredocs.update(bodies)
        # Arithmetic expansions become the number they expand to (bashlex cannot read them); one
        # that holds a command substitution runs it.
        text, expressions = blank_arithmetic(text)
        for expression in expressions:
            if ("$(" in expression or "`" in expression) and '"' not in expression:
                # Inside double quotes its substitutions run as they would; its operators are text.
                first = len(self.commands)
                self.parse(f': "{expression}"', cwd=cwd, via=f"{via} $((...))".strip(), depth=depth + 1)
                self.commands[first:] = [c for c in self.commands[first:] if c.argv[:1] != [":"]]
            elif "$(" in expression or "`" in expression:
                self.unresolved.append(f"the arithmetic expansion `$(({_clip(expression)}))` runs a command")
        if len(text) > _PARSE_MAX:
            raise budget.OverBudget(f"the command is {len(text):,} characters long once its here-documents are set "
                                    f"aside, more than the judge reads ({_PARSE_MAX:,})")
        try:
            trees = _bashlex_parse(blank_time(text))
        except Exception as error:  # bashlex raises several types for syntax it cannot read
            snippet = text if len(text) <= 80 else text[:77] + "..."
            self.unresolved.append(f"the shell syntax of `{snippet}` could not be parsed ({type(error).__name__}: {error})")
            if not fallback:
                # What can still be read is judged: a denied command beside broken syntax stays denied.
                for segment in split_segments(text, pipes=False):
                    self.parse(segment, cwd=self.cwd, via=via, depth=depth + 1, fallback=True) if segment != text \
                        else self._tokens(segment, via=via, depth=depth)
            else:
                self._tokens(text, via=via, depth=depth)
            added = self.commands[start:]
            self.cwd = saved if depth else self.cwd
            return added
        source = text
        for tree in trees:
            self._visit(tree, source, via=via, depth=depth, piped=False, upstream=[])
        added = self.commands[start:]
        self.cwd = saved if depth else self.cwd
        return added

    # -- tree walk ------------------------------------------------------------------

    def _visit(self, node: Any, source: str, *, via: str, depth: int, piped: bool, upstream: list[SimpleCommand]) -> None:
        budget.check()
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
            redirects, found = [], []
            for redirect_node in getattr(node, "redirects", []) or []:
                redirect, more = self._redirect(redirect_node, source, via=via, depth=depth)
                found.extend(more)
                if redirect is not None:
                    redirects.append(redirect)
            if redirects:
                # The group's redirects apply to everything in it: judged as a bare command.
                self._bare(redirects, source[node.pos[0]:node.pos[1]], via=via)
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

    def _substitutions(self, node: Any, source: str, *, via: str, depth: int) -> tuple[bool, list[SimpleCommand]]:
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
                value = getattr(part, "value", None) or ""
                if not value and _literal_dollar(source, node.pos[0], part.pos[0]):
                    continue  # a `$` before nothing it expands (`":$"`, `a$`) is the character itself
                if value not in _KNOWN_VARS and self.vars.get(value) is None:
                    dynamic = True
                found.extend(self._parameter_operand(value, via=via, depth=depth))
            elif part.kind == "tilde":
                continue
        return dynamic, found

    def _parameter_operand(self, value: str, *, via: str, depth: int) -> list[SimpleCommand]:
        """Commands hidden in an expansion's operand: `${x:-$(sudo id)}` runs `sudo id`."""
        if not any(mark in value for mark in ("$(", "`", "<(", ">(")):
            return []
        match = _PARAM_HEAD.match(value)
        operand = value[match.end():] if match else value
        start = len(self.commands)
        self.parse(f": {operand}", cwd=self.cwd, via=f"{via} ${{...}}".strip(), depth=depth + 1)
        added = [c for c in self.commands[start:] if c.argv[:1] != [":"]]
        self.commands[start:] = added
        return added

    def _word(self, node: Any, source: str, *, via: str, depth: int) -> tuple[str, bool, list[SimpleCommand]]:
        dynamic, found = self._substitutions(node, source, via=via, depth=depth)
        value = node.word
        parts = getattr(node, "parts", []) or []
        raw = source[node.pos[0]:node.pos[1]] if node.pos[1] <= len(source) else ""
        if not parts and raw and "$" not in raw and "`" not in raw:
            # bashlex mis-reads adjacent quotes (`"/etc/"'shadow'` -> `/etc/'shadow'`).
            value = dequote(raw) or value
        if any(p.kind == "parameter" and getattr(p, "value", None) == "HOME" for p in parts):
            value = value.replace("${HOME}", self.home).replace("$HOME", self.home)
        if any(p.kind == "parameter" and getattr(p, "value", None) == "PWD" for p in parts):
            if self.cwd is None:
                dynamic = True
            else:
                value = value.replace("${PWD}", self.cwd).replace("$PWD", self.cwd)
        for part in parts:
            name = getattr(part, "value", None)
            known = self.vars.get(name) if isinstance(name, str) else None
            if part.kind == "parameter" and known is not None:
                value = value.replace("${%s}" % name, known).replace(f"${name}", known)
        if any(p.kind == "tilde" for p in parts):
            head = value.split("/", 1)[0]
            if head == "~":
                value = self.home + value[1:]
            elif head == "~+" and self.cwd is not None:
                value = self.cwd + value[2:]  # bash's ~+ is $PWD
            elif head[1:2] in ("+", "-") or head[1:].isdigit():
                dynamic = True  # ~-, ~+N, ~N: $OLDPWD and the directory stack, known only when it runs
            elif value.startswith("~"):
                value = os.path.expanduser(value)  # ~user
        return value, dynamic, found

    def _redirect(self, node: Any, source: str, *, via: str, depth: int) -> tuple[Redirect | None, list[SimpleCommand]]:
        target = node.output
        if node.type in ("<<", "<<-"):
            heredoc = getattr(node, "heredoc", None)
            text = getattr(heredoc, "value", "") if heredoc is not None else ""
            # bashlex keeps the terminator line in the value.
            body = text.rsplit("\n", 1)[0] if "\n" in text else ""
            return Redirect(op=node.type, target=body), []
        word = getattr(target, "word", None)
        if node.type == "<" and isinstance(word, str) and word in self.heredocs:
            return self._heredoc(self.heredocs[word], via=via, depth=depth)
        if isinstance(target, int) or target is None:
            return None, []
        value, dynamic, found = self._word(target, source, via=via, depth=depth)
        if re.match(r"/dev/(tcp|udp)/", value):
            self.network.append(value)
            self.unresolved.append(f"the redirect `{node.type} {value}` opens a network connection")
        return Redirect(op=node.type, target=value, dynamic=dynamic), found

    def _heredoc(self, doc: HereDoc, *, via: str, depth: int) -> tuple[Redirect, list[SimpleCommand]]:
        """A here-document's redirect; an unquoted body's command substitutions run as bash reads it."""
        found: list[SimpleCommand] = []
        if not doc.literal and ("$(" in doc.body or "`" in doc.body or "${" in doc.body):
            # Expanded like a double-quoted word: `: "<body>"` holds the same substitutions.
            start = len(self.commands)
            escaped = doc.body.replace("\\", "\\\\").replace('"', '\\"')
            self.parse(f': "{escaped}"', cwd=self.cwd, via=f"{via} <<".strip(), depth=depth + 1)
            found = [c for c in self.commands[start:] if c.argv[:1] != [":"]]
            self.commands[start:] = found
        op = "<<-" if doc.strip_tabs else "<<"
        return Redirect(op=op, target=doc.body, dynamic=False, literal=doc.literal), found

    def _command(self, node: Any, source: str, *, via: str, depth: int, piped: bool, upstream: list[SimpleCommand]) -> None:
        assignments: list[str] = []
        words: list[str] = []
        raws: list[str] = []
        dynamic: list[bool] = []
        substituted: list[SimpleCommand] = []
        redirects: list[Redirect] = []
        static_assignments: dict[str, str | None] = {}
        for part in node.parts:
            if part.kind == "assignment":
                dyn, found = self._substitutions(part, source, via=via, depth=depth)
                substituted.extend(found)
                assignments.append(part.word)
                name, _, value = part.word.partition("=")
                raw = source[part.pos[0]:part.pos[1]] if part.pos[1] <= len(source) else ""
                static = not dyn and "$" not in raw and "`" not in raw
                value_raw = raw.partition("=")[2]
                if _MKTEMP.fullmatch(value_raw.strip('"')):
                    # A fresh file or directory under /tmp: nothing a rule guards.
                    self._temp_count += 1
                    static_assignments[name.rstrip("+")] = f"/tmp/tmp.mktemp{self._temp_count}"
                else:
                    static_assignments[name.rstrip("+")] = (dequote(value_raw) if static else None)
            elif part.kind == "word":
                value, dyn, found = self._word(part, source, via=via, depth=depth)
                substituted.extend(found)
                raw_text = source[part.pos[0]:part.pos[1]] if part.pos[1] <= len(source) else value
                for expanded in (expand_braces(value) if "$" not in raw_text and not dyn else [value]):
                    words.append(expanded)
                    raws.append(unquote_raw(raw_text) if expanded == value else expanded)
                    dynamic.append(dyn)
            elif part.kind == "redirect":
                redirect, found = self._redirect(part, source, via=via, depth=depth)
                substituted.extend(found)
                if redirect is not None:
                    redirects.append(redirect)
        text = source[node.pos[0]:node.pos[1]]
        for assignment in assignments:
            name, _, value = assignment.partition("=")
            self._assignment_value(name.rstrip("+"), static_assignments.get(name.rstrip("+")), via=via, depth=depth)
        self._git_config_env(static_assignments, via=via, depth=depth)
        if not words:
            self.vars.update(static_assignments)
            if redirects:
                self._bare(redirects, text, via=via)
            for assignment in assignments:
                value = static_assignments.get(assignment.partition("=")[0].rstrip("+"))
                if value:
                    # A path kept in a variable is reached by whatever later uses it.
                    self._bare([], text, via=via, reached=[Reach(value, "unknown", "variable assignment", speculative=True)])
            return
        self._emit(
            words, raws, dynamic, assignments=assignments, redirects=redirects, substituted=substituted,
            via=via, depth=depth, piped=piped, upstream=upstream, text=text,
        )

    def _bare(self, redirects: list[Redirect], text: str, *, via: str, reached: list[Reach] | None = None) -> None:
        """A command made only of redirections (`> f`, `exec 3< f`, `$(< f)`, `{ ...; } > f`): no program, its redirects stay."""
        self.commands.append(SimpleCommand(argv=[], redirects=redirects, cwd=self.cwd, via=via, text=text,
                                           container=True, reached=list(reached or []),
                                           speculative=self.speculating > 0))

    def _git_config_env(self, values: dict[str, str | None], *, via: str, depth: int) -> None:
        """GIT_CONFIG_COUNT / GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n: git settings given in the environment."""
        for key, value in environment_settings(values):
            if key is None or value is None:
                self.unresolved.append("git settings in GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n are only known when it runs")
            else:
                self._git_setting(key, value, cwd=self.cwd, via=via, depth=depth, from_environment=True)

    def _tokens(self, source: str, *, via: str, depth: int) -> None:
        """A piece bashlex cannot read, split into words as well as can be; the words are judged as a command."""
        pieces = split_segments(source, pipes=True)
        upstream: list[SimpleCommand] = []
        for index, piece in enumerate(pieces):
            words = tolerant_words(piece)
            while words and words[0] in RESERVED_WORDS:
                words = words[1:]
            if not words:
                continue
            dynamic = [("$" in w or "`" in w) for w in words]
            start = len(self.commands)
            self._emit(words, list(words), dynamic, assignments=[], redirects=[], substituted=[],
                       via=f"{via} (unparsed)".strip(), depth=depth, piped=index > 0 and "|" in source,
                       upstream=list(upstream), text=piece)
            upstream.extend(self.commands[start:])

    def _assignment_value(self, name: str, value: str | None, *, via: str, depth: int) -> None:
        """Variables whose value some program later runs as a command (PAGER, GIT_SSH_COMMAND...)."""
        if name in _COMMAND_VARS or _COMMAND_VAR_NAME.fullmatch(name):
            if value is None:
                self.unresolved.append(f"`{name}` is set to a command that is only known when it runs")
            else:
                self.parse(value, cwd=self.cwd, via=f"{via} {name}=".strip(), depth=depth + 1)
        elif name in _LOADER_VARS:
            self.unresolved.append(f"`{name}` makes programs load or run code from elsewhere")

    # -- one simple command -----------------------------------------------------------

    def _emit(self, words: list[str], raws: list[str], dynamic: list[bool], *, assignments: list[str],
              redirects: list[Redirect], substituted: list[SimpleCommand], via: str, depth: int, piped: bool,
              upstream: list[SimpleCommand], text: str, wrappers: list[str] | None = None,
              dynamic_tail: bool = False) -> None:
        full = list(words)
        wrappers = list(wrappers or [])
        peeler = WrapperPeeler(self.cwd, self.unresolved)
        words, raws, dynamic, assignments, wrappers, dynamic_tail, extra_names = peeler.peel(
            words, raws, dynamic, assignments, wrappers, dynamic_tail
        )
        peeled_cwd, peeled_reach, peeled_commands = peeler.cwd, list(peeler.reach), peeler.commands
        cwd = self.cwd if peeled_cwd is False else peeled_cwd
        for text_run, why in peeled_commands:
            self.parse(text_run, cwd=cwd, via=f"{via} ({why})".strip(), depth=depth + 1)
        joining = [w for w in wrappers if w in _JOINING_WRAPPERS]
        if joining and words:
            # `watch 'sudo id'`, `ssh host sudo id`: the words are joined and run by a shell.
            self.parse(" ".join(words), cwd=cwd, via=f"{via} {joining[-1]}".strip(), depth=depth + 1)
            words = []
        names = {words[0], raws[0]} | extra_names if words else set()
        if words and "!" in words[0][:-1]:
            names.add(words[0].rsplit("!", 1)[1])  # `!sudo`, `:!sudo` typed where a program reads shell escapes
        if words and " " in words[0].strip():
            names.add(words[0].split()[0])  # `"$COMMAND"` holding `sudo id`: bash would look for that whole name
        command = SimpleCommand(
            argv=words, names=names, assignments=assignments, wrappers=wrappers, full_argv=full, cwd=cwd,
            dynamic=dynamic, dynamic_tail=dynamic_tail, redirects=redirects, piped_stdin=piped,
            upstream=upstream, substituted=substituted, via=via, text=text, reached=peeled_reach,
            speculative=self.speculating > 0,
            # What a program may run is covered by the rule for that program: never an exact rule of its own.
            container=self.speculating > 0,
        )
        if not words:
            if redirects or command.reached:
                command.container = True
                command.argv = []
                self.commands.append(command)
            return
        self.commands.append(command)
        saved_cwd, self.cwd = self.cwd, cwd
        try:
            self._dispatch(command, raws, via=via, depth=depth)
        finally:
            if peeled_cwd is not False:
                self.cwd = saved_cwd
        self._after(command, via=via, depth=depth)

    def _dispatch(self, command: SimpleCommand, raws: list[str], *, via: str, depth: int) -> None:
        """What the program itself is known to do with its words."""
        words, dynamic, name = command.argv, command.dynamic, command.name
        if dynamic[0]:
            self.unresolved.append(f"the command name `{raws[0]}` is only known when it runs")
        elif _GLOB_CHARS.search(words[0]) and words[0] not in ("[", "[["):
            self.unresolved.append(f"the command name `{words[0]}` is a glob pattern")
        if any(not ch.isprintable() for ch in words[0]):
            self.unresolved.append(f"the command name {words[0]!r} holds invisible characters")
        if name in ("cd", "pushd"):
            self._cd(words, dynamic)
        elif name == "popd":
            self.cwd = None
        elif name in SHELLS or name == "eval" or name in INTERPRETERS or name in (".", "source") or is_python(name):
            self._code_runner(command, via=via, depth=depth)
        elif name in INTERPRETER_FAMILY or name == "sed":
            self._inline_code(command, program_of(command.name, command.argv[1:]), via=via, depth=depth)
        elif name == "find":
            self._find(command, via=via, depth=depth)
        elif name == "trap":
            actions = [w for w in words[1:] if not w.startswith("-")][:1]
            if actions and not dynamic[words.index(actions[0])]:
                self.parse(actions[0], cwd=self.cwd, via=f"{via} trap".strip(), depth=depth + 1)
            elif actions:
                self.unresolved.append("`trap` runs a command that is only known when it runs")
        elif name == "alias":
            for word in words[1:]:
                if "=" in word:
                    self.parse(word.split("=", 1)[1], cwd=self.cwd, via=f"{via} alias".strip(), depth=depth + 1)
        elif name in ("export", "declare", "typeset", "local", "readonly"):
            for word, dyn in zip(words[1:], dynamic[1:]):
                if "=" in word and not word.startswith("-"):
                    var, _, value = word.partition("=")
                    self.vars[var] = None if dyn else value
                    self._assignment_value(var, None if dyn else value, via=via, depth=depth)
        elif name == "git":
            self._git(command, via=via, depth=depth)
        elif name == "script":
            for value in programs.script_commands(words):
                self.parse(value, cwd=self.cwd, via=f"{via} script -c".strip(), depth=depth + 1)

    def _after(self, command: SimpleCommand, *, via: str, depth: int) -> None:
        """Facts about a command that do not depend on which program it is: links it makes, words
        known only at run time, commands its options run, programs it may run, scripts it writes."""
        name, words, dynamic = command.name, command.argv, command.dynamic
        if name == "ln":
            self._symlink(command)
        if any(dynamic[1:]) and name not in PRINTERS and name not in ("cd", "pushd", "export", "declare", "typeset",
                                                                       "local", "readonly", "eval", "trap"):
            first = next(w for w, d in zip(words[1:], dynamic[1:]) if d)
            self.unresolved.append(f"`{name}` is given `{_clip(first)}`, which is only known when it runs")
        if not any(dynamic) or name in ("tar", "rsync", "ssh", "scp", "git", "make"):
            found = programs.effects(name, words, command.cwd)
            if name == "sed":
                script = program_of(command.name, command.argv[1:])
                if script is not None:
                    more = programs.sed_effects(script)
                    found.paths.extend(more.paths)
                    found.commands.extend(more.commands)
                    found.unresolved.extend(more.unresolved)
            self._apply(command, found, via=via, depth=depth)
        if name not in NEVER_RUN_ARGS and name not in SHELLS and name not in INTERPRETERS and depth < _MAX_DEPTH:
            self._speculate_args(command, via=via, depth=depth)
        for redirect in command.redirects:
            if redirect.dynamic:
                self.unresolved.append(f"the redirect `{redirect.op} {_clip(redirect.target)}` names a file that is only "
                                       "known when it runs")
        source = command.upstream[-1] if command.piped_stdin and command.upstream else None
        if source is not None and source.name in ("echo", "printf") and name not in SHELLS \
                and name not in ("at", "batch", "xargs") and not runs_code(name) and name not in DATA_INPUT:
            self._speculate_text(" ".join(source.argv[1:]), command, via=f"{via} input of {name}".strip(), depth=depth)
        writes = [r for r in command.redirects if r.op in (">", ">>", ">|", "&>", "&>>") and not r.dynamic]
        if name in ("echo", "printf") and writes:
            content = " ".join(words[1:])
            for redirect in writes:
                self.written[redirect.target] = content
            self._speculate_text(content, command, via=f"{via} script written by {name}".strip(), depth=depth)
        for redirect in command.redirects:
            if redirect.op in ("<<", "<<-", "<<<") and name not in SHELLS and not runs_code(name) \
                    and name not in ("eval", ".", "source", "at", "batch"):
                body = self._body(redirect)
                for target in writes:
                    self.written[target.target] = body  # run later on this line: judged as what it is then
                if name not in DATA_INPUT:
                    self._speculate_text(body, command, via=f"{via} input of {name}".strip(), depth=depth)
        for word in words[1:]:
            if word in self.written and name not in PRINTERS:
                content = self.written[word]
                self._speculate_text(content, command, via=f"{via} file {word} given to {name}".strip(), depth=depth)
        if name in ("at", "batch"):
            self._stdin_script(command, name, f"{via} {name}".strip(), depth)
        found_names = input_names(command)
        if found_names.names is not None:
            command.stdin_names = list(found_names.names)
        if found_names.unresolved is not None:
            self.unresolved.append(found_names.unresolved)

    def _apply(self, command: SimpleCommand, found: programs.Effects, *, via: str, depth: int) -> None:
        label = f"{via} {command.name}".strip()
        if found.cwd is not None:
            command.cwd = found.cwd
        for path, access, why in found.paths:
            command.reached.append(Reach(path, access, f"`{why}`", speculative=command.speculative,
                                         tree=access == "tree"))
        for text, why in found.commands:
            self.parse(text, cwd=command.cwd, via=f"{label} ({why})", depth=depth + 1)
        for code, why in found.python:
            self._python(command, code, why=why, depth=depth)
        for code, _why in found.code:
            self._inline_code(command, code, via=via, depth=depth)
        self.unresolved.extend(found.unresolved)

    def _speculate_args(self, command: SimpleCommand, *, via: str, depth: int) -> None:
        """`aa-exec sudo id`, `--pre-hook 'sudo id'`, `exec=/sbin/reboot`: a program named in an
        argument may be run by the program that gets it."""
        for text in commands_in_args(command.argv):
            self._speculate(text, command.cwd, via=f"{via} {command.name} may run".strip(), depth=depth)

    def _speculate_text(self, text: str, command: SimpleCommand, *, via: str, depth: int) -> None:
        """Text that may end up run (a script written to a file, a program's input): the programs
        and paths it names are judged as what may happen, never as what surely does."""
        if not text or depth >= _MAX_DEPTH:
            return
        seen = text_may_run(text)
        for path in seen.paths:
            command.reached.append(Reach(path, "unknown", f"`{_clip(path)}` in {via.strip()}", speculative=True))
        for run in seen.commands:
            self._speculate(run, command.cwd, via=via, depth=depth)

    def _speculate(self, text: str, cwd: str | None, *, via: str, depth: int) -> None:
        """Judge ``text`` as commands that may run: their hits ask, and what cannot be read here is not asked."""
        before = len(self.unresolved)
        saved_vars = dict(self.vars)
        self.speculating += 1
        try:
            self.parse(text, cwd=cwd, via=via, depth=depth + 1)
        finally:
            self.speculating -= 1
            self.vars = saved_vars
            del self.unresolved[before:]

    def _body(self, redirect: Redirect) -> str:
        """A here-document's or here-string's text as the program reads it."""
        return redirect.target if redirect.literal else self._expand_vars(redirect.target)

    def _expand_vars(self, text: str) -> str:
        """Variables set earlier on the line, filled into a here-document's text."""
        def value(match: re.Match[str]) -> str:
            name = match.group(1) or match.group(2)
            known = self.vars.get(name)
            return known if known is not None else (self.home if name == "HOME" else match.group(0))
        return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, text)

    def _symlink(self, command: SimpleCommand) -> None:
        """`ln -s TARGET LINK`: later paths through LINK reach TARGET."""
        link = programs.symlink_made(command.argv[1:], command.cwd)
        if link is not None:
            self.symlinks.append(link)

    def _python(self, command: SimpleCommand, code: str, *, why: str, depth: int) -> None:
        """Python code a command runs, read with `ast`: its paths, commands, calls and unknowns."""
        reading = analyse_python(code, home=self.home, cwd=command.cwd)
        label = f"{command.via} {command.name}".strip()
        for found in reading.paths:
            command.reached.append(Reach(found.path, found.access, f"`{found.via}` in {why}",
                                         speculative=command.speculative, tree=found.access == "tree"))
        command.code_calls.extend(reading.calls)
        command.downloads.extend(reading.downloads)
        command.runs_download |= reading.runs_download
        for run in reading.commands:
            self.parse(run.text, cwd=run.cwd, via=f"{label} (Python)", depth=depth + 1)
        self.unresolved.extend(f"{why}: {reason}" for reason in reading.unresolved)

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

    def _code_runner(self, command: SimpleCommand, *, via: str, depth: int) -> None:
        """Judge code a shell, eval or interpreter runs: inline strings, here-docs, stdin."""
        label = f"{via} {command.name}".strip()
        source = code_source(command.name, command.argv[1:], command.dynamic, substituted=bool(command.substituted))
        if source.unresolved is not None:
            self.unresolved.append(source.unresolved)
        elif source.kind == "shell":
            command.container = True
            text = _with_positional(command, source.text) if source.option == " -c" else source.text
            self.parse(text, cwd=command.cwd, via=f"{label}{source.option}", depth=depth + 1)
        elif source.kind == "inline":
            self._inline_code(command, source.text, via=via, depth=depth)
        elif source.kind == "stdin":
            self._stdin_script(command, command.name, label, depth)

    def _stdin_script(self, command: SimpleCommand, name: str, label: str, depth: int) -> None:
        """Judge a script a shell, `source` or interpreter reads from its stdin."""
        shell_like = name in SHELLS or name in (".", "source", "at", "batch")
        for redirect in command.redirects:
            if redirect.op in ("<<", "<<-", "<<<") and not shell_like:
                self._inline_code(command, self._body(redirect), via=command.via, depth=depth)
                return
            if redirect.op in ("<", "<&") and redirect.dynamic:
                self.unresolved.append(f"`{name}` runs a script produced by a command when it runs")
                return
            if redirect.op in ("<<", "<<-", "<<<"):
                command.container = name not in ("at", "batch")
                self.parse(self._body(redirect), cwd=command.cwd, via=f"{label} <<", depth=depth + 1)
                return
            if redirect.op == "<":
                return  # a script file
        source = command.upstream[-1] if command.piped_stdin and command.upstream else None
        if source is not None and source.name in ("echo", "printf") and not any(source.dynamic[1:]) \
                and not source.piped_stdin and shell_like:
            # `echo 'sudo id' | sh`: the script is the text echo prints.
            text = " ".join(a for a in source.argv[1:] if not (source.name == "echo" and a in ("-n", "-e", "-E")))
            self.parse(text.replace("\\n", "\n") if source.name == "printf" else text, cwd=command.cwd,
                       via=f"{label} <|", depth=depth + 1)
            return
        if command.piped_stdin or command.dynamic_tail:
            self.unresolved.append(f"`{command.text.strip() or name}` runs code piped into {name}; what it runs is only known when it runs")


    def _inline_code(self, command: SimpleCommand, code: str | None, *, via: str, depth: int) -> None:
        """Judge code an interpreter runs from its command line or a here-document (inline_code.read_code)."""
        if not code:
            return
        name = command.name
        label = f"{via} {name}".strip()
        seen = read_code(name, code)
        if seen.python:
            self._python(command, code, why=f"the `{name}` code", depth=depth)
            return
        if seen.shell:
            self.parse(code, cwd=command.cwd, via=f"{label} code", depth=depth + 1)
        command.inline_paths.extend(seen.paths)
        self.unresolved.extend(seen.unresolved)
        for literal in seen.commands:
            self.parse(literal, cwd=command.cwd, via=f"{label} code", depth=depth + 1)
        self.unresolved.extend(seen.unresolved_after)

    def _git(self, command: SimpleCommand, *, via: str, depth: int) -> None:
        """`git -c key=value`, `git config key value`: settings whose value git runs as a command."""
        found = git_settings(command.argv)
        self.unresolved.extend(found.unresolved)
        for key, value in found.settings:
            self._git_setting(key, value, cwd=command.cwd, via=via, depth=depth)

    def _git_setting(self, key: str, value: str, *, cwd: str | None, via: str, depth: int,
                     from_environment: bool = False) -> None:
        effect = setting_effect(key, value, from_environment=from_environment)
        if effect.command is not None:
            self.parse(effect.command, cwd=cwd, via=f"{via} git {key}".strip(), depth=depth + 1)
        elif effect.unresolved is not None:
            self.unresolved.append(effect.unresolved)

    def _find(self, command: SimpleCommand, *, via: str, depth: int) -> None:
        """`find ROOT -exec CMD {} ;`: CMD runs on every file under each root."""
        roots, clauses = programs.find_exec(command.argv[1:])
        for action, clause in clauses:
            for root in roots:
                words = [w.replace("{}", root) for w in clause]
                first = len(self.commands)
                self._emit(
                    words, list(words), [False] * len(words), assignments=[], redirects=[], substituted=[],
                    via=f"{via} find {action}".strip(), depth=depth, piped=False, upstream=[],
                    text=" ".join(clause),
                )
                for found in self.commands[first:]:
                    # `{}` stands for every file under the root, not the root alone.
                    found.reached.append(Reach(root, "tree", f"`find {root} {action}`", tree=True))
