"""A path a tool call can reach, resolved the way the filesystem will resolve it."""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal

from ..fs_probe import WORD_MAX, could_be_path
from .may_run import EMBEDDED_PATH
from .paths import canonical
from .shell_words import expand_braces

__all__ = ["Access", "PathRef", "resolve_all", "candidates"]

Access = Literal["read", "write", "tree", "list", "unknown"]


@dataclass
class PathRef:
    """A path a call can reach: as written, resolved (None when unknowable), and how."""

    raw: str
    resolved: Path | None
    access: Access
    via: str
    # The command walks the whole tree under the path (`cp -r`, `tar c`, `zip -r`).
    recursive: bool = False
    # The path may be reached, not surely (a script written to a file, a program's argument):
    # a rule that would deny asks instead.
    speculative: bool = False
    # A tree walk that reads dotfiles (`rg` without `--hidden` does not).
    hidden: bool = True
    # A tree walk over what git tracks (`git grep`): a file the repository's index does not hold
    # (an ignored `.env`) is not read.
    tracked_only: bool = False
    # A diff of the working tree against the index (`git diff`): of the tracked files, only those
    # whose working copy differs from the index's are printed.
    changed_only: bool = False
    # Reads what no rule can see by name, why: "history", a git history away from a working tree (a
    # bare copy, `--git-dir`), whose files are only in git's objects; "no-repository", git run where
    # no repository is found (it stops there, unless the line makes one first).
    opaque: str = ""


_GLOB = re.compile(r"[*?\[]")
_FILE_URL = re.compile(r"(?i)file:(?://[^/]*)?(/.*)")


def candidates(word: str, *, deep: bool = False) -> list[str]:
    """Path-like pieces of one argument: itself, `--opt=value`, `-f/path`, `@file`, `file:` URLs, `host:path`.

    ``deep`` also finds paths inside longer text (for programs that may interpret their words).
    """
    out = [word]
    if "=" in word:
        out.append(word.split("=", 1)[1])
        out.append(word.rsplit("=", 1)[1])
    if word.startswith("-") and "/" in word:
        out.append(word[word.index("/"):])
    for piece in list(out):
        if piece.startswith("@"):
            out.append(piece[1:])
        url = _FILE_URL.match(piece)
        if url:
            out.append(url.group(1))
        elif ":" in piece and "://" not in piece:
            out.extend(p for p in piece.split(":") if p and not p.startswith("//"))
    if deep and (" " in word or "\n" in word or any(ch in word for ch in "{}(),;'\"")):
        out.extend(EMBEDDED_PATH.findall(word))
        out.extend(token for token in re.split(r"[\s'\"(),;{}=\\]+", word)
                   if token.startswith((".env", "./", "../", "~/")) or ("/" in token and "://" not in token))
    seen: list[str] = []
    for piece in out:
        if piece and piece not in seen:
            seen.append(piece)
    return seen


def _through_links(written: str, links: Iterable[tuple[str, str]]) -> str:
    """``written`` (absolute, normalised) with symbolic links made earlier on the line followed."""
    for _ in range(8):
        for link, target in links:
            if written == link or written.startswith(link.rstrip("/") + "/"):
                written = os.path.normpath(target + written[len(link):])
                break
        else:
            return written
    return written


def resolve_all(project: Path, raw: str, cwd: str | None, access: Access, via: str,
                links: Iterable[tuple[str, str]] = ()) -> list[PathRef]:
    """``raw`` resolved (braces expanded, globs matched, links followed) as one PathRef per path; a
    word that cannot name a file (:func:`~..fs_probe.could_be_path`) reaches nothing."""
    refs: list[PathRef] = []
    links = list(links)
    for word in expand_braces(raw) if len(raw) <= WORD_MAX else ():
        if not could_be_path(word):
            continue  # no program can open it (a script, a here-document's body, a long pattern)
        if not os.path.isabs(os.path.expanduser(word)) and cwd is None:
            refs.append(PathRef(word, None, access, via))
            continue
        try:
            target = word
            if links:
                base = cwd if cwd is not None else str(project)
                target = _through_links(os.path.normpath(os.path.join(base, os.path.expanduser(word))), links)
            resolved = canonical(project, target, cwd)
        except (OSError, ValueError):
            refs.append(PathRef(word, None, access, via))
            continue
        refs.append(PathRef(word, resolved, access, via))
        if _GLOB.search(word):
            base = cwd if cwd is not None else str(project)
            pattern = os.path.join(base, os.path.expanduser(word))
            for match in glob.glob(pattern)[:200]:
                refs.append(PathRef(match, canonical(project, match), access, via))
    return refs
