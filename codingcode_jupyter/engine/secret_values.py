"""The session's known secrets: which values never leave by value (docs/approval.md, "Secrets never
leave by value").

:class:`KnownSecrets` (one per session) gathers them from

* the kernel's environment (and the settings' ``env``): a variable whose name says it holds one (:func:`secret_name`: a part
  of the name is KEY, TOKEN, SECRET, PASSWORD, PASSWD, PASS, PWD, PASSPHRASE, CREDENTIAL(S) or PAT,
  or ends in KEY, TOKEN, SECRET, PASSWORD...) with a value that could be one (:func:`could_be_secret`),
  any ``AWS_*`` variable whose value looks like a token, and the password of a URL in any variable;
* the project's dotenv files (:func:`~.secret_files.is_env_file`, found as the sandbox finds them):
  the same for each key, and any other value that looks like a token (:func:`looks_like_token`);
* the stores of tokens: the MCP OAuth tokens the session holds (``~/.codingcode/mcp-tokens``) and
  Claude Code's ``.credentials.json``.

It notices a change (a variable set, a dotenv file edited, a token refreshed) at its next use; the
project is walked for new dotenv files once a turn (:meth:`KnownSecrets.walk_next`).
"""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import urlsplit

from . import budget
from .claude.files import claude_dir
from .redaction import Matcher
from .secret_files import find_env_files
from .user_dir import user_dir

__all__ = ["KnownSecrets", "secret_name", "could_be_secret", "looks_like_token", "from_environ", "from_dotenv",
           "from_json_store", "MIN_LENGTH"]

# Shorter than this, a value is not taken for a secret: `DEBUG=1`, `PORT=8000`, `hunter2`.
MIN_LENGTH = 8
# Files larger than this are not read for secrets (no dotenv file or token store is this large).
_MAX_FILE = 1024 * 1024

_WORDS = frozenset({"KEY", "KEYS", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASS",
                    "PWD", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "PAT"})
_ENDINGS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE")
# The last word of a name that says where a secret is got (its value a URL or a path, not the secret).
_PLACES = frozenset({"URL", "URLS", "URI", "ENDPOINT", "HOST", "HOSTNAME", "DOMAIN", "SERVER", "ADDR", "ADDRESS",
                     "PATH", "FILE", "DIR"})
# The shell's own variables that a word above would name.
_NOT_SECRET = frozenset({"PWD", "OLDPWD"})
_NUMBER = re.compile(r"[+-]?\d+(\.\d+)?")
_PLAIN_WORD = re.compile(r"[a-z]+")
_HEX = re.compile(r"[0-9a-fA-F]+")


def secret_name(name: str) -> bool:
    """Whether a variable's or a key's name says it holds a secret (``GITHUB_TOKEN``, ``db_password``,
    ``apiKey``, ``OPENAI_APIKEY``); ``PWD`` is the working directory."""
    upper = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()
    if upper in _NOT_SECRET:
        return False
    return any(part in _WORDS or part.endswith(_ENDINGS) for part in re.split(r"[^A-Z0-9]+", upper) if part)


def _path_or_url(value: str) -> bool:
    return value.startswith(("/", "~/", "./", "../")) or bool(re.match(r"[A-Za-z]:\\|[a-z][a-z0-9+.-]*://", value))


def could_be_secret(value: str, *, urls: bool = False) -> bool:
    """A value a secret-named variable may hold as its secret: at least :data:`MIN_LENGTH` characters,
    not a number, not a path, not a URL unless ``urls`` (a URL's password counts on its own), not a plain
    lowercase word shorter than 16 (`postgres`, `changeme`: a default, which replaced everywhere would
    garble output)."""
    value = value.strip()
    if len(value) < MIN_LENGTH or _NUMBER.fullmatch(value) or _path_or_url(value) and not (urls and "://" in value):
        return False
    return not (len(value) < 16 and _PLAIN_WORD.fullmatch(value))


