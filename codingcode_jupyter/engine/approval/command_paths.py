"""The paths a shell command can reach: its arguments, redirects, inline code and config writes.

Each simple command of the parsed line is read with what we know of the program: printers
name no file at all, readers only read what they name (some walk whole trees), git reads
or writes by subcommand, everything else may write whatever it names, including paths
inside longer words (`-c "Include /etc/shadow"`, `@file`, `file:///etc/shadow`, `host:path`).
Paths a command reaches beyond its words (wrapper options, sed's `w` file, inline code)
come with the command from the parser; symbolic links the line makes are followed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .. import fs_probe
from ..git_index import find_repository, repository_top
from .path_refs import Access, PathRef, candidates, resolve_all
from .program_traits import PRINTERS
from .programs import GIT_LISTINGS, git_lists_only, pytest_collects_only, sed_in_place, version_query
from .shell_parse import ParsedCommand, SimpleCommand

__all__ = ["command_paths"]

_READERS = frozenset({"cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "ag", "ack", "wc", "diff",
                      "file", "bat", "batcat", "jq", "yq", "sort", "uniq", "cut", "nl", "od", "xxd", "hexdump",
                      "strings", "md5sum", "sha256sum", "sha1sum", "sha512sum", "b2sum", "cksum", "cmp", "tac",
                      "base64", "base32", "readlink", "realpath", "git", "cd", "pushd", "pwd", "zcat", "bzcat",
                      "xzcat", "zless", "column", "fold", "fmt", "pr", "expand", "unexpand", "paste", "join", "comm",
                      "rev", "tr", "awk", "gawk", "mawk", "source", "."})
# Programs that only list names: they print no file's content.
_LISTERS = frozenset({"ls", "tree", "du", "find", "stat", "exa", "eza", "lsd", "fd", "fdfind", "locate", "test", "["})
# git subcommands that only read the working tree and repository.
_GIT_READS = frozenset({"status", "log", "diff", "show", "blame", "grep", "ls-files", "ls-tree", "rev-parse", "describe",
                        "shortlog", "cat-file", "rev-list", "reflog", "whatchanged", "annotate", "", "help", "version",
                        "archive", "format-patch"})
_GIT_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "get", "list"})
# Options whose value is a message, never a path.
_MESSAGE_OPTIONS = frozenset({"-m", "--message", "--grep", "--author", "--format", "--pretty", "-S", "-G"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
# Programs whose operands are read as whole trees (copies, archives, recursive searches).
_TREE_ALWAYS = frozenset({"rg", "ag", "ack", "tar", "bsdtar", "rsync", "cpio", "7z", "7za", "rclone", "restic", "borg"})


def _short_flag(args: list[str], letters: str, longs: tuple[str, ...] = ()) -> bool:
    return any((a.startswith("-") and not a.startswith("--") and any(ch in a[1:] for ch in letters))
               or any(a == long or a.startswith(long + "=") for long in longs) for a in args)


def _is_tree(name: str, args: list[str]) -> bool:
    """Commands that read everything under a directory operand."""
    if name in _TREE_ALWAYS:
        return True
    if name in ("grep", "egrep", "fgrep"):
        return _short_flag(args, "rR", ("--recursive", "--dereference-recursive", "--directories=recurse")) \
            or _grep_recurses(args)
    if name in ("cp", "scp", "zip", "chmod", "chown", "chgrp", "diff"):
        return _short_flag(args, "rRa", ("--recursive", "--archive"))
    return False


def _grep_recurses(args: list[str]) -> bool:
    """grep told to recurse in a form :func:`_short_flag` does not see: ``-d recurse``, ``-drecurse``,
    ``-id rec``, or a long option abbreviated (``--rec``, ``--dir=rec``); GNU grep takes each."""
    for index, arg in enumerate(args):
        if arg == "--":
            return False
        following = args[index + 1] if index + 1 < len(args) else ""
        if arg.startswith("--"):
            option, equals, value = arg[2:].partition("=")
            if len(option) >= 3 and ("recursive".startswith(option) or "dereference-recursive".startswith(option)):
                return True
            if len(option) >= 3 and "directories".startswith(option) and (value if equals else following).startswith("rec"):
                return True
        elif arg.startswith("-") and "d" in arg[1:]:
            # In a cluster of short options, -d takes the rest of the word (or the next word) as its value.
            value = arg[arg.index("d", 1) + 1:] or following
            if value.startswith("rec"):
                return True
    return False


def _sees_hidden(name: str, args: list[str]) -> bool:
    """Whether a tree walk reads dotfiles such as .env (rg and ag skip them unless told)."""
    if name in ("rg", "ag"):
        return _short_flag(args, ".", ("--hidden", "--unrestricted", "--no-ignore-dot")) or any(
            re.fullmatch(r"-u{2,}", a) or a == "-uu" for a in args)
    return True


def _git_access(args: list[str]) -> Access:
    sub = _git_subcommand(args)
    return "read" if sub in _GIT_READS or (sub in GIT_LISTINGS and git_lists_only(args)) else "unknown"


def _git_subcommand(args: list[str]) -> str:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    return args[i] if i < len(args) else ""


def _git_config_target(project: Path, command: SimpleCommand) -> list[PathRef]:
    """`git config key value` writes the repository's (or the user's) git configuration."""
    args = command.argv[1:]
    if "config" not in args or any(a in _GIT_CONFIG_READS for a in args):
        return []
    rest = args[args.index("config") + 1:]
    positional = [a for a in rest if not a.startswith("-")]
    writes = len(positional) >= 2 or any(a in ("--unset", "--unset-all", "--add", "--replace-all", "--edit", "-e",
                                               "--rename-section", "--remove-section", "set", "unset", "edit")
                                         for a in rest)
    if not writes:
        return []
    if "--global" in rest:
        target = Path(os.path.realpath(os.path.expanduser("~/.gitconfig")))
    elif "--system" in rest:
        target = Path("/etc/gitconfig")
    else:
        target = Path(os.path.realpath(project)) / ".git" / "config"
    return [PathRef(str(target), target, "write", "`git config`")]


# git grep's and git archive's options that take the next word as their value.
_GIT_GREP_VALUED = frozenset({"-e", "-f", "-A", "-B", "-C", "-m", "--max-count", "--max-depth", "--threads",
                              "--context", "--after-context", "--before-context", "--open-files-in-pager"})
_GIT_ARCHIVE_VALUED = frozenset({"--format", "-o", "--output", "--prefix", "--remote", "--exec", "--add-file",
                                 "--add-virtual-file", "--mtime"})
# git's pathspec wildcards (a backslash escapes, so `server.ke\y` matches server.key) and magic (`:/`, `:(top)`).
_PATHSPEC_MAGIC = re.compile(r"[*?\[\\]|^:")
# git grep's options, spelled out in full, that leave the files it reads those the index tracks: an
# option not here (`--untracked`, its abbreviation `--untr`, `--no-index`, `--recurse-submodules`)
# makes every file count. Short ones: flags, then those taking a value (the rest of the word or the next).
_GIT_GREP_TRACKED = frozenset({
    "--cached", "--text", "--textconv", "--no-textconv", "--ignore-case", "--word-regexp", "--invert-match",
    "--full-name", "--extended-regexp", "--basic-regexp", "--perl-regexp", "--fixed-strings", "--line-number",
    "--column", "--files-with-matches", "--name-only", "--files-without-match", "--null", "--count", "--color",
    "--no-color", "--break", "--heading", "--show-function", "--function-context", "--and", "--or", "--not",
    "--all-match", "--quiet", "--only-matching", "--exclude-standard", "--max-depth", "--max-count", "--threads",
    "--context", "--after-context", "--before-context", "--no-recursive", "--recursive", "-e", "-f", "-A", "-B",
    "-C", "-m"})
_GREP_FLAG_LETTERS = frozenset("aIiywvhHEGPFnlLZzcqopW0123456789")
_GREP_VALUE_LETTERS = frozenset("efABCm")


def _grep_keeps_tracked(options: list[str]) -> bool:
    """Whether every option of a `git grep` is one that reads only tracked files (see _GIT_GREP_TRACKED)."""
    for word in options:
        if word.startswith("--"):
            if word.split("=", 1)[0] not in _GIT_GREP_TRACKED:
                return False
            continue
        for letter in word[1:]:
            if letter in _GREP_VALUE_LETTERS:
                break
            if letter not in _GREP_FLAG_LETTERS:
                return False
    return True


def _pathspec_root(spec: str, base: str) -> str:
    """The directory a pathspec can match under: a glob's fixed leading directories (`../config/*`
    matches under ../config), the repository's top for magic (`:/x`, `:(top)`, `:(glob)`)."""
    fixed = _PATHSPEC_MAGIC.split(spec, 1)[0]
    # git normalises `x*/../..` before it matches: a `..` past the wildcard climbs out of the fixed part.
    if spec.startswith(":") or ".." in spec[len(fixed):]:
        top = repository_top(Path(os.path.realpath(base)))
        return str(top) if top is not None else "/"
    return fixed.rsplit("/", 1)[0] + "/" if "/" in fixed else "."


