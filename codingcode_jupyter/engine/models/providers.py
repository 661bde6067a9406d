"""Where the Messages API is: Anthropic's, Amazon Bedrock's or Google Vertex AI's, through the SDK's own clients.

Chosen by the environment as Claude Code chooses it: ``CLAUDE_CODE_USE_BEDROCK=1`` (the AWS
credential chain of botocore, ``AWS_REGION``, ``ANTHROPIC_BEDROCK_BASE_URL``;
``CLAUDE_CODE_SKIP_BEDROCK_AUTH=1`` for a gateway that signs itself), ``CLAUDE_CODE_USE_VERTEX=1``
(Google's application default credentials, ``ANTHROPIC_VERTEX_PROJECT_ID``, ``CLOUD_ML_REGION``,
``ANTHROPIC_VERTEX_BASE_URL``; ``CLAUDE_CODE_SKIP_VERTEX_AUTH=1``), else Anthropic's API (with the
key from ``apiKeyHelper`` when one is configured). ``ANTHROPIC_CUSTOM_HEADERS`` (``Name: value``
lines) is read by every one of the SDK's clients.

Every caller (a turn, a sub-agent, compaction, the reviewer) sends through the one shared client
(:mod:`.clients`), so they all use the same provider; the model names they use (``claude-sonnet-5``,
``haiku``) are mapped to the provider's ids here, on the way out: ``ANTHROPIC_DEFAULT_OPUS_MODEL``,
``ANTHROPIC_DEFAULT_SONNET_MODEL``, ``ANTHROPIC_DEFAULT_HAIKU_MODEL`` (Claude Code's) name the id of a
family on that provider (an inference profile on Bedrock); else a known model's id; else the
provider's usual spelling of the name. A name already in the provider's form is sent as written.

The extras: ``pip install 'codingcode-jupyter[bedrock]'`` (boto3, botocore) and ``[vertex]``
(google-auth); without them the first request says which to install.
"""

from __future__ import annotations

import os
from typing import Any, Literal

__all__ = ["Provider", "current_provider", "describe_provider", "make_provider_client", "sdk_client", "provider_model", "uses_cloud_credentials",
           "PROVIDER_ENV_PREFIXES"]

Provider = Literal["anthropic", "bedrock", "vertex"]

# What a client reads from the environment when it is made (a change makes a new one, :mod:`.clients`).
PROVIDER_ENV_PREFIXES = ("CLAUDE_CODE_USE_", "CLAUDE_CODE_SKIP_", "AWS_", "CLOUD_ML_", "GOOGLE_")

# Known models' ids on each provider, by the name the engine uses.
_BEDROCK_IDS = {
    "claude-sonnet-4-5": "anthropic.claude-sonnet-4-5-20250929-v1:0",
    "claude-opus-4-5": "anthropic.claude-opus-4-5-20251101-v1:0",
    "claude-haiku-4-5": "anthropic.claude-haiku-4-5-20251001-v1:0",
}
_VERTEX_IDS = {
    "claude-sonnet-4-5": "claude-sonnet-4-5@20250929",
    "claude-opus-4-5": "claude-opus-4-5@20251101",
    "claude-haiku-4-5": "claude-haiku-4-5@20251001",
}
_FAMILIES = ("opus", "sonnet", "haiku")