def _names_a_place(name: str) -> bool:
    """``OAUTH_TOKEN_URL``, ``KEY_VAULT_HOST``: the name says where a secret is got, not what it is."""
    parts = re.split(r"[^A-Z0-9]+", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper())
    return parts[-1] in _PLACES if parts else False


def looks_like_token(value: str) -> bool:
    """A value whose name does not say it is secret, taken for one by its look: 20 characters or more
    without spaces mixing upper and lower case letters and digits, or 32 hex digits or more."""
    value = value.strip()
    if len(value) < 20 or any(char.isspace() for char in value) or _path_or_url(value):
        return False
    if len(value) >= 32 and _HEX.fullmatch(value):
        return True
    return any(c.islower() for c in value) and any(c.isupper() for c in value) and any(c.isdigit() for c in value)


def _url_password(value: str) -> str | None:
    if "://" not in value or "@" not in value:
        return None
    try:
        password = urlsplit(value.strip()).password
    except ValueError:
        return None
    from urllib.parse import unquote

    return unquote(password) if password else None


def _pairs(key: str, value: str, label: str, by_look: bool) -> Iterator[tuple[str, str]]:
    """What one key's value makes known: the value (by its name, or by its look where ``by_look``) and
    a URL's password."""
    if secret_name(key) and could_be_secret(value, urls=not _names_a_place(key)) or by_look and looks_like_token(value):
        yield label, value
    password = _url_password(value)
    if password is not None and could_be_secret(password):
        yield f"{label} (its password)", password