def _git_tree_reads(project: Path, command: SimpleCommand, links: list[tuple[str, str]]) -> list[PathRef]:
    """`git grep` and `git archive` print every file of the trees they are given (the working
    directory when none is): recursive reads. Without a
    revision, `git grep` reads only what the index tracks; a revision's tree is not read here, so
    then every file under the trees counts. Other git commands that print files' content from the
    repository (`git log -p`, `git show`, `git diff`) are :func:`_git_history_reads`."""
    words = command.argv[1:]
    base = command.cwd if command.cwd is not None else str(project)
    index = 0
    # The parser has already moved the command's cwd by `git -C`.
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    sub, rest = (words[index], words[index + 1:]) if index < len(words) else ("", [])
    # Another repository or index than the working tree's (`--git-dir`, GIT_INDEX_FILE=, a wrapper
    # that may set one): what the working tree's index tracks says nothing.
    elsewhere = bool(command.wrappers or command.assignments or any(
        w.split("=", 1)[0] in ("--git-dir", "--work-tree") for w in words[:index]))
    settings = [words[i + 1] for i in range(index - 1) if words[i] == "-c"]
    if sub not in ("grep", "archive"):
        # Wrappers that cannot set a variable leave git where it is; a GIT_ variable may move it.
        moved = any(a.split("=", 1)[0].startswith("GIT_") for a in command.assignments) or any(
            os.environ.get(v) for v in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")) or any(
            w not in _PLAIN_WRAPPERS for w in command.wrappers) or any(
            w.split("=", 1)[0] in ("--git-dir", "--work-tree", "--bare") for w in words[:index])
        return _git_history_reads(project, command, sub, rest, base, links, elsewhere=moved,
                                  aliased=any(w.startswith(("alias.", "--config-env")) for w in words[:index]))
    # A setting on the line may move what git grep reads (core.worktree, an index elsewhere): only
    # colour and quoting keep the index's answer.
    elsewhere = elsewhere or any(not w.lower().startswith(("color.", "core.quotepath=")) for w in settings)
    valued = _GIT_GREP_VALUED if sub == "grep" else _GIT_ARCHIVE_VALUED
    before, after = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest else (rest, [])
    positional: list[str] = []
    options: list[str] = []
    skip = False
    for word in before:
        if skip:
            skip = False
        elif word.startswith("-"):
            options.append(word)
            skip = word in valued
        else:
            positional.append(word)
    if sub == "grep" and not any(w in ("-e", "-f") or w.startswith(("-e", "-f")) for w in before
                                 if not w.startswith("--")):
        positional = positional[1:]  # the pattern
    revision = sub == "archive"
    if sub == "archive":
        positional = positional[1:]  # the tree-ish
    pathspecs = list(after)
    for word in positional:
        if os.path.lexists(os.path.join(base, os.path.expanduser(word))):
            pathspecs.append(word)
        else:
            revision = True
            if _PATHSPEC_MAGIC.search(word):
                pathspecs.append(word)  # git takes a word with wildcards or magic as a pathspec without `--`
    tracked = sub == "grep" and not revision and not elsewhere and _grep_keeps_tracked(options)
    return _tree_refs(project, pathspecs, base, f"`git {sub}`", links, tracked=tracked)


