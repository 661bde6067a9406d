"""The built-in tool set: names, order, parameter names, read-only flags, previews, schemas."""

from __future__ import annotations

import json

from codingcode_jupyter.engine.tools.builtin import BUILTIN_TOOL_NAMES, builtin_tools

EXPECTED_PARAMETERS = {
    "read_file": {"path", "offset", "limit"},
    "write_file": {"path", "content"},
    "edit_file": {"path", "old_string", "new_string", "replace_all"},
    "search_code": {"pattern", "glob", "max_results"},
    "search_files": {"pattern", "path", "max_results"},
    "execute_command": {"command", "cwd", "timeout_ms", "description"},
    "fetch_url": {"url", "max_length"},
    "web_search": {"query", "max_results"},
    "todo_write": {"plan"},
}
READ_ONLY = {"read_file", "search_code", "search_files", "fetch_url", "web_search", "todo_write"}


def test_names_order_and_parameters():
    tools = builtin_tools()
    assert [t.name for t in tools] == list(BUILTIN_TOOL_NAMES) == list(EXPECTED_PARAMETERS)
    for tool in tools:
        assert set(tool.input_schema["properties"]) == EXPECTED_PARAMETERS[tool.name], tool.name
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"


def test_read_only_flags_and_previews():
    tools = {t.name: t for t in builtin_tools()}
    assert {name for name, t in tools.items() if t.read_only} == READ_ONLY
    for name in ("write_file", "edit_file", "execute_command", "fetch_url"):
        assert tools[name].preview is not None, name


def test_defaults_in_schema_and_schemas_stable():
    tools = {t.name: t for t in builtin_tools()}
    props = lambda name: tools[name].input_schema["properties"]  # noqa: E731
    assert props("read_file")["offset"]["default"] == 1 and props("read_file")["limit"]["default"] == 200
    assert props("search_code")["glob"]["default"] == "**/*" and props("search_code")["max_results"]["default"] == 30
    assert props("search_files")["path"]["default"] == "." and props("search_files")["max_results"]["default"] == 50
    assert props("execute_command")["timeout_ms"]["default"] == 30000
    assert props("fetch_url")["max_length"]["default"] == 100000
    assert props("web_search")["max_results"]["default"] == 8
    assert props("edit_file")["replace_all"]["default"] is False
    first = json.dumps([t.to_api() for t in builtin_tools()])
    assert first == json.dumps([t.to_api() for t in builtin_tools()])
