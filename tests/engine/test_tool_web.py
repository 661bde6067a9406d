"""fetch_url and web_search against a local HTTP server on 127.0.0.1 (no network)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from codingcode_jupyter.engine.tools.base import SearchHit
from codingcode_jupyter.engine.tools.web import fetch_url_tool, html_to_markdown, web_search_tool
from tests.engine.helpers import make_deps

fetch_url, web_search = fetch_url_tool(), web_search_tool()

PAGE = """<!doctype html><html><head><title>Fixture Page</title>
<style>body { color: red }</style><script>var tracking = "SCRIPT_TEXT";</script></head>
<body><h1>Heading One</h1><p>Some <b>bold</b> text and a <a href="/x">link</a>.</p>
<ul><li>first</li><li>second</li></ul><noscript>NOSCRIPT_TEXT</noscript>
<script>alert("INLINE_SCRIPT")</script></body></html>"""


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep test output quiet
        pass

    def _send(self, status: int, body: bytes, content_type: str | None, extra: dict | None = None):
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlparse(self.path)
        query = parse_qs(url.query)
        if url.path == "/page":
            self._send(200, PAGE.encode(), "text/html; charset=utf-8")
        elif url.path == "/data":
            self._send(200, b'{"b":1,"a":[1,2]}', "application/json")
        elif url.path == "/plain":
            self._send(200, "plain text ünïcode\n".encode(), "text/plain; charset=utf-8")
        elif url.path == "/image":
            self._send(200, b"\x89PNG\r\n\x1a\n" + bytes(100), "image/png")
        elif url.path == "/untyped-binary":
            self._send(200, b"\x00\x01\x02\x03", None)
        elif url.path == "/missing":
            self._send(404, b"nope", "text/plain")
        elif url.path == "/boom":
            self._send(500, b"err", "text/plain")
        elif url.path.startswith("/hop/"):
            n = int(url.path.rsplit("/", 1)[1])
            target = "/plain" if n == 0 else f"/hop/{n - 1}"
            self._send(302, b"", "text/plain", {"Location": target})
        elif url.path == "/long":
            self._send(200, b"x" * 5000, "text/plain")
        elif url.path == "/search":
            q = query.get("q", [""])[0]
            assert query.get("format") == ["json"]
            results = [
                {"title": f"Result {i} for {q}", "url": f"https://example.test/{i}", "content": f"snippet {i}"}
                for i in range(30)
            ]
            self._send(200, json.dumps({"results": results}).encode(), "application/json")
        elif url.path == "/brave":
            token = self.headers.get("X-Subscription-Token")
            results = [{"title": f"B{i}", "url": f"https://b.test/{i}", "description": f"tok={token}"} for i in range(5)]
            self._send(200, json.dumps({"web": {"results": results}}).encode(), "application/json")
        else:
            self._send(404, b"", "text/plain")


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


async def test_html_becomes_markdown_without_scripts_or_styles(server, ctx):
    result = await fetch_url.run({"url": f"{server}/page"}, ctx)
    text = result.text_content
    assert not result.is_error, text
    assert "# Heading One" in text and "**bold**" in text and "[link](/x)" in text
    assert "- first" in text
    assert "Title: Fixture Page" in text
    for leaked in ("SCRIPT_TEXT", "INLINE_SCRIPT", "color: red", "NOSCRIPT_TEXT", "<p>"):
        assert leaked not in text


async def test_json_pretty_and_text_as_is(server, ctx):
    data = await fetch_url.run({"url": f"{server}/data"}, ctx)
    assert '"a": [\n    1,' in data.text_content
    plain = await fetch_url.run({"url": f"{server}/plain"}, ctx)
    assert "plain text ünïcode" in plain.text_content


async def test_binary_refused_with_content_type(server, ctx):
    image = await fetch_url.run({"url": f"{server}/image"}, ctx)
    assert image.is_error and "image/png" in image.text_content and "binary" in image.text_content
    untyped = await fetch_url.run({"url": f"{server}/untyped-binary"}, ctx)
    assert untyped.is_error and "binary" in untyped.text_content


async def test_http_errors_are_errors_with_status(server, ctx):
    missing = await fetch_url.run({"url": f"{server}/missing"}, ctx)
    assert missing.is_error and "HTTP 404" in missing.text_content
    boom = await fetch_url.run({"url": f"{server}/boom"}, ctx)
    assert boom.is_error and "HTTP 500" in boom.text_content


async def test_redirects_followed_but_bounded(server, ctx):
    ok = await fetch_url.run({"url": f"{server}/hop/3"}, ctx)
    assert not ok.is_error and "plain text" in ok.text_content and "redirected from" in ok.text_content
    too_many = await fetch_url.run({"url": f"{server}/hop/8"}, ctx)
    assert too_many.is_error and "redirects" in too_many.text_content.lower()


async def test_max_length_cuts_and_clamps(server, ctx):
    short = await fetch_url.run({"url": f"{server}/long", "max_length": 100}, ctx)
    body = short.text_content.split("\n\n", 1)[1]
    assert body == "x" * 100 and "cut at 100 of 5000" in short.text_content
    clamped = await fetch_url.run({"url": f"{server}/long", "max_length": 10**7}, ctx)
    assert "clamped to 500000" in clamped.text_content


async def test_bad_urls_are_clear_errors(ctx):
    for url, words in [("ftp://host/x", "http"), ("file:///etc/passwd", "http"), ("not a url", "URL")]:
        result = await fetch_url.run({"url": url}, ctx)
        assert result.is_error and words in result.text_content, (url, result.text_content)
    refused = await fetch_url.run({"url": "http://127.0.0.1:9/"}, ctx)  # discard port: nothing listens
    assert refused.is_error and "Could not fetch" in refused.text_content


async def test_fetch_preview_is_the_url(ctx):
    assert "http://a.test/x" in await fetch_url.preview(fetch_url.validate({"url": "http://a.test/x"}), ctx)


def test_html_to_markdown_title_and_body():
    title, body = html_to_markdown("<title>T</title><h2>Sub</h2><style>x{}</style>")
    assert title == "T" and body == "## Sub"


# ---------------------------------------------------------------- web_search


async def test_web_search_not_configured_is_clear(ctx):
    result = await web_search.run({"query": "python"}, ctx)
    assert result.is_error and result.text_content.startswith("web search is not configured:")
    ctx = ctx.with_turn(deps=make_deps(ctx.project_path, settings={}))
    again = await web_search.run({"query": "python"}, ctx)
    assert again.text_content.startswith("web search is not configured:")


async def test_web_search_anthropic_backend_points_to_server_tool(ctx):
    ctx = ctx.with_turn(deps=make_deps(ctx.project_path, settings={"webSearch": {"backend": "anthropic"}}))
    result = await web_search.run({"query": "python"}, ctx)
    assert result.is_error and "server-side" in result.text_content


async def test_web_search_searxng_backend_and_clamp(server, ctx):
    ctx = ctx.with_turn(deps=make_deps(ctx.project_path, settings={"webSearch": {"backend": "searxng", "url": f"{server}/search"}}))
    result = await web_search.run({"query": "rust regex"}, ctx)
    text = result.text_content
    assert not result.is_error, text
    assert text.startswith("8 results for 'rust regex'")
    assert "1. Result 0 for rust regex\n   https://example.test/0\n   snippet 0" in text
    assert "9. " not in text
    many = await web_search.run({"query": "q", "max_results": 50}, ctx)
    assert "clamped to 20" in many.text_content and "20. Result 19" in many.text_content


async def test_web_search_brave_backend_uses_key_from_env(server, ctx, monkeypatch):
    ctx = ctx.with_turn(deps=make_deps(ctx.project_path, settings={"webSearch": {"backend": "brave", "url": f"{server}/brave", "apiKeyEnv": "TEST_BRAVE_KEY"}}))
    monkeypatch.delenv("TEST_BRAVE_KEY", raising=False)
    missing = await web_search.run({"query": "q"}, ctx)
    assert missing.is_error and "TEST_BRAVE_KEY" in missing.text_content
    monkeypatch.setenv("TEST_BRAVE_KEY", "k123")
    result = await web_search.run({"query": "q", "max_results": 3}, ctx)
    assert "3. B2" in result.text_content and "tok=k123" in result.text_content and "4. " not in result.text_content


async def test_web_search_backend_errors_and_service_override(server, ctx):
    ctx = ctx.with_turn(deps=make_deps(ctx.project_path, settings={"webSearch": {"backend": "http", "url": f"{server}/missing"}}))
    failing = await web_search.run({"query": "q"}, ctx)
    assert failing.is_error and "HTTP 404" in failing.text_content

    async def fake(query, limit, config, _ctx):
        return [SearchHit(f"hit {query}", "https://f.test", "")] * limit

    ctx.deps.web_search_backend = fake
    result = await web_search.run({"query": "z", "max_results": 2}, ctx)
    assert result.text_content.startswith("2 results") and "hit z" in result.text_content
    empty = await web_search.run({"query": ""}, ctx)
    assert empty.is_error and "query" in empty.text_content
