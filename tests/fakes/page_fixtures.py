"""Pytest fixtures for citation verification: a local page server, and verification switched on for it.

The suite runs with CITATION_VERIFY=0 (tests/conftest.py): the fake OpenAI server's default answers cite
public addresses that no test may reach. A test of verification asks for `verifying`, which turns it on
with CITATION_FETCH_ALLOW_PRIVATE=1, so the pages of `page_server` on 127.0.0.1 can be read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.fakes.page_server import FakePageServer


@pytest.fixture
def page_server() -> Iterator[FakePageServer]:
    with FakePageServer() as server:
        yield server


@pytest.fixture
def verifying(research_env: Callable[..., None]) -> Callable[..., None]:
    """Citation verification on, local addresses allowed; call it to set more variables."""
    research_env(CITATION_VERIFY="1", CITATION_FETCH_ALLOW_PRIVATE="1")
    return research_env