def _tree_refs(project: Path, pathspecs: list[str], base: str, via: str, links: list[tuple[str, str]], *,
               tracked: bool, default: str = ".") -> list[PathRef]:
    # No pathspec reads ``default``; a glob or magic pathspec reads under its fixed leading directories.
    specs = [_pathspec_root(p, base) if _PATHSPEC_MAGIC.search(p) else p for p in pathspecs] or [default]
    refs: list[PathRef] = []
    for spec in dict.fromkeys(specs):
        for ref in resolve_all(project, spec, base, "tree", via, links):
            ref.recursive = True
            ref.tracked_only = tracked
            refs.append(ref)
    return refs


_PLAIN_WRAPPERS = frozenset({"timeout", "nice", "ionice", "nohup", "stdbuf", "time", "command", "exec", "builtin",
                             "chrt", "taskset"})
# git subcommands that print no tracked file's content (names, hashes, messages at most) or change
# the repository without printing it; a subcommand not here (`show`, `diff`, `format-patch`,
# `cat-file`, `fast-export`, `stash`, an alias) may print any file git holds.
_GIT_NO_CONTENT = frozenset({
    "status", "ls-files", "ls-tree", "rev-parse", "describe", "shortlog", "rev-list", "help", "version", "",
    "init", "add", "commit", "checkout", "switch", "restore", "reset", "fetch", "pull", "push", "merge", "rebase",
    "rm", "mv", "branch", "tag", "remote", "config", "worktree", "submodule", "clean", "cherry-pick",
    "revert", "bisect", "count-objects", "fsck", "gc", "prune", "merge-base", "symbolic-ref", "show-ref",
    "update-ref", "update-index", "check-ignore", "check-attr", "var", "hash-object", "mktree", "write-tree",
    "read-tree", "commit-tree", "name-rev", "cherry", "maintenance", "repack", "sparse-checkout",
    "blame", "annotate", "lfs"})
