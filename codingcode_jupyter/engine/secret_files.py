"""Which file names hold secrets by convention: one predicate shared by the rules and the sandbox.

The built-in rule that asks before touching `.env` files and the sandbox that hides them
must agree on the name, or a file is asked about but readable by commands (or hidden but
allowed): see :func:`is_env_file`. `env.py` is code, not a dotenv file; `.envrc` is both
(a script direnv runs, and where people keep their tokens).

They must also agree on where to look: :func:`find_env_files` walks a tree the way the
sandbox does, skipping the directories in :data:`ENV_SCAN_SKIP` (vendored code,
environments, caches), so a recursive read of a directory is asked about exactly when it
would reach a dotenv file the sandbox hides.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from pathlib import Path

from . import budget, fs_probe

__all__ = ["is_env_file", "find_env_files", "ENV_SCAN_SKIP", "HOME_SECRETS", "AGENT_SECRETS", "credential_store",
           "credential_stores", "secret_file", "holds_private_key", "secret_name", "find_secret_named",
           "is_env_template", "placeholder_template"]

# Relative to the home directory: keys, tokens and the files where tools keep them.
HOME_SECRETS = (
    ".ssh", ".aws", ".gnupg", ".config/gcloud", ".azure", ".kube", ".docker", ".netrc",
    ".git-credentials", ".config/git/credentials", ".config/gh", ".config/hub", ".pypirc", ".npmrc",
    ".yarnrc.yml", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials", ".pgpass",
    ".my.cnf", ".vault-token", ".terraform.d/credentials.tfrc.json", ".config/containers/auth.json",
    ".local/share/keyrings", ".password-store", ".claude/.credentials.json", ".codex/auth.json",
)  # fmt: skip

# Directories never searched for .env files: vendored code, environments, caches.
ENV_SCAN_SKIP = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", "site-packages", ".ipynb_checkpoints"}
)


# Relative to the home directory, beyond HOME_SECRETS (which the sandbox also masks one by one inside
# the directories it shows): the agent's own and Claude Code's tokens, other tools' tokens, and
# Jupyter's runtime directory, whose connection files hold the key that runs code in a kernel and
# whose server files hold the server's token. The sandbox hides them with the rest of the home.
AGENT_SECRETS = (
    ".codingcode/mcp-tokens", ".claude.json", ".claude.json.backup", ".cache/huggingface/token",
    ".huggingface/token", ".kaggle/kaggle.json", ".databrickscfg", ".local/share/jupyter/runtime",
    "Library/Jupyter/runtime",
)  # fmt: skip
# Where Jupyter puts its runtime directory when told (jupyter_core's rules, read without importing it).
_RUNTIME_VARIABLES = ("JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "XDG_DATA_HOME", "XDG_RUNTIME_DIR")


@functools.lru_cache(maxsize=8)
def _stores(home: str | None, runtime: tuple[str | None, ...]) -> tuple[tuple[str, Path], ...]:
    # Keyed by $HOME and Jupyter's variables: resolved once per value rather than once per path judged.
    root = Path(os.path.realpath(os.path.expanduser("~")))
    stores = [root / name for name in (*HOME_SECRETS, *AGENT_SECRETS)]
    explicit, data, xdg_data, xdg_runtime = runtime
    for directory in (explicit, data and os.path.join(data, "runtime"), xdg_data and os.path.join(xdg_data, "jupyter",
                                                                                                "runtime"),
                      xdg_runtime and os.path.join(xdg_runtime, "jupyter")):
        if directory:
            stores.append(Path(os.path.realpath(os.path.expanduser(directory))))
    return tuple((str(store), store) for store in stores)


def credential_stores() -> tuple[Path, ...]:
    """Every credential store of the home (:data:`HOME_SECRETS`, :data:`AGENT_SECRETS`) and Jupyter's
    runtime directory wherever its variables put it."""
    return tuple(store for _, store in _current_stores())


def _current_stores() -> tuple[tuple[str, Path], ...]:
    return _stores(os.environ.get("HOME"), tuple(os.environ.get(name) for name in _RUNTIME_VARIABLES))


def credential_store(path: Path) -> Path | None:
    """The credential store (:func:`credential_stores`) that ``path`` (a real path) is or is inside,
    or None: what the sandbox hides must not be read unasked by a tool either."""
    text = str(path)
    for prefix, store in _current_stores():
        if text == prefix or text.startswith(prefix + "/"):
            return store
    return None


def is_env_file(name: str) -> bool:
    """True for a dotenv-like base name: `.env`, `.env.local`, `.env-prod`, `.env_test`, `prod.env`,
    `.envrc`, `.flaskenv`, and an editor's backup or swap file of one (`#.env#`, `.#.env`,
    `.env~`, `.env.swp`), which holds the same secrets."""
    name = _editor_original(name)
    if name in (".env", ".envrc", ".flaskenv"):
        return True
    if name.startswith(".env") and len(name) > 4 and name[4] in ".-_":
        return True
    return name.endswith(".env") and len(name) > 4


def _editor_original(name: str) -> str:
    """The file an editor's backup, lock or swap file copies (Emacs `#x#`, `.#x`, `x~`; vim `.x.swp`)."""
    if len(name) > 2 and name.startswith("#") and name.endswith("#"):
        name = name[1:-1]
    if name.startswith(".#"):
        name = name[2:]
    name = name.rstrip("~")
    for suffix in (".swp", ".swo", ".swn", ".bak", ".orig", ".save"):
        if name.endswith(suffix) and len(name) > len(suffix):
            stem = name[: -len(suffix)]
            # vim names the swap file of `.env` `.env.swp`, and of `x.env` `.x.env.swp`.
            return stem[1:] if stem.startswith("..") or (stem.startswith(".") and stem[1:].endswith(".env")) else stem
    return name


