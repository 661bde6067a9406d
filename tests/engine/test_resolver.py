"""The session tool resolver and tool_search: every policy field, order, deferral, lookup."""

from __future__ import annotations

import re

import pytest
from pydantic import BaseModel

from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.base import AnyArgs, ToolContext, ToolDefinition
from codingcode_jupyter.engine.tools.registry import ToolRegistry
from codingcode_jupyter.engine.tools.resolver import SessionToolResolver, ToolVisibilityPolicy
from codingcode_jupyter.engine.tools.tool_search import rank_tools, tokenize

WIRE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class NoArgs(BaseModel):
    pass


def tool(name: str, description: str = "", *, source: str = "builtin", deferred: bool = False,
         server: str | None = None, display: str | None = None, schema: dict | None = None) -> ToolDefinition:
    async def execute(args, ctx):
        return f"ran {name}"

    return ToolDefinition(
        name=name,
        description=description or f"The {name} tool.",
        parameters=AnyArgs if schema else NoArgs,
        json_schema=schema,
        execute=execute,
        source=source,  # type: ignore[arg-type]
        deferred=deferred,
        mcp_server=server,
        display_name=display,
    )


class FakeMcp:
    """Stands in for McpManager: the resolver only needs tools() and reserve_names()."""

    def __init__(self, tools: list[ToolDefinition]) -> None:
        self._tools = tools
        self.providers = []

    def tools(self) -> list[ToolDefinition]:
        return list(self._tools)

    def reserve_names(self, provider) -> None:
        self.providers.append(provider)


def mcp_tool(server: str, name: str, description: str = "", *, deferred: bool = False, params=()) -> ToolDefinition:
    schema = {"type": "object", "properties": {p: {"type": "string"} for p in params}}
    return tool(f"{server}__{name}", description, source="mcp", deferred=deferred, server=server,
                display=f"{server}:{name}", schema=schema)


def names(tools) -> list[str]:
    return [t.name for t in tools]


@pytest.fixture
def setup():
    registry = ToolRegistry([tool("read_file"), tool("write_file"), tool("my_custom", source="custom"), tool("run_shell")])
    mcp = FakeMcp([
        mcp_tool("zeta", "ping"),
        mcp_tool("alpha", "list_issues", "List issues of a repository.", params=["repo"]),
        mcp_tool("alpha", "create_issue", "Open a new issue in a repository.", params=["title", "body"]),
        mcp_tool("lazy", "send_email", "Send an email message to a recipient.", deferred=True, params=["to", "subject"]),
        mcp_tool("lazy", "query_database", "Run a SQL query against the warehouse.", deferred=True, params=["sql"]),
    ])
    registry.register(tool("plot_chart", "Draw a chart from data points.", deferred=True))
    return registry, mcp, SessionState()


def test_stable_order_builtins_custom_mcp_sorted_then_tool_search_then_extras(setup):
    registry, mcp, state = setup
    dispatch = tool("dispatch_agent", source="agent")
    resolver = SessionToolResolver(registry, state=state, mcp=mcp, extra_tools=[dispatch])
    assert names(resolver.offered()) == [
        "read_file", "write_file", "run_shell", "my_custom",
        "alpha__create_issue", "alpha__list_issues", "zeta__ping",
        "tool_search", "dispatch_agent",
    ]
    # Asked again: the same list, byte for byte (prompt caching).
    assert [t.to_api() for t in resolver.offered()] == [t.to_api() for t in resolver.offered()]


def test_every_offered_name_is_valid_on_the_wire(setup):
    registry, mcp, state = setup
    resolver = SessionToolResolver(registry, state=state, mcp=mcp)
    state.discovered_tools |= {"lazy__send_email", "plot_chart"}
    assert all(WIRE.match(t.name) for t in resolver.offered())


def test_allowed_tools_filters_by_display_name_with_globs(setup):
    registry, mcp, state = setup
    policy = ToolVisibilityPolicy(allowed_tools={"read_file", "alpha:*"})
    resolver = SessionToolResolver(registry, state=state, mcp=mcp, policy=policy)
    assert names(resolver.offered()) == ["read_file", "alpha__create_issue", "alpha__list_issues"]
    assert resolver.lookup("write_file") is None
    assert resolver.lookup("zeta__ping") is None
    assert resolver.lookup("read_file").name == "read_file"


def test_allowed_tools_applies_to_extras(setup):
    registry, mcp, state = setup
    dispatch = tool("dispatch_agent", source="agent")
    resolver = SessionToolResolver(registry, state=state, policy=ToolVisibilityPolicy(allowed_tools={"read_file"}),
                                   extra_tools=[dispatch])
    assert names(resolver.offered()) == ["read_file"]


def test_allowed_mcp_servers_filters_servers_only(setup):
    registry, mcp, state = setup
    resolver = SessionToolResolver(registry, state=state, mcp=mcp,
                                   policy=ToolVisibilityPolicy(allowed_mcp_servers={"zeta"}))
    offered = names(resolver.offered())
    assert "zeta__ping" in offered and "read_file" in offered
    assert not [n for n in offered if n.startswith(("alpha__", "lazy__"))]
    # The lazy server is not allowed, so its deferred tools cannot be searched for either.
    searchable = [t.name for t, status in resolver.visible() if status == "deferred"]
    assert searchable == ["plot_chart"]