# git log's options that print no diff; any other (-p, --patch, -u, -L, --cc, an abbreviation) may.
_GIT_LOG_QUIET = frozenset({
    "--oneline", "--graph", "--decorate", "--no-decorate", "--all", "--branches", "--tags", "--remotes", "--stat",
    "--shortstat", "--numstat", "--name-only", "--name-status", "--summary", "--abbrev-commit", "--no-abbrev-commit",
    "--reverse", "--no-merges", "--merges", "--first-parent", "--date-order", "--topo-order", "--author-date-order",
    "--format", "--pretty", "--author", "--committer", "--since", "--until", "--after", "--before", "--grep",
    "--max-count", "--skip", "--date", "--color", "--no-color", "--relative-date", "--follow", "--no-patch",
    "--left-right", "--boundary", "--simplify-by-decoration", "--show-signature", "--abbrev", "--invert-grep",
    "--regexp-ignore-case", "--all-match", "--ancestry-path", "--no-walk", "--walk-reflogs", "--dirstat",
    "-n", "-s", "-i", "-E", "-F", "-g"})
_DIFF_NAMES_ONLY = frozenset({"--stat", "--shortstat", "--numstat", "--name-only", "--name-status", "--dirstat",
                              "--summary", "--quiet", "--exit-code", "--no-patch", "-s", "--cached", "--staged",
                              "--no-color", "--color"})
_GIT_LOG_FAMILY = frozenset({"log", "whatchanged", "reflog"})
_SHOW_NO_PATCH = frozenset({"-s", "--no-patch", "--stat", "--shortstat", "--numstat", "--name-only", "--name-status",
                            "--summary", "--dirstat"})
# A revision that surely names a commit (HEAD and its ancestors, a range): a pathspec then narrows
# what is printed; any other name may be a blob or a tag of one, printed whole whatever the pathspec.
_COMMIT_REVISION = re.compile(r"^(?:(?:HEAD|@|ORIG_HEAD)(?:[~^]\d*)*)?(?:\.\.\.?(?:(?:HEAD|@)(?:[~^]\d*)*)?)?$")


def _prints_staged_diff(sub: str, rest: list[str]) -> bool:
    """`git status -v` (and `git commit --dry-run -v`) print the staged changes, as `git diff --cached` does."""
    verbose = any(w == "--verbose" or re.fullmatch(r"-[a-zA-Z]*v[a-zA-Z]*", w) for w in rest if w != "--")
    return verbose and (sub == "status" or (sub == "commit" and "--dry-run" in rest))