class _TooLarge(Exception):
    """A walk went past its limit of entries."""


def _files_under(root: Path, limit: int, *, dotfiles: bool = True) -> Iterator["os.DirEntry[str]"]:
    """Every entry under ``root`` that is not a directory (symlinks not followed, directories of
    :data:`ENV_SCAN_SKIP` not entered; ``dotfiles`` False: dot-names skipped, as rg and ag do);
    raises :class:`_TooLarge` past ``limit`` entries seen."""
    seen = 0
    stack = [str(root)]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    seen += 1
                    if seen > limit:
                        raise _TooLarge
                    if seen % 512 == 0:
                        budget.check()  # a walk made while judging a call counts against its budget
                    if not dotfiles and entry.name.startswith("."):
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in ENV_SCAN_SKIP:
                            stack.append(entry.path)
                        continue
                    yield entry
        except OSError:
            continue


def find_env_files(root: Path, limit: int = 20_000) -> tuple[list[Path], bool]:
    """Dotenv files under ``root`` (symlinks not followed) and whether the walk stopped at ``limit`` entries."""
    found: list[Path] = []
    try:
        for entry in _files_under(root, limit):
            if is_env_file(entry.name):
                found.append(Path(entry.path))
    except _TooLarge:
        return found, True
    return found, False


# -- secret files beyond dotenv: names, key extensions, key content ------------------------------------
#
# A separate predicate from the sandbox's mask (is_env_file): the approval layer asks before a tool
# reads one, but the sandbox leaves them visible. Hiding every `*secret*` file from commands would
# break ordinary work (a `secrets.py` module, test fixtures named `test_credentials.json`, the TLS
# keys a test suite serves with); the card is where the person decides.

# Words that name a file of secrets, matched anywhere in the base name (case-insensitive).
SECRET_WORDS = ("secret", "credential")
# Source code and documentation named for the subject (`secret_files.py`, `credentials.md`) is
# not a store of secrets: such names are ordinary.
CODE_SUFFIXES = frozenset({
    ".py", ".pyi", ".ipynb", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt", ".rb",
    ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".php", ".swift", ".scala", ".sh", ".md", ".rst", ".html", ".css",
    ".pyc",
})  # fmt: skip
# Private keys and keystores by extension. `.pem` holds certificates as often as keys: it is judged
# by its content when it can be read.
KEY_SUFFIXES = frozenset({".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk", ".p8"})
_KEY_NAME = re.compile(r"^id_(rsa|dsa|ecdsa|ed25519)(_sk)?$")
_PRIVATE_KEY = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
# How much of a file is searched for a key header, and the largest file opened at all.
_HEAD_BYTES = 64 * 1024
_MAX_SIZE = 10 * 1024 * 1024


def holds_private_key(path: Path) -> bool:
    """A regular file whose first 64 KB hold a `-----BEGIN ... PRIVATE KEY-----` header."""
    head = fs_probe.read_head(path, _HEAD_BYTES, max_size=_MAX_SIZE)
    return head is not None and bool(_PRIVATE_KEY.search(head))


def secret_name(name: str) -> str | None:
    """Why a file called ``name`` holds secrets by its name or extension alone, or None."""
    name = _editor_original(name)
    lower = name.lower()
    suffix = os.path.splitext(lower)[1]
    if _KEY_NAME.match(name):
        return "a private key (by its name)"
    if suffix in KEY_SUFFIXES:
        return f"a private key or keystore (a `{suffix}` file)"
    if any(word in lower for word in SECRET_WORDS) and suffix not in CODE_SUFFIXES:
        return "a file named for secrets or credentials"
    return None


