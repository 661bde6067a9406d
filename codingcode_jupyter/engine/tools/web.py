"""fetch_url and web_search.

fetch_url is an HTTP GET with bounded redirects, a timeout and a byte cap; HTML becomes
Markdown (markdownify, after scripts and styles are dropped), JSON is pretty-printed, text
is returned as is, binary is refused. web_search asks a configured search backend; the
backend is pluggable (``register_search_backend`` or a ``web_search_backend`` service).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import ssl
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from pydantic import BaseModel, Field

from ..messages import ToolUnionParam, WebSearchTool20250305Param
from ..redaction import named
from .access import BUILTIN_ACCESS
from .base import SearchBackend, SearchHit, ToolContext, ToolDefinition, ToolError, ToolResult

# httpx and the HTML parsers (bs4, markdownify) are imported by the first fetch or search:
# together they are most of this module's import time, and most sessions never go online.
if TYPE_CHECKING:
    import httpx

    from ..settings import Settings

__all__ = [
    "FetchUrlArgs",
    "WebSearchArgs",
    "register_search_backend",
    "html_to_markdown",
    "fetch_url_tool",
    "web_search_tool",
    "ANTHROPIC_WEB_SEARCH",
    "server_side_tools",
]

FETCH_DEFAULT, FETCH_MAX = 100_000, 500_000
MAX_REDIRECTS = 5
# HTML shrinks a lot on conversion, so the byte cap is well above the character cap.
MAX_BODY_BYTES = 10 * 1024 * 1024
# Seconds per read and to connect (each client gets an httpx.Timeout of these).
TIMEOUT_S, CONNECT_TIMEOUT_S = 30.0, 10.0
# A server that drips bytes slowly never trips the per-read timeout; this bounds the whole call.
OVERALL_TIMEOUT_S = 90.0
USER_AGENT = "codingcode-jupyter/0.1 (+fetch_url)"
SEARCH_DEFAULT, SEARCH_MAX = 8, 20
DROP_TAGS = ["title", "script", "style", "noscript", "template", "svg", "iframe", "object", "embed", "head"]
TEXT_TYPES = {
    "application/json", "application/xml", "application/javascript", "application/ecmascript",
    "application/x-yaml", "application/yaml", "application/toml", "application/x-sh",
    "application/sql", "application/graphql", "application/x-ndjson", "application/ld+json",
}


@functools.lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    # Building a default SSL context costs ~20 ms of CPU; one per client would serialise
    # parallel fetches on it (benchmarks/bench_parallel.py measured 1.9x instead of ~1x).
    return ssl.create_default_context()


class _RedirectRefused(Exception):
    """A request the hook refuses: a redirect to a host the approval pipeline did not allow, or one that
    would carry a known secret's value."""


def _redirect_judge(ctx: ToolContext, first: httpx.URL) -> Callable[[httpx.Request], Awaitable[None]]:
    """A request hook: each redirect to a host not yet approved is judged again, as a fetch of its own,
    and no request that carries a known secret's value is sent."""
    import httpx

    approved = {first.host}
    hops = 0

    async def judge(request: httpx.Request) -> None:
        nonlocal hops
        # The approval judged the first URL; this is the last look at every request as it is sent.
        try:
            body = request.content.decode("latin-1")
        except httpx.RequestNotRead:
            body = ""  # a streamed body (fetch_url sends none)
        found = ctx.deps.secrets.leaving([str(request.url), *request.headers.values(), body])
        if found:
            raise _RedirectRefused(f"Refused: the request to {request.url.host} would send the value of {named(found)}, "
                                   "a known secret, off the machine")
        host = request.url.host
        if host in approved:
            return
        run = ctx.run
        if run is None:
            raise _RedirectRefused(f"{first} redirects to another host ({host}) and nobody can approve that here")
        from ..tools.base import ToolCall

        hops += 1
        call = ToolCall(tool_use_id=f"{ctx.tool_use_id}:redirect-{hops}", tool=fetch_url_tool(),
                        input={"url": str(request.url)})
        decision = await run.approver.decide(call, ctx, run.ask)
        if decision.kind != "allow":
            raise _RedirectRefused(f"{first} redirects to {request.url}, which was not allowed: {decision.reason}")
        approved.add(host)

    return judge


