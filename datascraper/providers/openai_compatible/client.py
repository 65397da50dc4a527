"""The shared client of a Chat Completions server: one connection pool per event loop, built from the
configuration (`OPENAI_COMPATIBLE_BASE_URL`, `OPENAI_COMPATIBLE_API_KEY`)."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import openai
from openai import AsyncOpenAI

from datascraper.errors import ProviderNotConfigured
from datascraper.models_config import get_research_config
from datascraper.providers.openai.client import CONNECTION_LIMITS
from datascraper.providers.openai.failures import refuse_retry_without_credit

BASE_URL_SETTING = "OPENAI_COMPATIBLE_BASE_URL"
# Most local servers (Ollama, vLLM, LM Studio) take no key, but the SDK sends one: a placeholder then.
NO_KEY = "no-key-needed"

_client: AsyncOpenAI | None = None
_client_for: tuple[asyncio.AbstractEventLoop | None, str, str] | None = None


def compatible_base_url() -> str:
    """`OPENAI_COMPATIBLE_BASE_URL`, checked: raises `ProviderNotConfigured` (nothing sent) when it is unset
    or not an http(s) URL."""
    url = get_research_config().openai_compatible_base_url
    if not url:
        raise ProviderNotConfigured.missing(BASE_URL_SETTING)
    split = urlsplit(url)
    if split.scheme not in ("http", "https") or not split.netloc:
        raise ProviderNotConfigured(
            f"{BASE_URL_SETTING} is not an http(s) URL: set it to the server's address ending in /v1 "
            "(e.g. http://localhost:11434/v1)."
        )
    return url


def get_compatible_client() -> AsyncOpenAI:
    """The shared client, built on first use; a different running loop, base URL or key gets a new one (the
    pool belongs to the loop that opened its connections)."""
    global _client, _client_for
    config = get_research_config()
    base_url = compatible_base_url()
    key = config.openai_compatible_api_key.get_secret_value() if config.openai_compatible_api_key else ""
    wanted = (_running_loop(), base_url, key)
    if _client is None or _client_for != wanted:
        _client = AsyncOpenAI(
            api_key=key or NO_KEY,
            base_url=base_url,
            timeout=config.request_timeout_s,
            max_retries=config.max_retries,
            http_client=openai.DefaultAsyncHttpxClient(
                limits=CONNECTION_LIMITS, event_hooks={"response": [refuse_retry_without_credit]}
            ),
        )
        _client_for = wanted
    return _client


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
