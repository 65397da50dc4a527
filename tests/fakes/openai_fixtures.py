"""Pytest fixtures around the fake OpenAI server.

Register with `pytest_plugins = ["tests.fakes.openai_fixtures"]` in the root conftest, or import the
fixtures into a test module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from datascraper.models_config import get_research_config
from datascraper.providers.openai.client import reset_openai_client
from tests.fakes.openai_server import FakeOpenAIServer

TEST_API_KEY = "test-key"


def _reload_research_config() -> None:
    get_research_config.cache_clear()
    reset_openai_client()


@pytest.fixture
def fake_openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """A fresh fake server; OPENAI_BASE_URL and OPENAI_API_KEY point the research code at it.

    Fails the test if the fake itself hit an error (a bug in the fake or a script the fake could not
    honour), since that would otherwise surface only as a confusing 500.
    """
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", TEST_API_KEY)
        _reload_research_config()
        yield server
    _reload_research_config()
    assert not server.errors, f"the fake OpenAI server hit errors: {server.errors}"


@pytest.fixture
def research_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """Set research environment variables for one test: `research_env(RESEARCH_MAX_RETRIES="1")`.

    The configuration and the shared client are reloaded at once and again after the test.
    """

    def set_env(**variables: str) -> None:
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        _reload_research_config()

    yield set_env
    _reload_research_config()
