"""``.mcp.json``: the MCP servers of a project, in the format Claude Code uses.

    {"mcpServers": {"name": {"command": ..., "args": [...], "env": {...}, "cwd": ...},
                    "other": {"type": "http", "url": ..., "headers": {...}}}}

Strings may use ``${VAR}`` and ``${VAR:-default}``; a variable that is unset and has no
default is an error naming the file, the server and the variable, never an empty string
silently passed to a server. ``"deferred": true`` hides a server's tools until
tool_search finds them; ``"timeout"`` (seconds) overrides the call timeout;
``"trustAnnotations": true`` lets the server's ``readOnlyHint`` count for approval (a
person vouches for that server's honesty; by default hints never loosen anything).
HTTP and SSE servers that answer 401 are logged in to with OAuth (``"oauth"`` tunes it).

Real files carry more than we use: a key of a server entry we do not know is left out and
noted (:class:`McpConfig`), unless it is a near miss of one we know (``argz``), which is an
error. A server name Claude Code accepts but that is not safe on the wire (``my server``)
is renamed (``my_server``), and noted. ``${CLAUDE_PROJECT_DIR}`` is the project directory,
as Claude Code sets it.
"""

from __future__ import annotations

import ast
import difflib
import json
import os
import re
import shlex
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, TypeAdapter, ValidationError

__all__ = [
    "CONFIG_FILE",
    "McpConfigError",
    "StdioServerConfig",
    "HttpServerConfig",
    "SseServerConfig",
    "OAuthOptions",
    "RemoteServerConfig",
    "ServerConfig",
    "expand_vars",
    "variables_named",
    "parse_server",
    "parse_config",
    "load_mcp_config",
    "load_mcp_config_partial",
    "parse_typed_entry",
    "safe_server_name",
    "McpConfig",
    "read_mcp_config",
    "read_mcp_file",
    "expansion_environ",
]

CONFIG_FILE = ".mcp.json"
SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def safe_server_name(name: str) -> str | None:
    """``name`` with what our tool names cannot hold made ``_`` (None: nothing usable is left)."""
    if not isinstance(name, str):
        return None
    safe = _UNSAFE_NAME.sub("_", name.strip())
    return safe if SERVER_NAME_RE.match(safe) else None


