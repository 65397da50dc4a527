"""A question through the app with a fully local set-up: models on an OpenAI-compatible server, searches
through SearxNG, no OpenAI key. The run ends `done` with sources from the search results, each citation
checked, and no request reaches OpenAI."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.chat.test_runs import ask, wait_finished
from tests.datascraper.local_research_support import QUESTION, REVENUE, publish, writes_from_passages
from tests.datascraper.research_support import is_synthesis, script_analysis, sub
from tests.fakes.openai_replies import TextReply
from tests.fakes.searxng_server import FakeSearxng
from tests.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def searx() -> Iterator[FakeSearxng]:
    with FakeSearxng() as server:
        yield server


async def test_a_research_question_answered_locally_ends_done_with_checked_sources(
    api, fake_compatible, verifying, searx, page_server, openai_tripwire
):
    verifying(SEARCH_PROVIDER="searxng", SEARXNG_URL=searx.url, RESEARCH_MAX_ITERATIONS="1")
    revenue, _ = publish(searx, page_server)
    script_analysis(fake_compatible, sub(REVENUE))
    fake_compatible.script(TextReply(["Apple reported revenue of $391.04 billion [1]."]), when=writes_from_passages)
    fake_compatible.script(TextReply(["Apple's fiscal 2024 revenue was $391.04 billion [1]."]), when=is_synthesis)

    accepted = await ask(api, QUESTION, mode="research")
    run = await wait_finished(api, accepted["run_id"])
    events = await read_events(api, accepted["events_url"])

    assert run["status"] == "done", run["error"]
    assert [e.type for e in events][-1] == "done"
    [sources] = [e.data["sources"] for e in events if e.type == "sources"]
    assert [(s["n"], s["url"], s["kind"]) for s in sources] == [(1, revenue, "web")]
    [verification] = [e.data["citations"] for e in events if e.type == "verification"]
    assert [(c["n"], c["status"]) for c in verification] == [(1, "supported")]
    assert {r.path for r in fake_compatible.requests} == {"/v1/chat/completions"}
    assert openai_tripwire.requests == []