def find_secret_named(root: Path, *, dotfiles: bool = True, limit: int = 20_000) -> tuple[Path, str] | None:
    """The first file under ``root`` a recursive read would reach that holds secrets by its name: a
    :func:`secret_name`, a dotenv name, or a ``.pem`` holding a private key (only ``.pem`` files are
    opened, not every file). ``dotfiles`` False: the reader skips dot-names (rg, ag). A walk that
    stops at ``limit`` entries gives ``root`` itself: what it did not see is not proven harmless.
    Directories of :data:`ENV_SCAN_SKIP` are not searched, as for dotenv files."""
    try:
        for entry in _files_under(root, limit, dotfiles=dotfiles):
            why = secret_name(entry.name)
            if why is None and is_env_file(entry.name):
                why = "a .env file"
            if why is None and entry.name.lower().endswith(".pem") and holds_private_key(Path(entry.path)):
                why = "a private key (it holds a `-----BEGIN ... PRIVATE KEY-----` header)"
            if why is not None:
                return Path(entry.path), why
    except _TooLarge:
        return root, "a directory too large to search for files named for secrets"
    return None


def secret_file(path: Path | str) -> str | None:
    """Why the file at ``path`` holds secrets by its name, extension or content (dotenv names are
    :func:`is_env_file`'s), or None."""
    why = secret_name(os.path.basename(str(path)))
    if why is not None:
        return why
    suffix = os.path.splitext(_editor_original(os.path.basename(str(path))).lower())[1]
    real = Path(path)
    if real.is_absolute() and holds_private_key(real):
        return "a private key (it holds a `-----BEGIN ... PRIVATE KEY-----` header)"
    if suffix == ".pem" and not fs_probe.exists(real):
        return "a `.pem` file, which may hold a private key"
    return None


# -- dotenv templates: a `.env.example` whose values are placeholders ------------------------------------
#
# Projects commit a template of their dotenv file so that people know which variables to set. Its name
# is a dotenv name (the sandbox hides it like any other), but what git prints of it is no secret when
# every value that could be one is a placeholder: judged by its content, as a `.pem` is.

_TEMPLATE_MARKERS = ("example", "sample", "template", "tmpl", "tpl", "dist", "defaults")
_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*[=:]\s*(.*?)\s*$")
# Names of variables whose value would be a secret.
_SECRET_KEY = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIAL|AUTH|PRIVATE|SALT|SIGNATURE|"
                         r"COOKIE|SESSION|DSN|CONNECTION|DATABASE_URL|_URI|_URL|WEBHOOK)", re.IGNORECASE)
_PLACEHOLDER = re.compile(
    r"^(|<[^<>]*>|\[[^\[\]]*\]|\{[^{}]*\}|\$\{?[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}?|[xX*._#-]+|0+|"
    r".*\b(your|example|sample|changeme|change[-_ ]?me|change[-_ ]?this|placeholder|replace|dummy|fake|"
    r"test|todo|tbd|insert|enter|put|here|xxx+|secret|password|token|key|none|null|redacted)\b.*)$",
    re.IGNORECASE)
# A URL's password part (`postgres://user:pw@host`).
_URL_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/:@\s]*:([^@/\s]*)@", re.IGNORECASE)
_MAX_TEMPLATE_BYTES = 64 * 1024


def is_env_template(name: str) -> bool:
    """A dotenv name that says it is a template (`.env.example`, `.env.sample`, `example.env`)."""
    lower = _editor_original(name).lower()
    return is_env_file(lower) and any(marker in re.split(r"[._-]", lower) for marker in _TEMPLATE_MARKERS)


def _placeholder(value: str) -> bool:
    value = value.strip().strip("'\"").strip()
    url = _URL_PASSWORD.match(value)
    if url is not None:
        return _placeholder(url.group(1))
    return bool(_PLACEHOLDER.match(value))


def placeholder_template(path: Path) -> bool:
    """Whether ``path`` is a dotenv template (:func:`is_env_template`) whose every value that names a
    secret (a key, token, password, a URL with a password...) is a placeholder: empty, `<...>`,
    `${VAR}`, `xxxx`, `your-key-here`, `changeme`... A file that cannot be read, or is large, is not one."""
    if not is_env_template(path.name):
        return False
    head = fs_probe.read_head(path, _MAX_TEMPLATE_BYTES + 1, max_size=_MAX_TEMPLATE_BYTES)
    if head is None:
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _ASSIGNMENT.match(line)
        if match is None:
            return False  # not a dotenv line: a key pasted in, say
        name, value = match.group(1), match.group(2).split(" #", 1)[0]
        if (_SECRET_KEY.search(name) or _URL_PASSWORD.match(value.strip("'\""))) and not _placeholder(value):
            return False
    return True