def _git_history_reads(project: Path, command: SimpleCommand, sub: str, rest: list[str], base: str,
                       links: list[tuple[str, str]], *, elsewhere: bool, aliased: bool) -> list[PathRef]:
    """A git command that prints files' content from the repository (`git log -p`, `git show`,
    `git diff`, `git cat-file -p`, an alias defined on the line): a recursive read of the
    repository from its top (git diffs the whole tree wherever it runs), or of the pathspecs when a
    pathspec surely narrows it. What the index tracks stands for what history holds."""
    if sub == "clone":
        return _git_clone_reads(project, rest, base, links)
    if sub == "worktree":
        # `git worktree add /tmp/w` copies the repository's files elsewhere, read there by a later
        # command this line's paths do not name; its other subcommands print no file.
        if rest[:1] != ["add"]:
            return []
    elif sub in _GIT_NO_CONTENT and not aliased and not any(w in ("-p", "--patch") for w in rest) \
            and not _prints_staged_diff(sub, rest):
        return []  # `-p` makes add, reset, checkout, restore print the changes, hunk by hunk
    before, after = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest else (rest, [])
    options = [w for w in before if w.startswith("-")]
    if _git_prints_no_file(sub, before, options, aliased=aliased):
        return []
    found = find_repository(Path(os.path.realpath(base)))
    if found is None or found[0] is None or elsewhere:
        return _git_opaque_reads(sub, base, found, elsewhere=elsewhere)
    whole = str(found[0])
    positional = [w for w in before if not w.startswith("-")]
    if sub == "diff" and not fs_probe.exists(found[1] / "index") and _diffs_working_tree(options) and all(
            os.path.lexists(os.path.join(base, w)) for w in positional):
        return []  # the working tree against an index git has not written: nothing is tracked, nothing differs
    if sub == "stash":
        positional = positional[1:]
    narrowing = _git_narrowing_pathspecs(sub, options, positional, after, base, aliased=aliased)
    blobs = _git_blob_reads(project, sub, positional, whole, base, links)
    if blobs is not None:
        return blobs
    specs = narrowing or [whole]
    refs = _tree_refs(project, specs, base, f"`git {sub or 'alias'}`", links, tracked=not elsewhere and not aliased)
    # `git diff` with no revision compares the working tree with the index: only a file that differs
    # is printed, which the index's recorded stat tells without reading the file.
    if sub == "diff" and not aliased and not elsewhere and _diffs_working_tree(options) and all(
            os.path.lexists(os.path.join(base, os.path.expanduser(w))) for w in positional):
        for ref in refs:
            ref.changed_only = True
    return refs


def _git_clone_reads(project: Path, rest: list[str], base: str, links: list[tuple[str, str]]) -> list[PathRef]:
    """`git clone . /tmp/x` copies the repository's files elsewhere, read there by a later command
    this line's paths do not name: a read of the tracked tree of a local source."""
    source = [w for w in rest if not w.startswith("-")][:1]
    if not (source and os.path.isdir(os.path.join(base, source[0]))):
        return []
    return _tree_refs(project, source, base, "`git clone`", links, tracked=True)


def _git_prints_no_file(sub: str, before: list[str], options: list[str], *, aliased: bool) -> bool:
    """Whether the options alone keep git from printing any file's lines (messages, names, counts)."""
    if (sub in _GIT_LOG_FAMILY or (sub == "stash" and before[:1] == ["list"])) and not aliased and all(
            w.split("=", 1)[0] in _GIT_LOG_QUIET or re.fullmatch(r"-n?\d+", w) for w in options):
        return True
    if sub == "stash" and before[:1] not in (["show"], ["list"]):
        return True
    # `git show` prints the patch unless told not to (`-s`, `--stat`, `--name-only`): then, of commits
    # (HEAD and its ancestors), only messages and names.
    if sub == "show" and not aliased and any(w.split("=", 1)[0] in _SHOW_NO_PATCH for w in options) and all(
            w.split("=", 1)[0] in _GIT_LOG_QUIET - {"--follow"} or re.fullmatch(r"-n?\d+", w) for w in options) \
            and all(_COMMIT_REVISION.match(w) for w in before if not w.startswith("-")):
        return True
    if sub == "diff" and all(w.split("=", 1)[0] in _DIFF_NAMES_ONLY for w in options) and any(
            w.split("=", 1)[0] not in ("--cached", "--staged", "--color", "--no-color") for w in options):
        return True  # names and counts, no line of any file
    if sub == "cat-file" and options and set(options) <= {"-t", "-s", "-e"}:
        return True  # an object's type or size, or whether it exists
    return False


def _git_opaque_reads(sub: str, base: str, found: tuple[Path | None, Path] | None, *,
                      elsewhere: bool) -> list[PathRef]:
    """No working tree to stand for what git prints: the read is of something the rules cannot list."""
    if found is None and not elsewhere:
        return [PathRef(base, Path(os.path.realpath(base)), "read", f"`git {sub or 'alias'}` (no repository "
                        "where it runs)", opaque="no-repository")]
    where = str(found[1]) if found is not None else base
    return [PathRef(where, Path(where), "read", f"`git {sub or 'alias'}` (a repository without its working "
                    "tree, whose files only git's objects hold)", opaque="history")]


