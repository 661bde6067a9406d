"""What a parsed command line is: its simple commands (wrappers peeled, quotes removed), their
redirects and the paths they reach, and what could not be resolved before it runs."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .python_code import CodeCall
from .shell_words import quote_word

__all__ = ["Redirect", "Reach", "SimpleCommand", "ParsedCommand"]


@dataclass
class Redirect:
    """One redirection: its operator and target word."""

    op: str
    # The file named, or a here-document's or here-string's text.
    target: str
    dynamic: bool = False
    # A here-document whose delimiter was quoted: its text is not expanded.
    literal: bool = False


@dataclass(frozen=True)
class Reach:
    """A path a command reaches that is not one of its arguments."""

    path: str
    access: str
    via: str
    speculative: bool = False
    tree: bool = False


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
    # Paths named inside inline interpreter code (`python -c "open('/etc/shadow')"`).
    inline_paths: list[str] = field(default_factory=list)
    # Paths the command reaches beyond its arguments: wrapper options (`strace -o F`),
    # program knowledge (`sort -o F`, sed `w F`), inline code with its access.
    reached: list["Reach"] = field(default_factory=list)
    # The command is one a program may run (`aa-exec sudo`, a script written to a file):
    # what it would do is judged, but a denial becomes a question.
    speculative: bool = False
    # Calls in inline code the rules judge on their own (setuid bits, kill of pid 1...).
    code_calls: list[CodeCall] = field(default_factory=list)
    # Files this command fills with what it downloads; True when it runs what it downloads.
    downloads: list[str] = field(default_factory=list)
    runs_download: bool = False
    # The words of the command come partly from stdin (xargs); the commands upstream name them.
    stdin_names: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The command's basename (`/usr/bin/sudo` → `sudo`)."""
        return os.path.basename(self.argv[0]) if self.argv else ""

    @property
    def basenames(self) -> set[str]:
        """Basenames of every spelling of the command name."""
        return {os.path.basename(n) for n in self.names | {self.argv[0] if self.argv else ""}} - {""}

    def rule_text(self) -> str:
        """What rule patterns are matched against: assignments, then the peeled argv.

        A word holding blanks or quotes is shell-quoted, so word boundaries survive the join:
        an exact rule for `pytest -k 'a or b'` must not cover `pytest -k a or b`.
        """
        return " ".join([*self.assignments, *map(quote_word, self.argv)])

    def wrapped_text(self) -> str:
        return " ".join([*self.assignments, *map(quote_word, self.full_argv)])


@dataclass
class ParsedCommand:
    """Every simple command of a command line, and what could not be resolved statically."""

    source: str
    commands: list[SimpleCommand] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    # Network connections bash opens itself (`/dev/tcp/host/port` redirects).
    network: list[str] = field(default_factory=list)
    # Symbolic links the line makes (`ln -s /etc e`): (absolute link, absolute target).
    symlinks: list[tuple[str, str]] = field(default_factory=list)
