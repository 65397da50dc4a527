"""Pytest fixtures for a fully local model set-up: the fake Chat Completions server as the planner's and the
research model's provider, and the fake OpenAI server as a tripwire that no request may reach."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from datascraper.models_config import get_research_config
from tests.fakes.chat_completions_server import FakeChatCompletionsServer
from tests.fakes.openai_server import FakeOpenAIServer

LOCAL_MODEL = "openai-compatible:qwen2.5:14b"


@pytest.fixture
def openai_tripwire(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """OPENAI_BASE_URL on a fake OpenAI server that fails the test if any request reaches it; no key."""
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        get_research_config.cache_clear()
        yield server
    assert [f"{r.method} {r.path}" for r in server.requests] == [], "a request went to OpenAI"


@pytest.fixture
def fake_compatible(
    monkeypatch: pytest.MonkeyPatch, openai_tripwire: FakeOpenAIServer
) -> Iterator[FakeChatCompletionsServer]:
    """A fresh fake Chat Completions server serving both models (`LOCAL_MODEL`), OPENAI_COMPATIBLE_BASE_URL
    pointed at it, no key of any provider. Fails the test if the fake itself hit an error."""
    with FakeChatCompletionsServer() as server:
        monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", server.base_url)
        monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
        monkeypatch.setenv("RESEARCH_PLANNER_MODEL", LOCAL_MODEL)
        monkeypatch.setenv("RESEARCH_MODEL", LOCAL_MODEL)
        get_research_config.cache_clear()
        yield server
    get_research_config.cache_clear()
    assert not server.errors, f"the fake Chat Completions server hit errors: {server.errors}"
