""".mcp.json parsing and MCP tool naming."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from codingcode_jupyter.engine.mcp.config import (
    HttpServerConfig,
    McpConfigError,
    SseServerConfig,
    StdioServerConfig,
    load_mcp_config,
    parse_server,
    parse_typed_entry,
)
from codingcode_jupyter.engine.mcp.naming import assign_wire_names, is_wire_name

WIRE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def write(tmp_path, data) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps(data) if not isinstance(data, str) else data)


def test_claude_code_format_with_variable_expansion(tmp_path):
    write(tmp_path, {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "server", "${ROOT}"], "env": {"TOKEN": "${TOKEN:-none}"}, "cwd": "sub"},
        "remote": {"type": "http", "url": "http://127.0.0.1:${PORT:-9000}/mcp", "headers": {"Authorization": "Bearer ${KEY}"},
                   "deferred": True, "timeout": 5},
    }})
    servers = load_mcp_config(tmp_path, environ={"ROOT": "/data", "KEY": "k1"})
    files, remote = servers["files"], servers["remote"]
    assert isinstance(files, StdioServerConfig) and files.args == ["-y", "server", "/data"]
    assert files.env == {"TOKEN": "none"} and files.cwd == "sub" and not files.deferred
    assert isinstance(remote, HttpServerConfig) and remote.url == "http://127.0.0.1:9000/mcp"
    assert remote.headers == {"Authorization": "Bearer k1"} and remote.deferred and remote.timeout == 5


def test_sse_trust_and_oauth_options(tmp_path):
    write(tmp_path, {"mcpServers": {
        "old": {"type": "sse", "url": "http://127.0.0.1:9/sse", "trustAnnotations": True},
        "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp", "oauth": {"scope": "read", "callbackPort": 8765}},
        "plain": {"command": "x"},
    }})
    servers = load_mcp_config(tmp_path, environ={})
    assert isinstance(servers["old"], SseServerConfig) and servers["old"].trust_annotations
    assert servers["old"].oauth.enabled and servers["remote"].oauth.scope == "read"
    assert servers["remote"].oauth.callback_port == 8765 and not servers["remote"].trust_annotations
    assert not servers["plain"].trust_annotations


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ('{"command": "uvx", "args": ["mcp-server-time"]}', {"command": "uvx", "args": ["mcp-server-time"]}),
        ("'{\"command\": \"uvx\"}'", {"command": "uvx"}),
        ("{'command': 'node', 'sandbox': True}", {"command": "node", "sandbox": True}),
        ("http://127.0.0.1:3001/mcp", {"type": "http", "url": "http://127.0.0.1:3001/mcp"}),
        ("uvx mcp-server-time --local-timezone 'Europe/Paris'",
         {"command": "uvx", "args": ["mcp-server-time", "--local-timezone", "Europe/Paris"]}),
        ('{"command": "echo", "args": ["it\'s"]}', {"command": "echo", "args": ["it's"]}),
    ],
)
def test_typed_entries(typed, expected):
    assert parse_typed_entry(typed) == expected
    parse_server("x", expected, environ={})  # and each is a valid entry


@pytest.mark.parametrize("typed", ["", "{not json", "[1, 2]", "'unbalanced"])
def test_bad_typed_entries(typed):
    with pytest.raises(McpConfigError):
        parse_typed_entry(typed)


def test_no_file_means_no_servers(tmp_path):
    assert load_mcp_config(tmp_path) == {}


def test_unset_variable_without_default_names_file_server_and_variable(tmp_path):
    write(tmp_path, {"mcpServers": {"gh": {"command": "x", "env": {"T": "${GITHUB_TOKEN}"}}}})
    with pytest.raises(McpConfigError) as error:
        load_mcp_config(tmp_path, environ={})
    message = str(error.value)
    assert ".mcp.json" in message and "'gh'" in message and "GITHUB_TOKEN" in message


def test_empty_default_is_allowed():
    assert parse_server("a", {"command": "x", "args": ["${NOPE:-}"]}, environ={}).args == [""]


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ({}, "command"),
        ({"command": ""}, "command"),
        ({"type": "http"}, "url"),
        ({"type": "http", "url": "ftp://x"}, "url"),
        ({"command": "x", "args": "not-a-list"}, "args"),
        ({"command": "x", "argz": []}, "argz"),
        ({"type": "sse", "url": "ftp://x"}, "url"),
        ({"type": "http", "url": "http://x", "oauth": {"callbackPort": 70000}}, "callbackPort"),
        ({"command": "x", "trustAnnotations": "yes"}, "trustAnnotations"),
        ({"type": "carrier-pigeon"}, "carrier-pigeon"),
        ("just a string", "expected an object"),
        ({"command": "x", "timeout": -1}, "timeout"),
    ],
)
def test_bad_entries_give_clear_errors(entry, fragment):
    with pytest.raises(McpConfigError) as error:
        parse_server("srv", entry, environ={})
    assert "'srv'" in str(error.value) and fragment in str(error.value)


@pytest.mark.parametrize("name", ["", "a:b", "has space", "x" * 65, "-dash"])
def test_bad_server_names(name):
    with pytest.raises(McpConfigError, match="server name"):
        parse_server(name, {"command": "x"}, environ={})


@pytest.mark.parametrize("text", ["{not json", "[]", '{"mcpServers": []}'])
def test_bad_files(tmp_path, text):
    write(tmp_path, text)
    with pytest.raises(McpConfigError, match=".mcp.json"):
        load_mcp_config(tmp_path, environ={})


def test_plain_names_when_faithful():
    names = assign_wire_names([("github", "create_issue"), ("fs", "read-file")])
    assert names == {("github", "create_issue"): "github__create_issue", ("fs", "read-file"): "fs__read-file"}


def test_ambiguous_split_gets_distinct_hashed_names():
    names = assign_wire_names([("a__b", "c"), ("a", "b__c"), ("a", "b.c"), ("a", "b_c"), ("a_", "_b_c")])
    assert len(set(names.values())) == 5
    assert all(WIRE.match(n) for n in names.values())
    assert names[("a", "b_c")] == "a__b_c"  # the faithful one keeps its plain name


def test_long_and_unsafe_names_are_shortened_with_hash():
    long_tool = "t" * 100
    names = assign_wire_names([("srv", long_tool), ("srv", long_tool + "x"), ("s.v", "tool with spaces")])
    assert len(set(names.values())) == 3
    assert all(WIRE.match(n) for n in names.values())
    assert names[("s.v", "tool with spaces")].startswith("s_v__tool_with_spaces_")


def test_reserved_names_are_never_taken():
    names = assign_wire_names([("read", "file")], reserved={"read__file"})
    assert names[("read", "file")] != "read__file" and is_wire_name(names[("read", "file")])


def test_names_are_deterministic():
    pairs = [("b", "x"), ("a", "y"), ("a", "y.z")]
    assert assign_wire_names(pairs) == assign_wire_names(list(reversed(pairs)))


_names = st.text(alphabet=st.sampled_from("ab_-.:é Z9"), min_size=1, max_size=70)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_names, _names), min_size=1, max_size=12), st.sets(_names.filter(is_wire_name), max_size=4))
def test_property_always_valid_and_distinct(pairs, reserved):
    names = assign_wire_names(pairs, reserved=reserved)
    values = list(names.values())
    assert len(values) == len(set(values)) == len(set(pairs))
    assert all(WIRE.match(value) for value in values)
    assert not set(values) & reserved
