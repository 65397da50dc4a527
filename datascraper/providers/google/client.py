"""The shared Gemini client of a process: one connection pool per event loop, built from the configuration."""

from __future__ import annotations

from google import genai
from google.genai import types

from datascraper.errors import ProviderNotConfigured
from datascraper.models_config import get_research_config
from datascraper.providers.loop_client import PerLoop

API_VERSION = "v1beta"
# No tool of ours is a Python function for the SDK to call: its automatic function calling stays off.
NO_FUNCTION_CALLING = types.AutomaticFunctionCallingConfig(disable=True)

_clients: PerLoop[genai.Client] = PerLoop()


def get_gemini_client() -> genai.Client:
    """The shared client, created on first use from `get_research_config()`.

    Its async side (`client.aio`) sends through one httpx pool, whose connections belong to the event loop
    that opened them, so a different running loop (a CLI's `asyncio.run`, a test) gets a client of its own.
    The SDK's own retries are off (no `retry_options`): `retries.with_retries` decides per failure.
    """
    config = get_research_config()
    if config.gemini_api_key is None or not config.provider_configured("google"):
        raise ProviderNotConfigured.missing("GEMINI_API_KEY")
    key = config.gemini_api_key

    def build() -> genai.Client:
        return genai.Client(
            # Explicit, so that GOOGLE_GENAI_USE_VERTEXAI in the environment cannot send calls elsewhere.
            vertexai=False,
            api_key=key.get_secret_value(),
            http_options=types.HttpOptions(
                base_url=config.gemini_base_url,
                # The SDK's default is v1; the Google Search tool and `responseJsonSchema` are v1beta's.
                api_version=API_VERSION,
                timeout=milliseconds(config.request_timeout_s),
            ),
        )

    return _clients.get(build)


def milliseconds(seconds: float) -> int:
    """The SDK takes its timeouts in whole milliseconds."""
    return max(1, round(seconds * 1000))


def reset_gemini_client() -> None:
    """Forget the shared client, so the next call reads the configuration again (tests, config reload)."""
    _clients.reset()
