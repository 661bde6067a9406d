"""What of the person's home directory a sandboxed command sees: an allowlist, read-only.

One table for both backends. Inside the sandbox the home directory is empty (bubblewrap: an
empty read-only tmpfs; Landlock: no rule reaches it) except :data:`HOME_ALLOWLIST` — package
caches and toolchains that builds and tests need, none of which holds a credential — and
the directories a person adds with ``sandbox.filesystem.allowRead``. The product's own
directory (``~/.codingcode``: MCP tokens, the trust store, the person's settings) is never
visible: a setting naming it, or a directory holding it, is refused with a message.

Git's global configuration is shown as a filtered copy (:func:`filtered_git_config`): only
the sections in :data:`GIT_SECTIONS` (name, aliases, diff and merge options...), never
``credential.*``, ``http.*`` (extra headers carry tokens), ``url.*`` (an ``insteadOf`` may
embed one) or includes. A command that needs a credential (``git push`` over HTTPS) finds
none and gets :data:`NO_CREDENTIALS` from the askpass program the sandbox sets, which says
to run it outside the sandbox.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["HOME_ALLOWLIST", "GIT_SECTIONS", "HomeView", "home_view", "allow_read_problems", "NO_CREDENTIALS"]

# Relative to the home directory. Caches and toolchains: what `pip install`, `cargo build`,
# `npm ci`, `go test` and the person's own tools read. None of them is a credential store
# (those are in secret_files.HOME_SECRETS, and stay hidden even inside these).
HOME_ALLOWLIST = (
    ".cache/pip", ".cache/uv", ".cache/pypoetry", ".cache/pre-commit", ".cache/go-build", ".cache/yarn",
    ".npm/_cacache", ".yarn/berry/cache", ".cargo/bin", ".cargo/registry", ".cargo/git", ".rustup",
    ".local/lib", ".local/bin", ".local/share/uv/python", ".local/share/pipx/venvs", ".pyenv", ".nvm",
    ".volta", ".bun/bin", "go/pkg/mod", ".m2/repository", ".gradle/caches", ".gradle/wrapper",
    ".config/git/ignore", ".config/git/attributes", ".gitignore_global", ".gitignore",
)  # fmt: skip
# The product's own directory, never visible whatever the settings say.
PRODUCT_DIR = ".codingcode"
# Sections of the global git configuration a command may see.
GIT_SECTIONS = frozenset({
    "user", "core", "init", "color", "alias", "diff", "difftool", "merge", "mergetool", "pull", "push", "fetch",
    "branch", "rebase", "log", "status", "format", "advice", "pretty", "commit", "tag", "help", "safe", "column",
    "grep", "rerere", "submodule", "filter", "lfs", "interactive", "blame", "am", "apply", "gc", "pack", "protocol",
})  # fmt: skip
# core.* keys that name a program or a file elsewhere: inside they would run or read what we hide.
_GIT_DROPPED = frozenset({"core.sshcommand", "core.askpass", "core.hookspath", "core.fsmonitor", "core.excludesfile"})
NO_CREDENTIALS = (
    "codingcode sandbox: no credentials inside the sandbox (credential helpers, ~/.ssh and tokens are not "
    "visible here); ask the person to run this command outside the sandbox"
)


@dataclass
class HomeView:
    """The home directory as a sandboxed command sees it."""

    home: Path
    visible: list[Path] = field(default_factory=list)  # real paths, read-only
    git_config: str | None = None  # the filtered global git configuration, if there is one


def _real(home: Path, raw: str) -> Path:
    """``~`` is the sandbox's home (the person's); a relative entry is relative to it too."""
    path = str(home) + raw[1:] if raw == "~" or raw.startswith("~/") else raw
    return Path(os.path.realpath(path if os.path.isabs(path) else home / path))


def allow_read_problems(home: Path, entries: list[str]) -> list[str]:
    """Why entries of ``sandbox.filesystem.allowRead`` cannot be added (empty when all can)."""
    problems = []
    product = Path(os.path.realpath(home / PRODUCT_DIR))
    for raw in entries:
        if not raw.strip():
            problems.append("an empty entry")
            continue
        real = _real(home, raw)
        if real == product or product.is_relative_to(real) or real.is_relative_to(product):
            problems.append(f"'{raw}' would show ~/{PRODUCT_DIR} (tokens, trust store, settings), which stays hidden")
        elif real == Path("/"):
            problems.append(f"'{raw}' is the whole filesystem")
    return problems


def home_view(home: Path, allow_read: list[str]) -> HomeView:
    """The allowlisted entries of ``home`` that exist, plus ``allowRead`` (checked beforehand)."""
    home = Path(os.path.realpath(home))
    view = HomeView(home)
    for rel in HOME_ALLOWLIST:
        real = Path(os.path.realpath(home / rel))
        if real.exists() and real != home and real not in view.visible:
            view.visible.append(real)
    for raw in allow_read:
        real = _real(home, raw)
        if real.exists() and real not in view.visible:
            view.visible.append(real)
    view.git_config = filtered_git_config(home)
    return view


def _quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def filtered_git_config(home: Path) -> str | None:
    """The person's global git configuration with only :data:`GIT_SECTIONS`, as a file's text."""
    sources = [home / ".gitconfig", Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "git" / "config"]
    git = shutil.which("git")
    if git is None:
        return None
    lines: list[str] = []
    for source in sources:
        if not source.is_file():
            continue
        try:
            # `git config --file` lists the file as written: no include, no helper is run.
            done = subprocess.run([git, "config", "--file", str(source), "--list", "-z"], capture_output=True,
                                  timeout=5, env={"PATH": os.environ.get("PATH", ""), "HOME": str(home)})
        except (OSError, subprocess.TimeoutExpired):
            continue
        for entry in done.stdout.decode(errors="replace").split("\0"):
            key, _, value = entry.partition("\n")
            section, _, rest = key.partition(".")
            if not rest or section.lower() not in GIT_SECTIONS or key.lower() in _GIT_DROPPED:
                continue
            # A shell alias (`!cmd`) stays: inside, it runs confined like any command.
            sub, _, name = rest.rpartition(".")
            quoted_sub = sub.replace("\\", "\\\\").replace('"', '\\"')
            head = f"[{section}]" if not sub else f'[{section} "{quoted_sub}"]'
            lines += [head, f"\t{name} = {_quote(value)}"]
    return "\n".join(lines) + "\n" if lines else None
