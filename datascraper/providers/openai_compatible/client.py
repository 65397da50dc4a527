"""The shared client of a Chat Completions server: one connection pool per event loop, built from the
configuration (`OPENAI_COMPATIBLE_BASE_URL`, `OPENAI_COMPATIBLE_API_KEY`)."""

from __future__ import annotations

from urllib.parse import urlsplit

import openai
from openai import AsyncOpenAI

from datascraper.errors import ProviderNotConfigured
from datascraper.models_config import get_research_config
from datascraper.providers.loop_client import PerLoop
from datascraper.providers.openai.client import CONNECTION_LIMITS
from datascraper.providers.openai.failures import refuse_retry_without_credit

BASE_URL_SETTING = "OPENAI_COMPATIBLE_BASE_URL"
# Most local servers (Ollama, vLLM, LM Studio) take no key, but the SDK sends one: a placeholder then.
NO_KEY = "no-key-needed"

_clients: PerLoop[AsyncOpenAI] = PerLoop()


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
    config = get_research_config()
    base_url = compatible_base_url()
    key = config.openai_compatible_api_key.get_secret_value() if config.openai_compatible_api_key else ""

    def build() -> AsyncOpenAI:
        return AsyncOpenAI(
            api_key=key or NO_KEY,
            base_url=base_url,
            timeout=config.request_timeout_s,
            max_retries=config.max_retries,
            http_client=openai.DefaultAsyncHttpxClient(
                limits=CONNECTION_LIMITS, event_hooks={"response": [refuse_retry_without_credit]}
            ),
        )

    return _clients.get(build, base_url, key)
