"""The shared Gemini client of a process: one connection pool per event loop, built from the configuration."""

from __future__ import annotations

import asyncio

from google import genai
from google.genai import types

from datascraper.errors import ProviderNotConfigured
from datascraper.models_config import get_research_config

API_VERSION = "v1beta"
# No tool of ours is a Python function for the SDK to call: its automatic function calling stays off.
NO_FUNCTION_CALLING = types.AutomaticFunctionCallingConfig(disable=True)

_client: genai.Client | None = None
_client_loop: asyncio.AbstractEventLoop | None = None


def get_gemini_client() -> genai.Client:
    """The shared client, created on first use from `get_research_config()`.

    Its async side (`client.aio`) sends through one httpx pool, whose connections belong to the event loop
    that opened them, so a different running loop (a CLI's `asyncio.run`, a test) gets a client of its own.
    The SDK's own retries are off (no `retry_options`): `retries.with_retries` decides per failure.
    """
    global _client, _client_loop
    config = get_research_config()
    if not config.provider_configured("google"):
        raise ProviderNotConfigured.missing("GEMINI_API_KEY")
    loop = _running_loop()
    if _client is None or _client_loop is not loop:
        assert config.gemini_api_key is not None  # provider_configured checked it
        _client = genai.Client(
            # Explicit, so that GOOGLE_GENAI_USE_VERTEXAI in the environment cannot send calls elsewhere.
            vertexai=False,
            api_key=config.gemini_api_key.get_secret_value(),
            http_options=types.HttpOptions(
                base_url=config.gemini_base_url,
                # The SDK's default is v1; the Google Search tool and `responseJsonSchema` are v1beta's.
                api_version=API_VERSION,
                timeout=milliseconds(config.request_timeout_s),
            ),
        )
        _client_loop = loop
    return _client


def milliseconds(seconds: float) -> int:
    """The SDK takes its timeouts in whole milliseconds."""
    return max(1, round(seconds * 1000))


def reset_gemini_client() -> None:
    """Forget the shared client, so the next call reads the configuration again (tests, config reload)."""
    global _client, _client_loop
    _client = None
    _client_loop = None


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
