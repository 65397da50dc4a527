"""Pytest fixtures around the fake Gemini API: import `fake_gemini` into a test module to use it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from datascraper.models_config import get_research_config
from datascraper.providers.google.client import reset_gemini_client
from tests.fakes.gemini_server import TEST_GEMINI_KEY, FakeGemini

PLANNER = "google:gemini-2.5-flash-lite"
RESEARCHER = "google:gemini-2.5-flash"


def _reload() -> None:
    get_research_config.cache_clear()
    reset_gemini_client()


@pytest.fixture
def fake_gemini(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGemini]:
    """A fresh fake Gemini API, the configured models Gemini's and GEMINI_* pointed at it; no OpenAI key.

    Fails the test if the fake could not honour a script (a scripted JSON its request's schema refuses).
    """
    with FakeGemini() as server:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.setenv("GEMINI_API_KEY", TEST_GEMINI_KEY)
        monkeypatch.setenv("GEMINI_BASE_URL", server.base_url)
        monkeypatch.setenv("RESEARCH_PLANNER_MODEL", PLANNER)
        monkeypatch.setenv("RESEARCH_MODEL", RESEARCHER)
        _reload()
        yield server
    _reload()
    assert not server.errors, f"the fake Gemini API could not honour a script: {server.errors}"
