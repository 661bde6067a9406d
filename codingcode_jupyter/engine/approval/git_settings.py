"""git settings that make git run a command or load code: one job, pure functions, no walker state.

A git setting given on the command line (``git -c key=value``, ``git config key value``) or in
the environment (``GIT_CONFIG_KEY_n``) can name a command git runs (``core.pager``,
``alias.x=!...``, ``credential.helper``) or a place it loads code from (``core.hooksPath``,
``include.path``). :func:`git_settings` finds the settings in a git argv; :func:`setting_effect`
says what one of them makes git run. The shell walker (:mod:`.shell_parse`) judges the commands.
Which program a ``git config`` sets for the host (the built-in rule) is
:func:`codingcode_jupyter.engine.host_paths.git_config_program`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["GitSettings", "SettingEffect", "environment_settings", "git_settings", "setting_effect"]

# git settings whose value is a command git runs.
_GIT_COMMAND_KEYS = re.compile(
    r"(core\.(pager|editor|sshcommand|fsmonitor|askpass)|alias\..+|pager\..+|diff\..*(command|textconv)|"
    r"diff\.external|difftool\..+\.cmd|mergetool\..+\.cmd|merge\..+\.driver|filter\..+\.(clean|smudge|process)|"
    r"credential(\..+)?\.helper|gpg(\..+)?\.program|sequence\.editor|uploadpack\.packobjectshook|"
    r"sendemail\..*(cccmd|tocmd|sendmailcmd)|web\.browser|browser\..+\.cmd|man\..+\.cmd|remote\..+\.(uploadpack|receivepack|vcs))$",
    re.IGNORECASE)
_GIT_CODE_PATH_KEYS = re.compile(r"(core\.hookspath|include\.path|includeif\..+\.path|core\.worktree|"
                                 r"core\.gitproxy|init\.templatedir|protocol\..*allow)$", re.IGNORECASE)
_GIT_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "get", "list",
                               "--show-origin", "--show-scope", "--name-only", "--get-color", "--get-colorbool"})


@dataclass(frozen=True)
class GitSettings:
    """The settings a git command line sets, in order, and what about them is only known when it runs."""

    settings: tuple[tuple[str, str], ...] = ()
    unresolved: tuple[str, ...] = ()


def git_settings(argv: list[str]) -> GitSettings:
    """`git -c key=value ...` and `git config key value`: the (key, value) settings of a git argv."""
    i = 1
    settings: list[tuple[str, str]] = []
    unresolved: list[str] = []
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] == "-c" and i + 1 < len(argv):
            key, _, value = argv[i + 1].partition("=")
            settings.append((key, value))
            i += 2
        elif argv[i] in ("-C", "--git-dir", "--work-tree", "--namespace", "--config-env") and i + 1 < len(argv):
            if argv[i] == "--config-env":
                unresolved.append("`git --config-env` sets configuration from a variable")
            i += 2
        elif argv[i].startswith(("--exec-path=", "--git-dir=", "--config-env=")):
            unresolved.append(f"`git {argv[i]}` changes where git finds its programs or configuration")
            i += 1
        else:
            i += 1
    sub = argv[i] if i < len(argv) else ""
    rest = argv[i + 1:]
    if sub == "config" and not any(w in _GIT_CONFIG_READS for w in rest):
        positional = [w for w in rest if not w.startswith("-")]
        if len(positional) >= 2:
            settings.append((positional[0], positional[1]))
    if sub == "grep":
        # `git grep -O<program>` opens the matching files with that program: a pager, as core.pager is.
        for word in rest:
            if word == "--":
                break
            if word.startswith("--open-files-in-pager="):
                settings.append(("core.pager", word.split("=", 1)[1]))
            elif word.startswith("-") and not word.startswith("--") and "O" in word[1:]:
                program = word[word.index("O", 1) + 1:]
                if program:
                    settings.append(("core.pager", program))
    return GitSettings(tuple(settings), tuple(unresolved))


def environment_settings(values: Mapping[str, str | None]) -> list[tuple[str | None, str | None]]:
    """GIT_CONFIG_COUNT / GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n: the (key, value) settings given in
    the environment (variables in ``values``, None where a value is only known when it runs)."""
    if "GIT_CONFIG_COUNT" not in values:
        return []
    found = []
    for name, key in values.items():
        match = re.fullmatch(r"GIT_CONFIG_KEY_(\d+)", name)
        if match:
            found.append((key, values.get(f"GIT_CONFIG_VALUE_{match.group(1)}")))
    return found


@dataclass(frozen=True)
class SettingEffect:
    """What one git setting makes git do beyond keeping its value."""

    # A shell command git runs.
    command: str | None = None
    # Why what it makes git run or load is only known when it runs.
    unresolved: str | None = None


def setting_effect(key: str, value: str, *, from_environment: bool = False) -> SettingEffect:
    """What the git setting ``key`` set to ``value`` makes git run.

    An ``alias.*`` is a shell command when its value starts with ``!``; on the command line a
    plain alias (another git subcommand) runs none, while set in the environment its value is
    judged as a command all the same (stricter: more is asked, never less).
    """
    if _GIT_COMMAND_KEYS.match(key):
        alias = key.lower().startswith("alias.")
        if alias and not value.startswith("!") and not from_environment:
            return SettingEffect()
        return SettingEffect(command=value[1:] if alias and value.startswith("!") else value)
    if _GIT_CODE_PATH_KEYS.match(key):
        return SettingEffect(unresolved=f"the git setting `{key}` makes git run or load files from elsewhere")
    return SettingEffect()
