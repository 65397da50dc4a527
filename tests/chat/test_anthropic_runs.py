"""A question answered with Anthropic's models alone, through the chat app: the planner and the research model
on the fake Messages API behind the real SDK, the hosted web search's citations as sources, each citation
checked against its page on a local server, and no OpenAI key set nor any request sent to OpenAI."""

from __future__ import annotations

import pytest

from datascraper.plan_schemas import QueryAnalysis
from tests.chat.test_runs import answer_text, ask, wait_finished
from tests.datascraper.research_support import sub
from tests.fakes.anthropic_server import is_written_answer, schema_is
from tests.fakes.anthropic_wire import JsonAnswer, TextAnswer
from tests.fakes.openai_requests import has_web_search
from tests.fakes.openai_server import FakeOpenAIServer, Sentence
from tests.fakes.page_server import article
from tests.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "What revenue did Apple report for fiscal 2024, and why?"


@pytest.fixture
def no_openai(monkeypatch):
    """A fake OpenAI server that nothing may reach, and no OpenAI key."""
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        yield server


async def test_a_research_question_on_anthropic_models_alone_ends_done_with_cited_checked_sources(
    api, fake_anthropic, no_openai, verifying, page_server
):
    verifying(
        RESEARCH_PLANNER_MODEL="anthropic:claude-haiku-4-5",
        RESEARCH_MODEL="anthropic:claude-sonnet-4-6",
        SEARCH_PROVIDER="hosted",
        RESEARCH_MAX_ITERATIONS="1",
    )
    results = page_server.add(
        "/apple-results",
        article("Apple results", "Apple reported revenue of $391.04 billion for fiscal 2024, up 2% on a year earlier."),
    )
    analysis = QueryAnalysis(
        needs_decomposition=True, sub_questions=[sub("What revenue did Apple report for fiscal 2024?")]
    )
    fake_anthropic.script(JsonAnswer(analysis), when=schema_is("QueryAnalysis"))
    fake_anthropic.script(
        TextAnswer(
            [
                Sentence(
                    "Apple reported revenue of $391.04 billion for fiscal 2024.",
                    cites=[(results, "Apple results - Example News")],
                )
            ]
        ),
        when=has_web_search,
    )
    fake_anthropic.script(TextAnswer(["Apple's fiscal 2024 revenue was $391.04 billion [1]."]), when=is_written_answer)

    accepted = await ask(api, QUESTION, mode="research")
    events = await read_events(api, accepted["events_url"])
    run = await wait_finished(api, accepted["run_id"])

    types = [event.type for event in events]
    assert types[-1] == "done" and run["status"] == "done", run["error"]
    assert answer_text(events).startswith("Apple's fiscal 2024 revenue was $391.04 billion [1].")
    [sources] = [event.data["sources"] for event in events if event.type == "sources"]
    assert [(s["n"], s["url"], s["title"], s["kind"]) for s in sources] == [
        (1, results, "Apple results - Example News", "web")
    ]
    [verification] = [event.data["citations"] for event in events if event.type == "verification"]
    assert [(c["n"], c["status"]) for c in verification] == [(1, "supported")]
    assert page_server.hits["/apple-results"] >= 1
    # Every call went to Anthropic, each model asked by its own name and counted by its label.
    asked = [(r.model, r.is_structured, r.has_web_search) for r in fake_anthropic.requests]
    assert ("claude-haiku-4-5", True, False) in asked
    assert ("claude-sonnet-4-6", False, True) in asked and ("claude-sonnet-4-6", False, False) in asked
    assert set(run["usage"]["by_model"]) == {"anthropic:claude-haiku-4-5", "anthropic:claude-sonnet-4-6"}
    assert run["usage"]["by_model"]["anthropic:claude-sonnet-4-6"]["web_search_calls"] == 1
    assert no_openai.requests == []