def _diffs_working_tree(options: list[str]) -> bool:
    """Whether `git diff` with these options compares the working tree (not the index or two files)."""
    return not any(w in ("--cached", "--staged", "--no-index") or w.startswith("--merge-base") for w in options)


def _git_narrowing_pathspecs(sub: str, options: list[str], positional: list[str], after: list[str], base: str, *,
                             aliased: bool) -> list[str]:
    """The pathspecs that surely bound what git prints, or none when something may print beyond them."""
    # --follow also prints the file's history under its earlier names, outside the pathspec.
    narrows = (sub in _GIT_LOG_FAMILY or sub in ("diff", "format-patch", "whatchanged")) and not aliased and all(
        w.split("=", 1)[0] in _GIT_LOG_QUIET - {"--follow"} or w in ("-p", "-u", "--patch", "--cached", "--staged", "--stdout")
        or re.fullmatch(r"-n?\d+", w) for w in options)
    pathspecs = list(after)
    for word in positional:
        if os.path.lexists(os.path.join(base, os.path.expanduser(word))):
            pathspecs.append(word)
        elif not _COMMIT_REVISION.match(word):
            narrows = False
    return pathspecs if narrows else []


def _git_blob_reads(project: Path, sub: str, positional: list[str], whole: str, base: str,
                    links: list[tuple[str, str]]) -> list[PathRef] | None:
    """`git show HEAD:config/app.yaml` prints that one file (a tree's names, if it is a directory):
    the reads of the files such revision:path words name, or None when the words are not all such."""
    # `:0:path` is a stage of the index, `:path` the index's copy.
    blobs = [re.sub(r"^[0-3]:", "", w.split(":", 1)[1]) if w.startswith(":") else w.split(":", 1)[1]
             for w in positional if ":" in w and not w.startswith(":/")]
    if sub in ("show", "cat-file") and blobs and len(blobs) == len([w for w in positional if w not in ("blob", "-p")]) \
            and not any(_PATHSPEC_MAGIC.search(b) or b.startswith(":") for b in blobs):
        return [ref for blob in blobs for ref in resolve_all(
            project, blob if blob.startswith(("./", "../")) else os.path.join(whole, blob), base, "read",
            f"`git {sub}`", links)]
    return None


def _default_operand(name: str, args: list[str]) -> str | None:
    """The directory a recursive search walks when it names none: the working directory."""
    operands = [a for a in args if not a.startswith("-")]
    if name in ("rg", "ag", "ack") and len(operands) <= 1:
        return "."
    if name in ("grep", "egrep", "fgrep") and _is_tree(name, args) and len(operands) <= 1:
        return "."
    return None


def _argument_words(command: SimpleCommand) -> list[tuple[str, bool]]:
    """(word, dynamic) for the words that may name files: messages and printers' text excluded."""
    out: list[tuple[str, bool]] = []
    skip = False
    patterns = _pattern_words(command.name, command.argv[1:])
    for index, word in enumerate(command.argv[1:], start=1):
        dynamic = command.dynamic[index] if index < len(command.dynamic) else False
        if skip:
            skip = False
            continue
        if index in patterns:
            continue  # a search's pattern names text to find, not a file (`grep -n SECRET_KEY settings.py`)
        if command.name == "git" and (word in _MESSAGE_OPTIONS or word.split("=", 1)[0] in _MESSAGE_OPTIONS):
            skip = "=" not in word
            continue
        out.append((word, dynamic))
    return out


# Searches whose first operand is the pattern (unless given with -e or read from a file with -f), and
# their options that take the next word as a value.
_SEARCHES = frozenset({"grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack"})
_SEARCH_VALUED = frozenset({"-A", "-B", "-C", "-m", "-d", "-D", "-g", "-t", "-T", "-j", "-M", "-E", "-r", "-f",
                            "--context", "--after-context", "--before-context", "--max-count", "--glob", "--type",
                            "--type-not", "--threads", "--max-columns", "--encoding", "--replace", "--file",
                            "--ignore-file", "--directories", "--devices", "--binary-files", "--label", "--color",
                            "--colour"})