def _on(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def current_provider() -> Provider:
    """The provider the environment chooses (Bedrock before Vertex, as Claude Code reads them)."""
    if _on("CLAUDE_CODE_USE_BEDROCK"):
        return "bedrock"
    if _on("CLAUDE_CODE_USE_VERTEX"):
        return "vertex"
    return "anthropic"


def describe_provider(model: str) -> str:
    """One line for ``%agent status``: where requests go, and the id ``model`` is sent as."""
    provider = current_provider()
    if provider == "bedrock":
        where = os.environ.get("ANTHROPIC_BEDROCK_BASE_URL") or (os.environ.get("AWS_REGION") or "the AWS profile's region")
        auth = "unsigned (CLAUDE_CODE_SKIP_BEDROCK_AUTH)" if _on("CLAUDE_CODE_SKIP_BEDROCK_AUTH") else "the AWS credential chain"
        return f"Amazon Bedrock, {where}, {auth}; {model} is sent as {provider_model(model, provider)}"
    if provider == "vertex":
        where = os.environ.get("ANTHROPIC_VERTEX_BASE_URL") or os.environ.get("CLOUD_ML_REGION") or "us-east5"
        project = os.environ.get("ANTHROPIC_VERTEX_PROJECT_ID") or "the credentials' project"
        auth = "no token (CLAUDE_CODE_SKIP_VERTEX_AUTH)" if _on("CLAUDE_CODE_SKIP_VERTEX_AUTH") else "Google's default credentials"
        return f"Google Vertex AI, {project} in {where}, {auth}; {model} is sent as {provider_model(model, provider)}"
    return "Anthropic's API" + (f" at {os.environ['ANTHROPIC_BASE_URL']}" if os.environ.get("ANTHROPIC_BASE_URL") else "")


def uses_cloud_credentials() -> bool:
    """A cloud provider is chosen: its credentials come from the cloud's own chain, not an API key."""
    return current_provider() != "anthropic"


def provider_model(name: str, provider: Provider | None = None) -> str:
    """The id ``name`` is sent as on ``provider`` (the current one by default; see the module docstring)."""
    provider = provider or current_provider()
    if provider == "anthropic":
        return name
    if provider == "bedrock" and ("anthropic." in name or name.startswith("arn:")):
        return name
    if provider == "vertex" and "@" in name:
        return name
    family = next((family for family in _FAMILIES if family in name.lower()), None)
    override = os.environ.get(f"ANTHROPIC_DEFAULT_{family.upper()}_MODEL") if family else None
    if override:
        return override
    if provider == "bedrock":
        return _BEDROCK_IDS.get(name, f"anthropic.{name}-v1:0")
    return _VERTEX_IDS.get(name, name)


def _missing(extra: str, module: str) -> ImportError:
    return ImportError(f"the {extra} provider needs {module}: pip install 'codingcode-jupyter[{extra}]'")


def _bedrock(max_retries: int, http: Any) -> Any:
    try:
        import botocore  # noqa: F401 -- the SDK signs with it; said here rather than at the first request
    except ImportError as error:
        if not _on("CLAUDE_CODE_SKIP_BEDROCK_AUTH"):
            raise _missing("bedrock", "boto3 and botocore") from error
    from anthropic import AsyncAnthropicBedrock

    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None
    if _on("CLAUDE_CODE_SKIP_BEDROCK_AUTH"):
        class _Unsigned(AsyncAnthropicBedrock):
            # A gateway in front of Bedrock authenticates the request itself: nothing is signed here.
            async def _prepare_request(self, request: Any) -> None:
                return None

        return _Unsigned(aws_region=region or "us-east-1", max_retries=max_retries, http_client=http)
    return AsyncAnthropicBedrock(aws_region=region, max_retries=max_retries, http_client=http)


def _vertex(max_retries: int, http: Any) -> Any:
    skip = _on("CLAUDE_CODE_SKIP_VERTEX_AUTH")
    if not skip:
        try:
            import google.auth  # noqa: F401 -- the SDK's credentials; said here rather than at the first request
        except ImportError as error:
            raise _missing("vertex", "google-auth") from error
    from anthropic import AsyncAnthropicVertex

    region = os.environ.get("CLOUD_ML_REGION") or "us-east5"
    project = os.environ.get("ANTHROPIC_VERTEX_PROJECT_ID") or None
    if skip:
        class _Unauthenticated(AsyncAnthropicVertex):
            # A gateway in front of Vertex authenticates the request itself: no Google token is fetched.
            async def _prepare_request(self, request: Any) -> None:
                return None

        return _Unauthenticated(region=region, project_id=project or "gateway", max_retries=max_retries,
                                http_client=http)
    kwargs: dict[str, Any] = {"project_id": project} if project else {}
    return AsyncAnthropicVertex(region=region, max_retries=max_retries, http_client=http, **kwargs)


def make_provider_client(max_retries: int, http: Any, api_key: str | None = None) -> Any:
    """The SDK client of the current provider, sending through ``http`` (``api_key``: Anthropic's only)."""
    provider = current_provider()
    if provider == "bedrock":
        client = _bedrock(max_retries, http)
    elif provider == "vertex":
        client = _vertex(max_retries, http)
    else:
        from anthropic import AsyncAnthropic

        kwargs: dict[str, Any] = {"api_key": api_key} if api_key else {}
        return AsyncAnthropic(max_retries=max_retries, http_client=http, **kwargs)
    return _ModelsMapped(client, provider)


class _Messages:
    """``client.messages`` with each request's model mapped to the provider's id."""

    def __init__(self, messages: Any, provider: Provider) -> None:
        self._messages, self._provider = messages, provider

    def _mapped(self, params: dict[str, Any]) -> dict[str, Any]:
        if isinstance(params.get("model"), str):
            params = {**params, "model": provider_model(params["model"], self._provider)}
        return params

    def stream(self, **params: Any) -> Any:
        return self._messages.stream(**self._mapped(params))

    def create(self, **params: Any) -> Any:
        return self._messages.create(**self._mapped(params))

    def count_tokens(self, **params: Any) -> Any:
        return self._messages.count_tokens(**self._mapped(params))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._messages, name)


def sdk_client(client: Any) -> Any:
    """The SDK's own client behind ``client`` (a provider's is wrapped to map model names)."""
    return client.sdk if isinstance(client, _ModelsMapped) else client


class _ModelsMapped:
    """A provider's client as the engine uses it: the same, its ``messages`` mapping model names."""

    def __init__(self, client: Any, provider: Provider) -> None:
        self.sdk = client
        self._client = client
        self.provider = provider
        self.messages = _Messages(client.messages, provider)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)
