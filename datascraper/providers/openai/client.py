"""The shared OpenAI client of a process: one connection pool per event loop, built from the configuration."""

from __future__ import annotations

import httpx2
import openai
from openai import AsyncOpenAI

from datascraper.errors import ProviderNotConfigured
from datascraper.models_config import get_research_config
from datascraper.providers.breaker import reset_breakers
from datascraper.providers.loop_client import PerLoop
from datascraper.providers.openai.failures import refuse_retry_without_credit

# The SDK keeps up to 100 idle connections, and its pool probes every idle one for a server hang-up each
# time a request starts or ends: under load that scan was a tenth of a run's CPU. Twenty idle connections
# cover a burst's reuse; past them, a connection is closed rather than kept.
CONNECTION_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=20)

_clients: PerLoop[AsyncOpenAI] = PerLoop()


def get_openai_client() -> AsyncOpenAI:
    """The shared client, created on first use from `get_research_config()`.

    One client per process keeps one connection pool. The pool belongs to the event loop that opened its
    connections, so a different running loop (a CLI's `asyncio.run`, a test) gets a client of its own.
    """
    config = get_research_config()
    if config.openai_api_key is None or not config.provider_configured("openai"):
        raise ProviderNotConfigured.missing("OPENAI_API_KEY")
    key = config.openai_api_key

    def build() -> AsyncOpenAI:
        return AsyncOpenAI(
            api_key=key.get_secret_value(),
            base_url=config.openai_base_url,
            timeout=config.request_timeout_s,
            max_retries=config.max_retries,
            http_client=openai.DefaultAsyncHttpxClient(
                limits=CONNECTION_LIMITS, event_hooks={"response": [refuse_retry_without_credit]}
            ),
        )

    return _clients.get(build)


def reset_openai_client() -> None:
    """Forget the shared client and the breakers' state, so the next call reads the configuration again
    (tests, config reload)."""
    _clients.reset()
    reset_breakers()
