"""Amazon Bedrock, Google Vertex AI and an API key helper, through the anthropic SDK's own clients
(engine/models/providers.py, clients.py), against local fakes speaking each provider's wire format."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from codingcode_jupyter.engine.models import has_api_key
from codingcode_jupyter.engine.models.anthropic import AnthropicModel
from codingcode_jupyter.engine.models.base import ModelRequest
from codingcode_jupyter.engine.models.clients import forget, use_key_helper
from codingcode_jupyter.engine.models.providers import current_provider, provider_model
from tests.fakes.anthropic_server import FakeAnthropic, HTTPError, Reply, text, tool_use


@pytest.fixture(autouse=True)
def fresh_clients(monkeypatch: pytest.MonkeyPatch):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "AWS_PROFILE",
                 "AWS_BEARER_TOKEN_BEDROCK", "ANTHROPIC_DEFAULT_SONNET_MODEL", "GOOGLE_APPLICATION_CREDENTIALS"):
        monkeypatch.delenv(name, raising=False)
    forget()
    use_key_helper(None)
    yield
    forget()
    use_key_helper(None)


def request(model: str = "claude-sonnet-4-5") -> ModelRequest:
    return ModelRequest(model=model, messages=[{"role": "user", "content": "hi"}], max_tokens=100)


async def stream(model: str = "claude-sonnet-4-5"):
    texts: list[str] = []
    response = await AnthropicModel(model).stream(request(model), texts.append)
    return response, "".join(texts)


def bedrock_env(monkeypatch: pytest.MonkeyPatch, fake: FakeAnthropic) -> None:
    monkeypatch.setenv("CLAUDE_CODE_USE_BEDROCK", "1")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake.base_url)


async def test_bedrock_streams_through_the_event_stream_signed_with_the_aws_chain(monkeypatch):
    reply = Reply([text("hello from bedrock"), tool_use("read_file", {"path": "a.py"})],
                  usage={"input_tokens": 12, "output_tokens": 7})
    with FakeAnthropic([reply], dialect="bedrock") as fake:
        bedrock_env(monkeypatch, fake)
        assert current_provider() == "bedrock" and has_api_key()
        response, streamed = await stream()
    assert streamed == "hello from bedrock"
    assert [block["type"] for block in response.content] == ["text", "tool_use"]
    assert response.content[1]["input"] == {"path": "a.py"}
    assert response.usage.input_tokens == 12 and response.usage.output_tokens == 7
    # The model went into the path as Bedrock names it; the request was signed (SigV4, eu-west-1).
    assert fake.paths == ["/model/anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream"]
    auth = fake.headers[0].get("Authorization") or fake.headers[0].get("authorization")
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIAFAKEFAKEFAKE/") and "/eu-west-1/bedrock/" in auth
    assert fake.requests[0]["anthropic_version"]  # in the body, as Bedrock wants it


async def test_bedrock_behind_a_gateway_sends_no_signature_and_the_custom_headers(monkeypatch):
    with FakeAnthropic([Reply([text("ok")])], dialect="bedrock") as fake:
        bedrock_env(monkeypatch, fake)
        monkeypatch.setenv("CLAUDE_CODE_SKIP_BEDROCK_AUTH", "1")
        monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Gateway-Team: data-science\nX-Cost-Centre: 42")
        _, streamed = await stream()
    headers = {name.lower(): value for name, value in fake.headers[0].items()}
    assert streamed == "ok"
    assert "authorization" not in headers
    assert headers["x-gateway-team"] == "data-science" and headers["x-cost-centre"] == "42"


async def test_a_family_override_names_the_bedrock_inference_profile(monkeypatch):
    with FakeAnthropic([Reply([text("ok")])], dialect="bedrock") as fake:
        bedrock_env(monkeypatch, fake)
        monkeypatch.setenv("ANTHROPIC_DEFAULT_SONNET_MODEL", "eu.anthropic.claude-sonnet-4-5-20250929-v1:0")
        await stream("sonnet" if False else "claude-sonnet-5")
    assert fake.paths == ["/model/eu.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream"]


async def test_bedrock_errors_are_mapped_as_the_apis_are(monkeypatch):
    from codingcode_jupyter.engine.models.base import ModelError

    with FakeAnthropic([HTTPError(400, "invalid_request_error", "bad model")], dialect="bedrock") as fake:
        bedrock_env(monkeypatch, fake)
        with pytest.raises(ModelError) as caught:
            await stream()
    assert caught.value.kind == "bad_request"


def vertex_env(monkeypatch: pytest.MonkeyPatch, fake: FakeAnthropic) -> None:
    monkeypatch.setenv("CLAUDE_CODE_USE_VERTEX", "1")
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "acme-ml")
    monkeypatch.setenv("CLOUD_ML_REGION", "europe-west4")
    monkeypatch.setenv("ANTHROPIC_VERTEX_BASE_URL", fake.base_url + "/v1")
    monkeypatch.setenv("CLAUDE_CODE_SKIP_VERTEX_AUTH", "1")


async def test_vertex_streams_raw_predict_with_the_project_and_region(monkeypatch):
    with FakeAnthropic([Reply([text("hello from vertex")])], dialect="vertex") as fake:
        vertex_env(monkeypatch, fake)
        assert current_provider() == "vertex"
        response, streamed = await stream("claude-haiku-4-5")
    assert streamed == "hello from vertex"
    assert fake.paths == ["/v1/projects/acme-ml/locations/europe-west4/publishers/anthropic/models/"
                          "claude-haiku-4-5@20251001:streamRawPredict"]
    assert fake.requests[0]["anthropic_version"]
    assert "authorization" not in {name.lower() for name in fake.headers[0]}


async def test_vertex_sends_the_google_token_when_auth_is_not_skipped(monkeypatch, tmp_path):
    # Google's application default credentials, as google-auth hands them to the SDK (no network:
    # the credentials mint a fixed token when the SDK refreshes them).
    import google.auth
    import google.auth.credentials

    class Fixed(google.auth.credentials.Credentials):
        def refresh(self, request):
            self.token = "ya29.fake-token"

    with FakeAnthropic([Reply([text("ok")])], dialect="vertex") as fake:
        vertex_env(monkeypatch, fake)
        monkeypatch.delenv("CLAUDE_CODE_SKIP_VERTEX_AUTH")
        monkeypatch.setattr(google.auth, "default", lambda *a, **k: (Fixed(), "acme-ml"))
        await stream()
    assert fake.headers[0].get("Authorization") == "Bearer ya29.fake-token"


def test_model_names_per_provider():
    assert provider_model("claude-opus-4-5", "bedrock") == "anthropic.claude-opus-4-5-20251101-v1:0"
    assert provider_model("claude-opus-4-5", "vertex") == "claude-opus-4-5@20251101"
    assert provider_model("claude-opus-4-5", "anthropic") == "claude-opus-4-5"
    # Already in the provider's form: as written.
    assert provider_model("us.anthropic.claude-x-v1:0", "bedrock") == "us.anthropic.claude-x-v1:0"
    assert provider_model("arn:aws:bedrock:us-east-1:1:inference-profile/p", "bedrock").startswith("arn:")
    assert provider_model("claude-x@2026", "vertex") == "claude-x@2026"


def helper_script(tmp_path: Path, keys: list[str]) -> str:
    """A key helper that prints the next key of ``keys`` each time it runs (and counts its runs)."""
    state = tmp_path / "keys.json"
    state.write_text(json.dumps(keys))
    script = tmp_path / "helper.py"
    script.write_text("import json, sys\n"
                      f"p = {str(state)!r}\n"
                      "keys = json.load(open(p))\n"
                      "print(keys.pop(0))\n"
                      "json.dump(keys, open(p, 'w'))\n")
    return f"{sys.executable} {script}"


async def test_api_key_helper_is_run_again_after_a_401(monkeypatch, tmp_path):
    with FakeAnthropic([HTTPError(401, "authentication_error", "expired"), Reply([text("ok")])]) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        use_key_helper(helper_script(tmp_path, ["key-one", "key-two"]), tmp_path)
        assert has_api_key()
        _, streamed = await stream()
    assert streamed == "ok"
    # The SDK sends the key as this version of it does (X-Api-Key, or Authorization: Bearer).
    lowered = [{name.lower(): value for name, value in h.items()} for h in fake.headers]
    keys = [h.get("x-api-key") or h.get("authorization", "").removeprefix("Bearer ") for h in lowered]
    assert keys == ["key-one", "key-two"]


async def test_a_helper_that_fails_says_so(monkeypatch, tmp_path):
    from codingcode_jupyter.engine.models.base import ModelError

    with FakeAnthropic([Reply([text("never")])]) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        use_key_helper("echo no vault >&2; exit 3", tmp_path)
        with pytest.raises(ModelError, match="apiKeyHelper") as caught:
            await stream()
    assert caught.value.kind == "auth" and fake.requests == []


async def test_the_reviewer_uses_the_providers_client(monkeypatch):
    # The reviewer asks the shared client: on Bedrock its model name is mapped as the turn's is.
    from codingcode_jupyter.engine.models.clients import shared_client

    with FakeAnthropic([Reply([text("ok")])], dialect="bedrock") as fake:
        bedrock_env(monkeypatch, fake)
        message = await shared_client().messages.create(model="claude-haiku-4-5", max_tokens=10,
                                                        messages=[{"role": "user", "content": "hi"}])
    assert message.content[0].text == "ok"
    assert fake.paths == ["/model/anthropic.claude-haiku-4-5-20251001-v1:0/invoke"]


def test_status_says_where_requests_go(monkeypatch):
    from codingcode_jupyter.engine.models.providers import describe_provider

    monkeypatch.setenv("CLAUDE_CODE_USE_BEDROCK", "1")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    line = describe_provider("claude-opus-4-5")
    assert line.startswith("Amazon Bedrock, eu-west-1") and "anthropic.claude-opus-4-5-20251101-v1:0" in line
    monkeypatch.delenv("CLAUDE_CODE_USE_BEDROCK")
    monkeypatch.setenv("CLAUDE_CODE_USE_VERTEX", "1")
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "acme")
    assert describe_provider("claude-opus-4-5").startswith("Google Vertex AI, acme in ")
