"""What text that may end up run names: one job, pure functions, no walker state.

A program given another program's name (``aa-exec sudo id``, ``--pre-hook 'sudo id'``,
``exec=/sbin/reboot``), a script written to a file, the text piped into a program: none of it
surely runs, but it may. :func:`commands_in_args` and :func:`text_may_run` find the commands such
text would start and the paths it names; the shell walker (:mod:`.shell_parse`) judges them as
what may happen, never as what surely does.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from .inline_code import string_literals
from .program_traits import SPECULATIVE_NAMES

__all__ = ["EMBEDDED_PATH", "MayRun", "commands_in_args", "text_may_run"]

_SPECULATIVE_WORD = re.compile(r"(?<![\w.-])(?:/[\w.-]+)*/?(?:" + "|".join(sorted(SPECULATIVE_NAMES, key=len, reverse=True))
                               + r")(?![\w.-])")
# Absolute or home paths inside a longer word or text (`Include /etc/shadow`, `{/etc/shadow}`).
EMBEDDED_PATH = re.compile(r"(?:(?<=^)|(?<=[\s=:@,'\"(){}<>|;`\[\\]))(~?/[\w.@%+-]+(?:/[\w.@%+*?-]*)*)")


def _from_match(text: str, match: re.Match[str]) -> str:
    """The command a program name found inside text starts: `exec=sudo,-s` -> `sudo -s`, `system("sudo")` -> `sudo`."""
    rest = text[match.end():].split("\n", 1)[0]
    rest = re.sub(r"^[,;:=)'\"`}\]]+", " ", rest)
    rest = re.split(r"['\"`]\s*[,)}\]]", rest, maxsplit=1)[0]
    return match.group(0) + " " + rest.replace(",", " ")


def commands_in_args(words: list[str]) -> list[str]:
    """The commands a program named in an argument of ``words`` (an argv) starts, if the program
    that gets the argument runs it: a whole word names a program run with the words after it."""
    found = []
    for index, word in enumerate(words[1:], start=1):
        for match in _SPECULATIVE_WORD.finditer(word):
            if match.start() == 0 and match.end() == len(word):
                found.append(shlex.join(words[index:]))
            else:
                found.append(_from_match(word, match))
            break
    return found


@dataclass(frozen=True)
class MayRun:
    """What text that may be run names."""

    # Command lines it may start, in order.
    commands: tuple[str, ...] = ()
    # Paths it names, sorted.
    paths: tuple[str, ...] = ()


def text_may_run(text: str) -> MayRun:
    """The programs and paths ``text`` names (a script written to a file, a program's input): the
    command each line starts at a program name, and the string literals of code that shells out."""
    text = text.replace("\\n", "\n")
    commands = []
    for line in text.split("\n")[:200]:
        for match in _SPECULATIVE_WORD.finditer(line):
            commands.append(_from_match(line, match))
            break
    named = set(EMBEDDED_PATH.findall(text))
    named.update(t for t in re.split(r"[\s'\"(),;{}=\\`]+", text)
                 if t.startswith(".env") or ("/" in t and "://" not in t and len(t) < 300))
    if "#!" in text[:3] or re.search(r"\b(system|exec|popen|spawn|subprocess)\b", text):
        commands.extend(string_literals(text)[:50])
    return MayRun(commands=tuple(commands), paths=tuple(sorted(named)[:100]))
