from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import openai
import pytest

from datascraper.models_config import get_research_config
from datascraper.providers.openai.client import reset_openai_client


@pytest.fixture
def no_provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No OPENAI_API_KEY, in this process and its children: every run ends with `provider_not_configured`."""
    monkeypatch.setenv("OPENAI_API_KEY", "")  # empty, not unset: a .env file must not fill it in
    get_research_config.cache_clear()
    reset_openai_client()
    yield
    get_research_config.cache_clear()
    reset_openai_client()


@pytest.fixture
async def sdk(live_server_url: str, api_key: str) -> AsyncIterator[openai.AsyncOpenAI]:
    """The official OpenAI SDK pointed at the live app, with its default retries left on."""
    async with openai.AsyncOpenAI(api_key=api_key, base_url=f"{live_server_url}/v1", timeout=30) as client:
        yield client


@pytest.fixture(scope="session")
def page_server_url(django_db_setup, django_db_blocker) -> Iterator[str]:
    """The app as `make run` serves it in development, static files included.

    pytest-django turns DEBUG off, so `config.asgi` does not wrap the app here; uvicorn alone serves no
    static files, and the page needs its scripts.
    """
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    from config.asgi import application
    from tests.asgi_server import ThreadedAsgiServer

    app = application if isinstance(application, ASGIStaticFilesHandler) else ASGIStaticFilesHandler(application)
    with django_db_blocker.unblock():
        server = ThreadedAsgiServer(app, name="page-under-test").start()
        yield server.url
        server.stop()