def _pattern_words(name: str, args: list[str]) -> set[int]:
    """The argv indexes (1-based) of a search's patterns: its first operand, or the values of its
    `-e` / `--regexp` options (then every operand is a file). A `-f` file is a file."""
    if name not in _SEARCHES:
        return set()
    found: set[int] = set()
    given = False
    first: int | None = None
    skip = False
    for index, word in enumerate(args, start=1):
        if skip:
            skip = False
            continue
        if word == "--":
            if first is None and index < len(args):
                first = index + 1
            break
        if word in ("-e", "--regexp"):
            found.add(index + 1)
            given, skip = True, True
        elif word.startswith("--regexp=") or (word.startswith("-e") and len(word) > 2 and name not in ("rg", "ag")):
            given = True
        elif word in ("-f", "--file") or word.startswith("--file="):
            given, skip = True, word in ("-f", "--file")
        elif word.startswith("-"):
            skip = word in _SEARCH_VALUED and (name in ("rg", "ag", "ack") or word not in ("-E", "-r"))
        elif first is None:
            first = index
    if not given and first is not None:
        found.add(first)
    return found


def command_paths(project: Path, parsed: ParsedCommand) -> list[PathRef]:
    """Every path the commands of ``parsed`` can reach, resolved from ``project``."""
    refs: list[PathRef] = []
    links = parsed.symlinks
    for command in parsed.commands:
        name = command.name
        args = command.argv[1:]
        tree = _is_tree(name, args)
        hidden = _sees_hidden(name, args)
        if name in _LISTERS:
            access: Access = "list"
        elif name in _READERS or (name == "sed" and not sed_in_place(args)) or (
                name == "pytest" and pytest_collects_only(args)):
            access = "tree" if tree else "read"
        else:
            access = "unknown"
        if name == "git":
            access = _git_access(args)
            refs.extend(_git_config_target(project, command))
            refs.extend(_git_tree_reads(project, command, list(links)))
        start = len(refs)
        if name not in PRINTERS and command.argv and not version_query(args):
            deep = name not in _READERS and name not in _LISTERS
            for word, dynamic in _argument_words(command):
                for piece in candidates(word, deep=deep):
                    if dynamic:
                        refs.append(PathRef(piece, None, access, f"`{name}` argument"))
                    else:
                        refs.extend(resolve_all(project, piece, command.cwd, access, f"`{name}` argument", links))
            default = _default_operand(name, args)
            if default is not None:
                refs.extend(resolve_all(project, default, command.cwd, "tree", f"`{name}` (no operand: the working "
                                        "directory)", links))
        if tree:
            for ref in refs[start:]:
                ref.recursive = True
                ref.hidden = hidden
        for reach in command.reached:
            for ref in resolve_all(project, reach.path, command.cwd, reach.access, reach.via, links):  # type: ignore[arg-type]
                ref.speculative = reach.speculative
                ref.recursive = reach.tree
                refs.append(ref)
        for text in command.inline_paths:
            refs.extend(resolve_all(project, text, command.cwd, "unknown", f"path in `{name}` code", links))
        for word in command.stdin_names:
            # xargs runs its command on the names an earlier stage prints: the files under them.
            for ref in resolve_all(project, word, command.cwd, "tree", f"`{name}` input from the pipe", links):
                ref.recursive = True
                refs.append(ref)
        for assignment in command.assignments:
            value = assignment.split("=", 1)[1] if "=" in assignment else ""
            if value:
                refs.extend(resolve_all(project, value, command.cwd, "unknown", "variable assignment", links))
        for redirect in command.redirects:
            if redirect.op in ("<<", "<<-", "<<<") or redirect.target.isdigit() or redirect.target == "-":
                continue
            kind: Access = "write" if redirect.op in _WRITE_REDIRECTS else "read"
            if redirect.dynamic:
                refs.append(PathRef(redirect.target, None, kind, f"redirect {redirect.op}"))
            else:
                refs.extend(resolve_all(project, redirect.target, command.cwd, kind, f"redirect {redirect.op}", links))
        if command.speculative:
            for ref in refs[start:]:
                ref.speculative = True
    # The place a link is made is written, whatever the link points at (paths through it follow it above):
    # `ln -s run.sh ~/.local/bin/ls` puts a program on the person's PATH.
    for link, _target in links:
        refs.extend(resolve_all(project, link, str(project), "write", "`ln` makes a link at"))
    return refs
