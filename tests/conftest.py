from __future__ import annotations

import os
import uuid

import httpx2
import pytest

from tests.asgi_server import ThreadedAsgiServer

pytest_plugins = [
    "tests.fakes.openai_fixtures",
    "tests.fakes.anthropic_fixtures",
    "tests.fakes.page_fixtures",
    "tests.fakes.chat_completions_fixtures",
]

# No process of the suite (this one, the app and worker processes it starts) starts the real market data
# server ahead of use: tests install their own client on the fake yfinance. Warm-up's own tests turn it on.
os.environ.setdefault("MARKET_DATA_WARM_START", "0")
# Nor does it check citations by fetching them: the fake answers cite public addresses, which no test may
# reach. Verification's own tests turn it on against a local page server (the `verifying` fixture).
os.environ.setdefault("CITATION_VERIFY", "0")


@pytest.fixture(scope="session")
def live_server_url(django_db_setup, django_db_blocker):
    """The ASGI app under uvicorn; tests that use it also need `transactional_db`."""
    from config.asgi import application

    with django_db_blocker.unblock():
        server = ThreadedAsgiServer(application, name="app-under-test").start()
        yield server.url
        server.stop()


def _key_for(username: str) -> str:
    from chat.services.api_keys import create_api_key

    return create_api_key(username)[1]


@pytest.fixture
def api_key(transactional_db) -> str:
    return _key_for("alice")


@pytest.fixture
def other_api_key(transactional_db) -> str:
    return _key_for("mallory")


def _client(url: str, key: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=20)


@pytest.fixture
async def api(live_server_url, api_key):
    """An HTTP client of the live app, authenticated as alice."""
    async with _client(live_server_url, api_key) as client:
        yield client


@pytest.fixture
async def other_api(live_server_url, other_api_key):
    """The same app as mallory, who must never see alice's data."""
    async with _client(live_server_url, other_api_key) as client:
        yield client


@pytest.fixture
def limits(settings):
    """Set admission limits for one test. The counters get a fresh cache prefix, so nothing counted by
    another test (or another run sharing the Redis database) is seen, and no cache needs clearing.

    Tests that count requests against a rate give it in hours: the windows are fixed, each key's edge
    offset by its hash (django-ratelimit), so a burst that a window's edge falls inside is counted in two
    windows and up to twice the rate gets through. With a minute window that happened to one CI run in
    several; with an hour it is sixty times rarer."""
    settings.RATELIMIT_CACHE_PREFIX = f"rl:test-{uuid.uuid4().hex}:"

    def set_limits(**values: object) -> None:
        for name, value in values.items():
            setattr(settings, name, value)

    return set_limits
