from __future__ import annotations

import httpx2
import pytest
from django.contrib.auth import get_user_model

from tests.asgi_server import ThreadedAsgiServer

pytest_plugins = ["tests.fakes.openai_fixtures"]


@pytest.fixture(scope="session")
def live_server_url(django_db_setup, django_db_blocker):
    """The ASGI app under uvicorn; tests that use it also need `transactional_db`."""
    from config.asgi import application

    with django_db_blocker.unblock():
        server = ThreadedAsgiServer(application, name="app-under-test").start()
        yield server.url
        server.stop()


@pytest.fixture
def api_key(transactional_db) -> str:
    from chat.services.api_keys import create_api_key

    _, key = create_api_key("alice")
    return key


@pytest.fixture
def other_api_key(transactional_db) -> str:
    from chat.services.api_keys import create_api_key

    _, key = create_api_key("mallory")
    return key


@pytest.fixture
async def api(live_server_url, api_key):
    """An HTTP client of the live app, authenticated as alice."""
    async with httpx2.AsyncClient(
        base_url=live_server_url, headers={"Authorization": f"Bearer {api_key}"}, timeout=20
    ) as client:
        yield client


@pytest.fixture
async def other_api(live_server_url, other_api_key):
    async with httpx2.AsyncClient(
        base_url=live_server_url, headers={"Authorization": f"Bearer {other_api_key}"}, timeout=20
    ) as client:
        yield client


@pytest.fixture
def user_model():
    return get_user_model()
