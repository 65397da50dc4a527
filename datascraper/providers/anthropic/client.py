"""The shared Anthropic client of a process: one connection pool per event loop, built from the configuration."""

from __future__ import annotations

import anthropic
import httpx2
from anthropic import AsyncAnthropic

from datascraper.errors import ProviderNotConfigured
from datascraper.models_config import get_research_config
from datascraper.providers.anthropic.failures import refuse_retry_over_spend_limit
from datascraper.providers.loop_client import PerLoop

# As for OpenAI's client: twenty idle connections cover a burst's reuse without the pool scanning a hundred.
CONNECTION_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=20)

_clients: PerLoop[AsyncAnthropic] = PerLoop()


def get_anthropic_client() -> AsyncAnthropic:
    """The shared client, created on first use from `get_research_config()`.

    The key is given explicitly, so the SDK reads no other credential (its profiles, `ANTHROPIC_AUTH_TOKEN`,
    workload identity). `ANTHROPIC_BASE_URL` is the host alone; unset, the SDK's default host. The pool
    belongs to the event loop that opened its connections, so another running loop gets a client of its own.
    """
    config = get_research_config()
    if config.anthropic_api_key is None or not config.provider_configured("anthropic"):
        raise ProviderNotConfigured.missing("ANTHROPIC_API_KEY")
    key = config.anthropic_api_key

    def build() -> AsyncAnthropic:
        return AsyncAnthropic(
            api_key=key.get_secret_value(),
            base_url=config.anthropic_base_url or "https://api.anthropic.com",
            timeout=config.request_timeout_s,
            max_retries=config.max_retries,
            http_client=anthropic.DefaultAsyncHttpxClient(
                limits=CONNECTION_LIMITS, event_hooks={"response": [refuse_retry_over_spend_limit]}
            ),
        )

    return _clients.get(build)


def reset_anthropic_client() -> None:
    """Forget the shared client, so the next call reads the configuration again (tests, config reload)."""
    _clients.reset()