def from_environ(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """(name, value) of the secrets in an environment (see the module docstring)."""
    found: list[tuple[str, str]] = []
    for name, value in environ.items():
        found.extend(_pairs(name, value, name, by_look=name.startswith("AWS_")))
    return found


def from_dotenv(text: str, label: str) -> list[tuple[str, str]]:
    """(``label:KEY``, value) of the secrets a dotenv file's text holds (python-dotenv's parser: quotes,
    ``export``, values over several lines); a line it cannot parse is passed over."""
    from dotenv.parser import parse_stream

    found: list[tuple[str, str]] = []
    for binding in parse_stream(io.StringIO(text)):
        if binding.error or binding.key is None or not binding.value:
            continue
        found.extend(_pairs(binding.key, binding.value, f"{label}:{binding.key}", by_look=True))
    return found


def from_json_store(data: Any, label: str) -> list[tuple[str, str]]:
    """(``label key.path``, value) of the tokens in a JSON store of them (every string under a key
    that says secret, and every string that looks like a token)."""
    found: list[tuple[str, str]] = []

    def walk(item: Any, path: str) -> None:
        if isinstance(item, dict):
            for key, value in item.items():
                walk(value, f"{path}.{key}" if path else str(key))
        elif isinstance(item, list):
            for number, value in enumerate(item):
                walk(value, f"{path}[{number}]")
        elif isinstance(item, str):
            key = re.split(r"[.\[]", path)[-1] if path else ""
            found.extend(_pairs(key, item, f"{label} {path}", by_look=True))

    walk(data, "")
    return found


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > _MAX_FILE:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return None


def _stamp(path: Path) -> tuple[str, int, int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return str(path), stat.st_mtime_ns, stat.st_size, stat.st_ino


class KnownSecrets:
    """One session's known secrets and the matcher built from them (see the module docstring).

    ``environ`` None reads the kernel's environment as it is at each use."""

    def __init__(self, project: Path | None = None, *, environ: Mapping[str, str] | None = None,
                 settings_env: Callable[[], Mapping[str, str]] | None = None) -> None:
        self.project = Path(project) if project is not None else None
        self._environ = environ
        # The variables the settings' `env` gives commands and servers, read as the kernel's are.
        self._settings_env = settings_env
        self._token_dirs: list[Path] = []
        self._held: dict[str, str] = {}
        self._env_files: list[Path] = []
        self._walk_due = project is not None
        self._stamp: Any = None
        self._matcher = Matcher(())

    def hold(self, name: str, value: str) -> None:
        """A secret the session holds that no file or variable shows (a token in memory)."""
        if value:
            self._held[name] = value

    def add_token_dir(self, path: Path) -> None:
        """Another directory of MCP token files (a manager's own ``token_dir``)."""
        path = Path(path)
        if path not in self._token_dirs:
            self._token_dirs.append(path)

    def walk_next(self) -> None:
        """Look for new dotenv files in the project at the next use (a new turn)."""
        self._walk_due = self.project is not None

    def _stores(self) -> list[tuple[Path, str]]:
        """The token stores' files, each with what its tokens are called."""
        dirs = [Path.home() / ".codingcode" / "mcp-tokens", user_dir() / "mcp-tokens", *self._token_dirs]
        files: list[tuple[Path, str]] = [(claude_dir() / ".credentials.json", "Claude Code's .credentials.json")]
        for directory in dict.fromkeys(dirs):
            try:
                names = sorted(name for name in os.listdir(directory) if name.endswith(".json"))
            except OSError:
                continue
            files.extend((directory / name, f"MCP token {name.removesuffix('.json')}") for name in names)
        return files

    def matcher(self) -> Matcher:
        """The matcher for the secrets as they are now (rebuilt only when something changed). Looking
        is not judging: a call judged while the project is walked is not asked for the time it took."""
        with budget.not_counted():
            return self._current()

    def _current(self) -> Matcher:
        if self._walk_due and self.project is not None:
            self._env_files = find_env_files(self.project)[0]
            self._walk_due = False
        environ: Mapping[str, str] = self._environ if self._environ is not None else os.environ
        if self._settings_env is not None:
            try:
                environ = {**self._settings_env(), **environ}
            except Exception:  # noqa: BLE001 -- settings that cannot be read add nothing (the session says why)
                pass
        stores = self._stores()
        stamp = (hash(frozenset(environ.items())), tuple(_stamp(path) for path in self._env_files),
                 tuple(_stamp(path) for path, _label in stores), tuple(self._held.items()))
        if stamp != self._stamp:
            self._matcher = Matcher(self._collect(environ, stores))
            self._matcher.prepare()
            self._stamp = stamp
        return self._matcher

    def _collect(self, environ: Mapping[str, str], stores: list[tuple[Path, str]]) -> list[tuple[str, str]]:
        found = [*from_environ(environ), *self._held.items()]
        for path in self._env_files:
            text = _read(path)
            if text is not None and self.project is not None:
                found.extend(from_dotenv(text, os.path.relpath(path, self.project)))
        for path, label in stores:
            text = _read(path)
            try:
                data = json.loads(text) if text else None
            except ValueError:
                continue
            found.extend(from_json_store(data, label))
        # One name for each value: the first place it was found (the environment before the files).
        first: dict[str, str] = {}
        for name, value in found:
            first.setdefault(value, name)
        return [(name, value) for value, name in first.items()]

    # -- what the session does with them -----------------------------------------------------------

    def redact(self, text: str, *, fresh: bool = True) -> str:
        """``text`` with every known secret (in any of its forms) replaced by a marker naming it.
        ``fresh`` False: with the secrets as last looked at (a command's output streamed line by line;
        its result is redacted afresh)."""
        return (self.matcher() if fresh else self._matcher).redact(text)[0]

    def redact_value(self, value: Any) -> tuple[Any, list[tuple[str, str]]]:
        """A JSON-like value (content blocks, a tool's input) redacted, and what was found."""
        return self.matcher().redact_value(value)

    def leaving(self, value: Any) -> list[tuple[str, str]]:
        """The known secrets (name, encoding) a value about to leave the machine carries."""
        return self.matcher().leaving(value)