def expansion_environ(project: Path | str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables ``${VAR}`` expands from: the kernel's (or ``environ``) and ``CLAUDE_PROJECT_DIR``."""
    base = dict(os.environ if environ is None else environ)
    base.setdefault("CLAUDE_PROJECT_DIR", str(Path(project).resolve()))
    return base


class McpConfigError(ValueError):
    """A server entry that cannot be used; the message names the file and the server."""


class _Common(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    deferred: bool = False
    timeout: float | None = Field(default=None, gt=0, description="Call timeout in seconds.")
    # Strict: loosening approval must be asked for with a real true, not "yes" or 1.
    trust_annotations: StrictBool = Field(default=False, alias="trustAnnotations")


class StdioServerConfig(_Common):
    """A server run as a child process, spoken to over its stdin and stdout."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    # Opt in to the same OS sandbox as execute_command (read-only filesystem, no network).
    sandbox: bool = False


class OAuthOptions(BaseModel):
    """How to log in to a remote server that asks for OAuth (all optional)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    enabled: bool = True
    scope: str | None = None
    # The loopback port the browser is sent back to; 0 picks a free one (kept for later logins).
    callback_port: int = Field(default=0, ge=0, le=65535, alias="callbackPort")
    client_name: str = Field(default="codingcode-jupyter", alias="clientName")


class HttpServerConfig(_Common):
    """A server reached over streamable HTTP."""

    type: Literal["http", "streamable-http", "streamableHttp"]
    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    oauth: OAuthOptions = Field(default_factory=OAuthOptions)


class SseServerConfig(_Common):
    """A server reached over the legacy HTTP+SSE transport (older remote servers)."""

    type: Literal["sse"]
    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    oauth: OAuthOptions = Field(default_factory=OAuthOptions)


RemoteServerConfig = Union[HttpServerConfig, SseServerConfig]
ServerConfig = Annotated[Union[StdioServerConfig, HttpServerConfig, SseServerConfig], Field(discriminator="type")]
_adapter: TypeAdapter[StdioServerConfig | HttpServerConfig | SseServerConfig] = TypeAdapter(ServerConfig)


def variables_named(value: Any) -> list[str]:
    """The variables ``${VAR}`` names in every string of ``value`` (recursively), in order."""
    if isinstance(value, str):
        return [match.group(1) for match in _VAR.finditer(value)]
    if isinstance(value, list):
        return [name for item in value for name in variables_named(item)]
    if isinstance(value, dict):
        return [name for item in value.values() for name in variables_named(item)]
    return []


def expand_vars(value: Any, environ: Mapping[str, str], *, where: str) -> Any:
    """``${VAR}`` / ``${VAR:-default}`` expanded in every string of ``value`` (recursively)."""
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in environ:
                return environ[name]
            if default is not None:
                return default
            raise McpConfigError(f"{where}: environment variable {name} is not set and has no default (${{{name}:-...}})")

        return _VAR.sub(substitute, value)
    if isinstance(value, list):
        return [expand_vars(item, environ, where=where) for item in value]
    if isinstance(value, dict):
        return {key: expand_vars(item, environ, where=where) for key, item in value.items()}
    return value


def _describe(error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False):
        loc = ".".join(str(part) for part in item["loc"] if part not in ("stdio", "http", "streamable-http", "streamableHttp", "sse"))
        problems.append(f"{loc or '(entry)'}: {item['msg']}")
    return "; ".join(problems)


def _known_keys(entry: dict[str, Any]) -> set[str]:
    kind = entry.get("type", "stdio")
    model: type[BaseModel] = StdioServerConfig if kind == "stdio" else SseServerConfig if kind == "sse" else HttpServerConfig
    return {key for name, info in model.model_fields.items() for key in (name, info.alias) if key}


def _screen_entry(raw: dict[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
    """A server entry without the keys we do not know (a near miss of a known key is an error)."""
    known = _known_keys(raw)
    kept, notes = {}, []
    for key, value in raw.items():
        if key in known:
            kept[key] = value
            continue
        close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.8)
        if close:
            raise McpConfigError(f"{where}: {key}: unknown key; did you mean {close[0]!r}?")
        notes.append(f"{where}: key {key!r} is not used here; left out")
    return kept, notes


def parse_server(
    name: str, raw: Any, *, environ: Mapping[str, str] | None = None, source: str = CONFIG_FILE,
    notes: list[str] | None = None,
) -> StdioServerConfig | HttpServerConfig | SseServerConfig:
    """One server entry, validated and with variables expanded; McpConfigError if unusable.

    ``notes``, when given, receives a line for each key left out (else unknown keys are errors,
    as they are for an entry typed by hand).
    """
    where = f"{source}: server {name!r}"
    if not isinstance(name, str) or not SERVER_NAME_RE.match(name):
        raise McpConfigError(
            f"{where}: a server name must be 1-64 letters, digits, '_', '.' or '-' (and start with a letter or digit)"
        )
    if not isinstance(raw, dict):
        raise McpConfigError(f"{where}: expected an object, got {type(raw).__name__}")
    entry = dict(raw)
    if "type" not in entry:
        entry["type"] = "http" if "url" in entry and "command" not in entry else "stdio"
    if notes is not None:
        entry, left_out = _screen_entry(entry, where)
        notes.extend(left_out)
    entry = expand_vars(entry, os.environ if environ is None else environ, where=where)
    try:
        return _adapter.validate_python(entry)
    except ValidationError as error:
        raise McpConfigError(f"{where}: {_describe(error)}") from None


def parse_config(
    data: Any, *, environ: Mapping[str, str] | None = None, source: str = CONFIG_FILE
) -> dict[str, StdioServerConfig | HttpServerConfig | SseServerConfig]:
    """Every server of a parsed ``.mcp.json`` document."""
    if not isinstance(data, dict):
        raise McpConfigError(f"{source}: expected a JSON object with \"mcpServers\"")
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise McpConfigError(f"{source}: \"mcpServers\" must be an object of name -> server")
    return {name: parse_server(name, raw, environ=environ, source=source) for name, raw in servers.items()}


def _read(path: Path) -> Any:
    from ..config_files import read_config_text

    try:
        text = read_config_text(path)
        # An empty file means no servers: the sandbox leaves an empty placeholder while it
        # protects a .mcp.json that does not exist yet.
        return json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as error:
        raise McpConfigError(f"{path}: not valid JSON: {error}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise McpConfigError(f"{path}: cannot be read: {error}") from None


class McpConfig:
    """What ``.mcp.json`` holds: the usable servers (by their safe names), an error for each
    unusable one, and a note for each key left out or name changed."""

    def __init__(self) -> None:
        self.servers: dict[str, StdioServerConfig | HttpServerConfig | SseServerConfig] = {}
        self.errors: dict[str, str] = {}
        self.notes: list[str] = []
        # Safe name -> the name as written, for the servers that were renamed.
        self.renamed: dict[str, str] = {}
        # The servers whose entry names a variable (``${VAR}``): what they run depends on the environment.
        self.uses_variables: set[str] = set()


def read_mcp_config(project: Path, *, environ: Mapping[str, str] | None = None) -> McpConfig:
    """Every server of ``<project>/.mcp.json`` (see :class:`McpConfig`); an unreadable file raises."""
    return read_mcp_file(Path(project) / CONFIG_FILE, project, environ=environ)


def read_mcp_file(path: Path, project: Path, *, environ: Mapping[str, str] | None = None) -> McpConfig:
    """Every server of a file in ``.mcp.json``'s format (``managed-mcp.json`` too), variables expanded
    as in ``project``; an unreadable file raises."""
    config = McpConfig()
    if not path.exists():
        return config
    data = _read(path)
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        parse_config(data, source=str(path))  # raises the precise message
    for key in data:
        if key != "mcpServers":
            config.notes.append(f"{path}: key {key!r} is not used here; left out")
    variables = expansion_environ(project, environ)
    for written, raw in data.get("mcpServers", {}).items():
        name = written if isinstance(written, str) and SERVER_NAME_RE.match(written) else safe_server_name(written)
        if name is None:
            config.errors[str(written)] = (f"{path}: server {written!r}: a server name must be 1-64 letters, digits, "
                                           "'_', '.' or '-' (and start with a letter or digit)")
            continue
        if name in config.servers or name in config.errors:
            config.errors[str(written)] = f"{path}: server {written!r}: its safe name {name!r} is taken by another server"
            continue
        if name != written:
            config.renamed[name] = str(written)
            config.notes.append(f"{path}: server {written!r} is called {name!r} here (tool names cannot hold "
                                "what its name holds); rules and hooks name it mcp__" + name + "__TOOL")
        if variables_named(raw):
            config.uses_variables.add(name)
        try:
            config.servers[name] = parse_server(name, raw, environ=variables, source=str(path), notes=config.notes)
        except McpConfigError as error:
            config.errors[name] = str(error)
    return config


def load_mcp_config(
    project: Path, *, environ: Mapping[str, str] | None = None
) -> dict[str, StdioServerConfig | HttpServerConfig | SseServerConfig]:
    """The servers of ``<project>/.mcp.json``; none if the file does not exist. Any unusable one raises."""
    config = read_mcp_config(project, environ=environ)
    if config.errors:
        raise McpConfigError("\n".join(config.errors.values()))
    return config.servers


def load_mcp_config_partial(
    project: Path, *, environ: Mapping[str, str] | None = None
) -> tuple[dict[str, StdioServerConfig | HttpServerConfig | SseServerConfig], dict[str, str]]:
    """The usable servers of ``.mcp.json`` and an error message for each unusable one.

    One bad entry must not keep the others from starting. An unreadable file raises.
    """
    config = read_mcp_config(project, environ=environ)
    return config.servers, config.errors


def parse_typed_entry(text: str) -> dict[str, Any]:
    """A server entry as a person types it after ``%agent mcp add NAME``.

    Accepted: a JSON object as is (``{"command": "uvx", "args": ["mcp-server-time"]}``), the
    same wrapped in one layer of shell quotes, a Python-style dict (single quotes, True/False),
    a URL (an HTTP server), or a plain command line (``uvx mcp-server-time --local-timezone UTC``).
    """
    raw = text.strip()
    if not raw:
        raise McpConfigError("no server entry given: a JSON object, a URL or a command line")
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"" and raw[1:-1].lstrip().startswith("{"):
        raw = raw[1:-1].strip()  # the older, shell-quoted spelling
    if raw.startswith("{"):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as error:
            try:
                value = ast.literal_eval(raw)
            except (ValueError, SyntaxError):
                raise McpConfigError(
                    f"the server entry is not a JSON object: {error.msg} at column {error.colno}"
                ) from None
        if not isinstance(value, dict):
            raise McpConfigError("the server entry must be a JSON object")
        return value
    if raw.startswith("["):
        raise McpConfigError("the server entry must be a JSON object, not a list")
    if re.match(r"^https?://", raw):
        return {"type": "http", "url": raw}
    try:
        argv = shlex.split(raw)
    except ValueError as error:
        raise McpConfigError(f"cannot read the command line: {error}") from None
    return {"command": argv[0], "args": argv[1:]}