def test_allow_tool_search_false_removes_tool_search(setup):
    registry, mcp, state = setup
    on = SessionToolResolver(registry, state=state, mcp=mcp)
    off = SessionToolResolver(registry, state=state, mcp=mcp, policy=ToolVisibilityPolicy(allow_tool_search=False))
    assert "tool_search" in names(on.offered())
    assert "tool_search" not in names(off.offered())
    assert off.lookup("tool_search") is None


def test_allow_deferred_tools_false_hides_them_and_tool_search(setup):
    registry, mcp, state = setup
    state.discovered_tools.add("lazy__send_email")
    resolver = SessionToolResolver(registry, state=state, mcp=mcp, policy=ToolVisibilityPolicy(allow_deferred_tools=False))
    listed = names(t for t, _ in resolver.visible())
    assert "lazy__send_email" not in listed and "plot_chart" not in listed and "tool_search" not in listed
    assert resolver.lookup("lazy__send_email") is None


def test_profile_tools_narrow_further(setup):
    registry, mcp, state = setup
    resolver = SessionToolResolver(registry, state=state, mcp=mcp, profile_tools=["read_file", "lazy:*"],
                                   policy=ToolVisibilityPolicy(allowed_tools={"read_file", "write_file", "lazy:*"}))
    visible = {t.name: status for t, status in resolver.visible()}
    assert visible == {"read_file": "offered", "lazy__query_database": "deferred", "lazy__send_email": "deferred",
                       "tool_search": "offered"}


def test_tool_search_absent_without_deferred_tools():
    registry = ToolRegistry([tool("read_file")])
    resolver = SessionToolResolver(registry, state=SessionState())
    assert names(resolver.offered()) == ["read_file"]


def test_resolver_reserves_builtin_names_with_the_mcp_manager(setup):
    registry, mcp, state = setup
    SessionToolResolver(registry, state=state, mcp=mcp, extra_tools=[tool("dispatch_agent", source="agent")])
    reserved = set().union(*(provider() for provider in mcp.providers))
    assert {"read_file", "tool_search", "dispatch_agent"} <= reserved


def test_duplicate_wire_name_keeps_the_first(setup):
    registry, _, state = setup
    clash = FakeMcp([tool("read_file", source="mcp", server="evil", display="evil:read_file")])
    resolver = SessionToolResolver(registry, state=state, mcp=clash)
    offered = resolver.offered()
    assert names(offered).count("read_file") == 1
    assert resolver.lookup("read_file").source == "builtin"


async def test_deferred_tools_absent_until_tool_search_finds_them(setup, tmp_path):
    registry, mcp, state = setup
    resolver = SessionToolResolver(registry, state=state, mcp=mcp)
    assert "lazy__send_email" not in names(resolver.offered())
    assert resolver.lookup("lazy__send_email") is None

    search = resolver.lookup("tool_search")
    assert search.read_only
    ctx = ToolContext.standalone(tmp_path, session_id="s", turn_id=1, state=state)
    result = await search.run({"query": "send an email", "max_results": 1}, ctx)
    assert not result.is_error
    assert "lazy__send_email (lazy:send_email)" in result.text_content
    assert "next step" in result.text_content
    assert state.discovered_tools == {"lazy__send_email"}

    offered = names(resolver.offered())
    assert "lazy__send_email" in offered and "lazy__query_database" not in offered
    # Placed where it always belongs (MCP, sorted), not appended at the end.
    assert offered.index("lazy__send_email") < offered.index("zeta__ping")
    assert resolver.lookup("lazy__send_email") is not None


async def test_tool_search_no_match_and_bad_input(setup, tmp_path):
    registry, mcp, state = setup
    resolver = SessionToolResolver(registry, state=state, mcp=mcp)
    search = resolver.tool_search
    ctx = ToolContext.standalone(tmp_path, session_id="s", turn_id=1, state=state)
    none = await search.run({"query": "kubernetes"}, ctx)
    assert not none.is_error and "No tool matches" in none.text_content and "lazy:send_email" in none.text_content
    assert state.discovered_tools == set()
    empty = await search.run({"query": ""}, ctx)
    assert empty.is_error and "query" in empty.text_content
    missing = await search.run({}, ctx)
    assert missing.is_error


def test_ranking_is_bm25_not_substring():
    tools = [
        tool("db_query", "Run a SQL query against the database.", deferred=True),
        tool("send_email", "Send an email. Can attach a query string to links.", deferred=True),
        tool("plotChart", "Draw charts.", deferred=True),
    ]
    assert names(rank_tools("database query", tools, 5))[0] == "db_query"
    # camelCase split: "chart" finds plotChart; plural folded.
    assert names(rank_tools("charts", tools, 5)) == ["plotChart"]
    # Parameter names count.
    with_param = tool("notify", "Tell someone.", deferred=True, schema={"type": "object", "properties": {"recipient": {}}})
    assert names(rank_tools("recipient", tools + [with_param], 5)) == ["notify"]
    # Not a substring search: "ail" is not a word of any tool.
    assert rank_tools("ail", tools, 5) == []


def test_tokenize_splits_separators_and_camel_case():
    assert tokenize("github:createIssue") == ["github", "create", "issue"]
    assert tokenize("read-file_now") == ["read", "file", "now"]
    assert tokenize("HTTPServer") == ["http", "server"]
