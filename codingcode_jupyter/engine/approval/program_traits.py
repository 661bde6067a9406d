"""What the approval layer knows about each program by name, in one table indexed by program.

One row per program: what it is (a privilege tool, a shell, an interpreter, a downloader, a
printer of its arguments...), whether it runs the command after a subcommand (``uv run CMD``,
``npx CMD``), and how "Always allow" may generalise it. The sets the parser, the built-in
rules and the rule candidates read (:data:`SHELLS`, :data:`PRIVILEGE`, ...) are computed from
this table, so a program is described once. What programs do with their *options* (commands
in ``tar --checkpoint-action``, files in ``sort -o``) is :mod:`.programs`; the commands that
only read are :mod:`.readonly_commands`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Program", "PROGRAMS", "named", "PRIVILEGE", "SPECULATIVE_NAMES", "SHELLS", "INTERPRETERS",
           "DOWNLOADERS", "PRINTERS", "NEVER_RUN_ARGS", "DATA_INPUT", "COMMAND_WRAPPERS", "NESTED_SUBCOMMANDS",
           "NAMES_SUBCOMMAND", "NO_WILDCARD"]

Trait = Literal[
    # Runs its arguments as another user (sudo): a built-in rule denies it.
    "privilege",
    # A program a built-in rule judges (shutdown, rm, chmod...): named as an argument of a program
    # that may run its arguments, it is judged as if it ran, and asked rather than denied.
    "speculative",
    "shell", "interpreter",
    # Reaches the network by its nature.
    "downloader",
    # Its arguments are text, never a command it runs or a file it opens.
    "printer",
    # It never runs its arguments (package managers name packages, pagers show text).
    "never_runs_args",
    # What it reads on its input is data it prints, counts, converts or stores, never a command or a
    # name it acts on: a here-document or a pipe into it is not judged as what may run.
    "data_input",
    # Its first operand names what it does: an "Always allow" rule keeps it (`git diff *`).
    "names_subcommand",
    # "Always allow" never generalises it: it runs other code, reaches the network, deletes, or
    # changes who runs what (shells, interpreters and downloaders are never generalised either).
    "no_wildcard",
]


@dataclass(frozen=True)
class Program:
    """What one program is, as the approval layer needs to know it."""

    traits: frozenset[Trait]
    # It runs the command that follows this subcommand ("" : right after its name): `uv run CMD`.
    runs_command_after: str | None = None
    # It runs a script of the project named after this subcommand (`npm run test`): not a command.
    runs_script_after: str | None = None


def P(*traits: Trait, runs_command_after: str | None = None, runs_script_after: str | None = None) -> Program:  # noqa: N802
    return Program(frozenset(traits), runs_command_after, runs_script_after)


PROGRAMS: dict[str, Program] = {
    ':': P('printer'),
    'GET': P('downloader'),
    'Rscript': P('interpreter'),
    '[': P('printer'),
    'ag': P('never_runs_args'),
    'alias': P('never_runs_args'),
    'apk': P('never_runs_args'),
    'apropos': P('never_runs_args'),
    'apt': P('never_runs_args'),
    'apt-cache': P('never_runs_args'),
    'apt-get': P('never_runs_args'),
    'aria2c': P('downloader'),
    'ash': P('shell'),
    'awk': P('never_runs_args', 'no_wildcard'),
    'base64': P('never_runs_args', 'data_input'),
    'basename': P('printer'),
    'bash': P('shell'),
    'brew': P('never_runs_args'),
    'bun': P('interpreter'),
    'bundle': P('names_subcommand', runs_command_after='exec'),
    'bundler': P(runs_command_after='exec'),
    'bunx': P('no_wildcard', runs_command_after=''),
    'bzip2': P('never_runs_args', 'data_input'),
    'cabal': P(runs_command_after='exec'),
    'cargo': P('never_runs_args', 'names_subcommand'),
    'cat': P('never_runs_args', 'data_input'),
    'cd': P('never_runs_args'),
    'chgrp': P('no_wildcard'),
    'chmod': P('speculative', 'no_wildcard'),
    'chown': P('no_wildcard'),
    'clear': P('printer'),
    'cmp': P('never_runs_args', 'data_input'),
    'column': P('never_runs_args', 'data_input'),
    'command': P('never_runs_args'),
    'conda': P('never_runs_args', 'names_subcommand', runs_command_after='run'),
    'cp': P('never_runs_args'),
    'crontab': P('no_wildcard'),
    'csh': P('shell'),
    'curl': P('downloader'),
    'cut': P('never_runs_args', 'data_input'),
    'dash': P('shell'),
    'date': P('printer'),
    'dd': P('speculative', 'no_wildcard'),
    'declare': P('never_runs_args'),
    'deno': P('interpreter'),
    'diff': P('never_runs_args', 'data_input'),
    'dirname': P('printer'),
    'dnf': P('never_runs_args'),
    'doas': P('privilege', 'no_wildcard'),
    'docker': P('names_subcommand'),
    'dos2unix': P('never_runs_args', 'data_input'),
    'dotnet': P('names_subcommand'),
    'dpkg': P('never_runs_args'),
    'echo': P('printer'),
    'egrep': P('never_runs_args', 'data_input'),
    'elvish': P('shell'),
    'emacs': P('no_wildcard'),
    'env': P('no_wildcard'),
    'eval': P('no_wildcard'),
    'exec': P('no_wildcard'),
    'exit': P('printer'),
    'expect': P('interpreter'),
    'export': P('never_runs_args'),
    'expr': P('printer'),
    'false': P('printer'),
    'fetch': P('downloader'),
    'fgrep': P('never_runs_args', 'data_input'),
    'file': P('never_runs_args'),
    'find': P('never_runs_args', 'no_wildcard'),
    'fish': P('shell'),
    'fmt': P('never_runs_args', 'data_input'),
    'fold': P('never_runs_args', 'data_input'),
    'ftp': P('downloader'),
    'gawk': P('no_wildcard'),
    'getconf': P('printer'),
    'getopts': P('printer'),
    'git': P('never_runs_args', 'names_subcommand'),
    'go': P('names_subcommand'),
    'gradle': P('names_subcommand'),
    'grep': P('never_runs_args', 'data_input'),
    'gunzip': P('never_runs_args', 'data_input'),
    'gzip': P('never_runs_args', 'data_input'),
    'halt': P('speculative'),
    'hash': P('printer'),
    'hatch': P('names_subcommand', runs_command_after='run'),
    'head': P('never_runs_args', 'data_input'),
    'help': P('printer'),
    'hexdump': P('never_runs_args', 'data_input'),
    'hostname': P('printer'),
    'http': P('downloader'),
    'https': P('downloader'),
    'iconv': P('never_runs_args', 'data_input'),
    'id': P('printer'),
    'info': P('never_runs_args'),
    'ionice': P('no_wildcard'),
    'ipython': P('interpreter'),
    'ipython3': P('interpreter'),
    'irb': P('interpreter'),
    'jjs': P('interpreter'),
    'jobs': P('printer'),
    'jq': P('never_runs_args', 'data_input'),
    'jrunscript': P('interpreter'),
    'julia': P('interpreter'),
    'just': P('names_subcommand'),
    'kill': P('speculative', 'no_wildcard'),
    'killall': P('speculative', 'no_wildcard'),
    'killall5': P('speculative'),
    'ksh': P('shell'),
    'kubectl': P('names_subcommand'),
    'less': P('never_runs_args', 'no_wildcard', 'data_input'),
    'let': P('printer'),
    'ln': P('never_runs_args', 'no_wildcard'),
    'local': P('printer'),
    'logger': P('printer'),
    'loginctl': P('speculative'),
    'loksh': P('shell'),
    'ls': P('never_runs_args'),
    'lua': P('interpreter'),
    'luajit': P('interpreter'),
    'lwp-download': P('downloader'),
    'lwp-request': P('downloader'),
    'make': P('names_subcommand'),
    'mamba': P('never_runs_args', runs_command_after='run'),
    'man': P('never_runs_args', 'no_wildcard'),
    'md5sum': P('never_runs_args', 'data_input'),
    'micromamba': P(runs_command_after='run'),
    'mkdir': P('never_runs_args'),
    'mkfs': P('speculative'),
    'mksh': P('shell'),
    'more': P('never_runs_args', 'no_wildcard', 'data_input'),
    'mount': P('no_wildcard'),
    'mv': P('never_runs_args', 'no_wildcard'),
    'mvn': P('names_subcommand'),
    'nc': P('downloader'),
    'ncat': P('downloader'),
    'netcat': P('downloader'),
    'nice': P('no_wildcard'),
    'nl': P('never_runs_args', 'data_input'),
    'node': P('interpreter'),
    'nodejs': P('interpreter'),
    'nohup': P('no_wildcard'),
    'nox': P('names_subcommand'),
    'npm': P('never_runs_args', 'names_subcommand', runs_command_after='exec', runs_script_after='run'),
    'nproc': P('printer'),
    'npx': P('no_wildcard', runs_command_after=''),
    'nvim': P('no_wildcard'),
    'octave': P('interpreter'),
    'octave-cli': P('interpreter'),
    'od': P('never_runs_args', 'data_input'),
    'oksh': P('shell'),
    'osascript': P('interpreter'),
    'pacman': P('never_runs_args'),
    'paste': P('never_runs_args', 'data_input'),
    'pdm': P('names_subcommand', runs_command_after='run'),
    'perl': P('interpreter'),
    'php': P('interpreter'),
    'php-cgi': P('interpreter'),
    'pip': P('never_runs_args', 'names_subcommand'),
    'pip3': P('never_runs_args', 'names_subcommand'),
    'pipenv': P(runs_command_after='run'),
    'pipx': P('no_wildcard', runs_command_after='run'),
    'pkexec': P('privilege'),
    'pkill': P('speculative', 'no_wildcard'),
    'please': P('privilege'),
    'pnpm': P('never_runs_args', 'names_subcommand', runs_command_after='exec', runs_script_after='run'),
    'pnpx': P(runs_command_after=''),
    'poetry': P('names_subcommand', runs_command_after='run'),
    'popd': P('never_runs_args'),
    'posh': P('shell'),
    'poweroff': P('speculative'),
    'powershell': P('shell'),
    'printenv': P('printer'),
    'printf': P('printer'),
    'pushd': P('never_runs_args'),
    'pwsh': P('shell'),
    'pypy': P('interpreter'),
    'pypy3': P('interpreter'),
    'python': P('interpreter'),
    'python2': P('interpreter'),
    'python3': P('interpreter'),
    'python3.10': P('interpreter'),
    'python3.11': P('interpreter'),
    'python3.12': P('interpreter'),
    'python3.13': P('interpreter'),
    'python3.14': P('interpreter'),
    'python3.8': P('interpreter'),
    'python3.9': P('interpreter'),
    'rake': P('names_subcommand'),
    'rbash': P('shell'),
    'read': P('printer'),
    'readonly': P('never_runs_args'),
    'reboot': P('speculative'),
    'return': P('printer'),
    'rev': P('never_runs_args', 'data_input'),
    'rg': P('never_runs_args', 'data_input'),
    'rm': P('speculative', 'no_wildcard'),
    'rmdir': P('no_wildcard'),
    'rpm': P('never_runs_args'),
    'rsync': P('no_wildcard'),
    'ruby': P('interpreter'),
    'run0': P('privilege'),
    'runuser': P('privilege'),
    'rye': P(runs_command_after='run'),
    'scp': P('no_wildcard'),
    'sed': P('never_runs_args', 'no_wildcard'),
    'seq': P('printer'),
    'set': P('printer'),
    'setcap': P('speculative'),
    'sg': P('privilege'),
    'sh': P('shell'),
    'sha1sum': P('never_runs_args', 'data_input'),
    'sha256sum': P('never_runs_args', 'data_input'),
    'shift': P('printer'),
    'shopt': P('printer'),
    'shred': P('no_wildcard'),
    'shutdown': P('speculative'),
    'sleep': P('printer'),
    'snap': P('never_runs_args'),
    'socat': P('downloader'),
    'sort': P('never_runs_args', 'data_input'),
    'ssh': P('no_wildcard'),
    'stack': P(runs_command_after='exec'),
    'stat': P('never_runs_args'),
    'strace': P('no_wildcard'),
    'strings': P('never_runs_args', 'data_input'),
    'stty': P('printer'),
    'su': P('privilege', 'no_wildcard'),
    'sudo': P('privilege', 'no_wildcard'),
    'sudo-rs': P('privilege'),
    'sudoedit': P('privilege'),
    'systemctl': P('speculative', 'no_wildcard'),
    'tac': P('never_runs_args', 'data_input'),
    'tail': P('never_runs_args', 'data_input'),
    'tclsh': P('interpreter'),
    'tcsh': P('shell'),
    'tee': P('never_runs_args', 'no_wildcard', 'data_input'),
    'telinit': P('speculative'),
    'telnet': P('no_wildcard'),
    'test': P('printer'),
    'tftp': P('downloader'),
    'timeout': P('no_wildcard'),
    'touch': P('never_runs_args'),
    'tox': P('names_subcommand'),
    'tput': P('printer'),
    'tr': P('never_runs_args', 'data_input'),
    'true': P('printer'),
    'type': P('printer'),
    'typeset': P('never_runs_args'),
    'umask': P('printer'),
    'umount': P('no_wildcard'),
    'uname': P('printer'),
    'uniq': P('never_runs_args', 'data_input'),
    'unset': P('printer'),
    'uv': P('names_subcommand', runs_command_after='run'),
    'uvx': P('no_wildcard', runs_command_after=''),
    'vi': P('no_wildcard'),
    'vim': P('no_wildcard'),
    'wait': P('printer'),
    'watch': P('no_wildcard'),
    'wc': P('never_runs_args', 'data_input'),
    'wget': P('downloader'),
    'whatis': P('never_runs_args'),
    'whereis': P('printer'),
    'which': P('printer'),
    'whoami': P('printer'),
    'wish': P('interpreter'),
    'xargs': P('never_runs_args', 'no_wildcard'),
    'xh': P('downloader'),
    'xxd': P('never_runs_args', 'data_input'),
    'xz': P('never_runs_args', 'data_input'),
    'yarn': P('never_runs_args', 'names_subcommand', runs_command_after='exec', runs_script_after='run'),
    'yash': P('shell'),
    'yes': P('printer'),
    'yq': P('never_runs_args', 'data_input'),
    'yum': P('never_runs_args'),
    'zsh': P('shell'),
    'zstd': P('never_runs_args', 'data_input'),
    'zypper': P('never_runs_args'),
}


def named(trait: Trait) -> frozenset[str]:
    """Every program with ``trait``."""
    return frozenset(name for name, program in PROGRAMS.items() if trait in program.traits)


PRIVILEGE = named("privilege")
SPECULATIVE_NAMES = PRIVILEGE | named("speculative")
SHELLS = named("shell")
INTERPRETERS = named("interpreter")
DOWNLOADERS = named("downloader")
PRINTERS = named("printer")
NEVER_RUN_ARGS = PRINTERS | named("never_runs_args")
DATA_INPUT = named("data_input")
# Package and environment tools that run the command after a subcommand ("" : right after their name).
COMMAND_WRAPPERS: dict[str, str] = {name: program.runs_command_after for name, program in PROGRAMS.items()
                                    if program.runs_command_after is not None}
# (program, subcommand) pairs whose next word "Always allow" keeps too (`npm run test *`, `uv run pytest *`).
NESTED_SUBCOMMANDS: frozenset[tuple[str, str]] = frozenset(
    {(name, sub) for name, sub in COMMAND_WRAPPERS.items() if sub}
    | {(name, program.runs_script_after) for name, program in PROGRAMS.items() if program.runs_script_after}
)
NAMES_SUBCOMMAND = named("names_subcommand")
NO_WILDCARD = SHELLS | INTERPRETERS | DOWNLOADERS | named("no_wildcard")
