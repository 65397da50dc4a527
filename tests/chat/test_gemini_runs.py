"""A question through the chat app answered by Gemini alone (the issue's "done when"): the planner and the
research model are `google:` models, SEARCH_PROVIDER is `hosted`, no OpenAI key is set. The run ends `done`
with its answer's sources cited and checked, and nothing is sent to OpenAI."""

from __future__ import annotations

import pytest

from tests.chat.test_runs import ask, wait_finished
from tests.datascraper.test_gemini_research import openai_watch, script_gemini_research  # noqa: F401 (a fixture)
from tests.fakes.gemini_fixtures import fake_gemini  # noqa: F401 (a fixture)
from tests.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_research_question_ends_done_with_checked_sources_and_nothing_sent_to_openai(
    api, fake_gemini, openai_watch, verifying, page_server
):
    verifying(SEARCH_PROVIDER="hosted", RESEARCH_MAX_ITERATIONS="2")
    revenue, filing, services = script_gemini_research(fake_gemini, page_server)

    accepted = await ask(
        api, "What revenue did Apple report for fiscal 2024, and how did its services do?", mode="research"
    )
    events = await read_events(api, accepted["events_url"])
    run = await wait_finished(api, accepted["run_id"])

    assert run["status"] == "done" and events[-1].type == "done"
    sources = next(event.data["sources"] for event in events if event.type == "sources")
    assert [(s["n"], s["url"], s["title"]) for s in sources] == [
        (1, revenue, "reuters.com"),
        (2, filing, "sec.gov"),
        (3, services, "ft.com"),
    ]
    verification = next(event.data["citations"] for event in events if event.type == "verification")
    assert [(c["n"], c["status"]) for c in verification] == [(1, "supported"), (2, "supported"), (3, "supported")]
    assert openai_watch.requests == []
    assert set(run["usage"]["by_model"]) == {"google:gemini-2.5-flash-lite", "google:gemini-2.5-flash"}
