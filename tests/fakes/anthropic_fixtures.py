"""Pytest fixtures around the fake Anthropic API: `fake_anthropic` points ANTHROPIC_BASE_URL and
ANTHROPIC_API_KEY at it, for the research code and the real SDK."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from datascraper.models_config import get_research_config
from datascraper.providers.anthropic.client import reset_anthropic_client
from tests.fakes.anthropic_server import API_KEY, FakeAnthropicServer


def _reload() -> None:
    get_research_config.cache_clear()
    reset_anthropic_client()


@pytest.fixture
def fake_anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropicServer]:
    """A fresh fake; fails the test if the fake itself hit an error (a bug in it, or a script it could not
    honour)."""
    with FakeAnthropicServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
        _reload()
        yield server
    _reload()
    assert not server.errors, f"the fake Anthropic server hit errors: {server.errors}"