def _client(ctx: ToolContext, **kwargs: Any) -> httpx.AsyncClient:
    # Tests and embedders may hand in a transport (e.g. httpx.MockTransport) with the session's deps.
    import httpx

    transport = ctx.deps.http_transport
    return httpx.AsyncClient(
        verify=_tls(),
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        timeout=httpx.Timeout(TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
        headers={"User-Agent": USER_AGENT},
        transport=transport,
        **kwargs,
    )


def html_to_markdown(html: str) -> tuple[str, str]:
    """(title, Markdown body) of an HTML page, without scripts, styles and other non-content."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(strip=True) if soup.title else ""
    for tag in soup.find_all(DROP_TAGS):
        tag.decompose()
    markdown = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    markdown = re.sub(r"[ \t]+\n", "\n", markdown)
    markdown = re.sub(r"\n{3,}", "\n\n", markdown).strip()
    return title, markdown


class FetchUrlArgs(BaseModel):
    """Parameters of fetch_url."""

    url: str = Field(min_length=1, description="The http:// or https:// URL to GET.")
    max_length: int = Field(
        default=FETCH_DEFAULT, ge=1,
        description=f"Most characters of content to return (default {FETCH_DEFAULT}, max {FETCH_MAX}).",
    )


def _check_url(raw: str) -> httpx.URL:
    import httpx

    try:
        url = httpx.URL(raw.strip())
    except (httpx.InvalidURL, ValueError) as error:
        raise ToolError(f"Invalid URL {raw!r}: {error}") from None
    if url.scheme not in ("http", "https"):
        raise ToolError(f"Only http and https URLs can be fetched, not {url.scheme or 'a URL without scheme'!r}: {raw}")
    if not url.host:
        raise ToolError(f"Invalid URL {raw!r}: no host")
    return url


def _kind(content_type: str) -> str:
    media = content_type.split(";", 1)[0].strip().lower()
    if media in ("text/html", "application/xhtml+xml"):
        return "html"
    if media == "application/json" or media.endswith("+json"):
        return "json"
    if media.startswith("text/") or media in TEXT_TYPES or media.endswith("+xml"):
        return "text"
    if not media:
        return "unknown"
    return "binary"


async def _fetch_url(args: FetchUrlArgs, ctx: ToolContext) -> ToolResult:
    import httpx

    url = _check_url(args.url)
    notes: list[str] = []
    max_length = args.max_length
    if max_length > FETCH_MAX:
        notes.append(f"(max_length {max_length} is above the maximum; clamped to {FETCH_MAX})")
        max_length = FETCH_MAX
    hooks = {"request": [_redirect_judge(ctx, url)]}
    try:
        async with asyncio.timeout(OVERALL_TIMEOUT_S), _client(ctx, event_hooks=hooks) as client:
            async with client.stream("GET", url) as response:
                content_type = response.headers.get("content-type", "")
                if response.status_code >= 400:
                    raise ToolError(f"HTTP {response.status_code} {response.reason_phrase} for {response.url}")
                kind = _kind(content_type)
                if kind == "binary":
                    length = response.headers.get("content-length")
                    size = f", {length} bytes" if length else ""
                    raise ToolError(f"{response.url} is binary content ({content_type}{size}); fetch_url returns text only.")
                body = bytearray()
                cut = False
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_BODY_BYTES:
                        del body[MAX_BODY_BYTES:]
                        cut = True
                        break
                final_url, status = response.url, response.status_code
                encoding = response.charset_encoding or "utf-8"
    except _RedirectRefused as refused:
        raise ToolError(str(refused)) from None
    except httpx.TooManyRedirects:
        raise ToolError(f"Too many redirects (more than {MAX_REDIRECTS}) fetching {url}") from None
    except (httpx.TimeoutException, TimeoutError):
        raise ToolError(f"Timed out fetching {url}") from None
    except httpx.HTTPError as error:
        raise ToolError(f"Could not fetch {url}: {type(error).__name__}: {error}") from None
    if kind == "unknown":
        if b"\x00" in body[:8192]:
            raise ToolError(f"{final_url} is binary content (no content type); fetch_url returns text only.")
        kind = "text"
    try:
        text = bytes(body).decode(encoding, errors="replace")
    except LookupError:
        text = bytes(body).decode("utf-8", errors="replace")
    title = ""
    if kind == "html":
        title, text = html_to_markdown(text)
    elif kind == "json" and not cut:
        try:
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    if cut:
        notes.append(f"(body cut at {MAX_BODY_BYTES} bytes)")
    if len(text) > max_length:
        notes.append(f"(content cut at {max_length} of {len(text)} characters; raise max_length for more)")
        text = text[:max_length]
    header = [f"{final_url} — HTTP {status}, {content_type or 'no content type'}"]
    if str(final_url) != str(url):
        header.append(f"(redirected from {url})")
    if title:
        header.append(f"Title: {title}")
    return ToolResult.text("\n".join(header + notes) + "\n\n" + text)


async def _fetch_preview(args: FetchUrlArgs, ctx: ToolContext) -> str:
    """The request, with what it carries off the machine (the query and fragment) set apart."""
    import httpx

    try:
        url = httpx.URL(args.url.strip())
    except (httpx.InvalidURL, ValueError):
        return f"GET {args.url}"
    lines = [f"GET {args.url}", f"host: {url.host or '?'}", f"path: {url.path or '/'}"]
    if url.query:
        lines.append(f"query (sent to {url.host}): {url.query.decode(errors='replace')}")
    if url.fragment:
        lines.append(f"fragment: {url.fragment}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- web_search


_BACKENDS: dict[str, SearchBackend] = {}


def register_search_backend(name: str, backend: SearchBackend) -> None:
    """Make ``backend`` answer web_search when settings say ``"webSearch": {"backend": name}``."""
    _BACKENDS[name] = backend


class WebSearchArgs(BaseModel):
    """Parameters of web_search."""

    query: str = Field(min_length=1, description="What to search the web for.")
    max_results: int = Field(default=SEARCH_DEFAULT, ge=1, description=f"How many results (default {SEARCH_DEFAULT}, max {SEARCH_MAX}).")


async def _get_json(ctx: ToolContext, url: str, params: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    import httpx

    try:
        async with _client(ctx) as client:
            response = await client.get(url, params=params, headers=headers)
    except httpx.HTTPError as error:
        raise ToolError(f"web search backend unreachable ({url}): {type(error).__name__}: {error}") from None
    if response.status_code >= 400:
        raise ToolError(f"web search backend answered HTTP {response.status_code} {response.reason_phrase} ({url})")
    try:
        return response.json()
    except ValueError:
        raise ToolError(f"web search backend at {url} did not return JSON") from None


async def _searxng(query: str, limit: int, config: Any, ctx: ToolContext) -> list[SearchHit]:
    if not config.url:
        raise ToolError('web search is not configured: webSearch.backend needs a "url" for this backend.')
    data = await _get_json(ctx, config.url, {"q": query, "format": "json"})
    results = data.get("results", []) if isinstance(data, dict) else data
    hits = []
    for item in results if isinstance(results, list) else []:
        if isinstance(item, dict) and item.get("url"):
            snippet = item.get("content") or item.get("snippet") or item.get("description") or ""
            hits.append(SearchHit(str(item.get("title") or item["url"]), str(item["url"]), str(snippet)))
    return hits[:limit]


async def _brave(query: str, limit: int, config: Any, ctx: ToolContext) -> list[SearchHit]:
    env_name = config.apiKeyEnv or "BRAVE_API_KEY"
    key = os.environ.get(env_name)
    if not key:
        raise ToolError(f"web search is not configured: the Brave backend needs an API key in ${env_name}.")
    url = config.url or "https://api.search.brave.com/res/v1/web/search"
    data = await _get_json(ctx, url, {"q": query, "count": limit}, {"X-Subscription-Token": key, "Accept": "application/json"})
    results = ((data or {}).get("web") or {}).get("results") or []
    return [
        SearchHit(str(r.get("title") or r["url"]), str(r["url"]), str(r.get("description") or ""))
        for r in results if isinstance(r, dict) and r.get("url")
    ][:limit]


register_search_backend("searxng", _searxng)
register_search_backend("http", _searxng)
register_search_backend("brave", _brave)

NOT_CONFIGURED = (
    "web search is not configured: set webSearch in .codingcode/settings.json, e.g. "
    '{"webSearch": {"backend": "anthropic"}} to use the Anthropic model\'s server-side search, '
    '{"backend": "searxng", "url": "https://your-searxng/search"}, or '
    '{"backend": "brave", "apiKeyEnv": "BRAVE_API_KEY"}.'
)


# The Messages API's server-side web search: the API runs the searches itself and
# returns server_tool_use / web_search_tool_result blocks; nothing runs on our side.
ANTHROPIC_WEB_SEARCH: WebSearchTool20250305Param = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}


def server_side_tools(settings: "Settings | None", model: str) -> dict[str, ToolUnionParam]:
    """Client tools the request should replace with a server-side tool, by name.

    With ``webSearch.backend == "anthropic"`` and a Claude model, ``web_search`` is sent as the
    API's own web search tool. The offline demo model has no server side.
    """
    if settings is not None and settings.webSearch.backend == "anthropic" and model != "demo":
        return {"web_search": ANTHROPIC_WEB_SEARCH}
    return {}


async def _web_search(args: WebSearchArgs, ctx: ToolContext) -> ToolResult:
    notes = []
    limit = args.max_results
    if limit > SEARCH_MAX:
        notes.append(f"(max_results {limit} is above the maximum; clamped to {SEARCH_MAX})")
        limit = SEARCH_MAX
    override = ctx.deps.web_search_backend
    config = ctx.deps.settings.current().merged.webSearch
    if override is not None:
        hits = await override(args.query, limit, config, ctx)
    else:
        name = config.backend if config is not None else None
        if name is None:
            return ToolResult.text(NOT_CONFIGURED, is_error=True)
        if name == "anthropic":
            return ToolResult.text(
                "web search runs on the model's side here (Anthropic's server-side web search tool); "
                "this client tool has no backend. Search with the server tool instead.",
                is_error=True,
            )
        backend = _BACKENDS.get(name)
        if backend is None:
            return ToolResult.text(f"web search is not configured: unknown backend {name!r}.", is_error=True)
        hits = await backend(args.query, limit, config, ctx)
    hits = hits[:limit]
    if not hits:
        return ToolResult.text("\n".join([f"No results for {args.query!r}.", *notes]))
    lines = [f"{len(hits)} result{'s' if len(hits) != 1 else ''} for {args.query!r}", *notes]
    for number, hit in enumerate(hits, start=1):
        lines.append(f"{number}. {hit.title}\n   {hit.url}")
        if hit.snippet:
            lines.append("   " + " ".join(hit.snippet.split())[:400])
    return ToolResult.text("\n".join(lines))


def fetch_url_tool() -> ToolDefinition:
    """The fetch_url tool."""
    return ToolDefinition(
        name="fetch_url",
        description=(
            "HTTP GET an http(s) URL. HTML is returned as Markdown, JSON pretty-printed, text as is; "
            f"binary content is refused. At most {MAX_REDIRECTS} redirects. max_length default "
            f"{FETCH_DEFAULT} characters, max {FETCH_MAX}."
        ),
        parameters=FetchUrlArgs,
        execute=_fetch_url,
        preview=_fetch_preview,
        access=BUILTIN_ACCESS["fetch_url"],
    )


def web_search_tool() -> ToolDefinition:
    """The web_search tool."""
    return ToolDefinition(
        name="web_search",
        description=(
            "Search the web; returns titles, URLs and snippets. "
            f"max_results default {SEARCH_DEFAULT}, max {SEARCH_MAX}. Use fetch_url to read a result."
        ),
        parameters=WebSearchArgs,
        execute=_web_search,
        access=BUILTIN_ACCESS["web_search"],
    )
