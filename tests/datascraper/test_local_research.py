"""A fully local set-up answers: the planner and the research model on an OpenAI-compatible server (the fake
Chat Completions server), web searches through SearxNG (its fake), pages on a local server, and no OpenAI key.
The run ends `done`, its answer cites the pages SearxNG found and the citation check judges them, and no
request reaches OpenAI (its fake, behind OPENAI_BASE_URL, fails the test if one does)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from datascraper.plan_schemas import GapReport
from tests.datascraper.local_research_support import (
    QUESTION,
    REVENUE,
    SERVICES,
    asks_json_of,
    publish,
    writes_from_passages,
)
from tests.datascraper.research_support import (
    is_analysis,
    is_synthesis,
    of_type,
    run,
    script_analysis,
    steps,
    sub,
    summary_of,
)
from tests.fakes.chat_completions_server import FakeChatCompletionsServer
from tests.fakes.openai_replies import JsonReply, TextReply
from tests.fakes.searxng_server import FakeSearxng


@pytest.fixture
def searx() -> Iterator[FakeSearxng]:
    with FakeSearxng() as server:
        yield server


@pytest.fixture
def local(fake_compatible: FakeChatCompletionsServer, verifying, searx: FakeSearxng) -> FakeChatCompletionsServer:
    """The whole configuration local: models on the compatible fake, SEARCH_PROVIDER=searxng, checks on."""
    verifying(SEARCH_PROVIDER="searxng", SEARXNG_URL=searx.url, RESEARCH_MAX_ITERATIONS="1")
    return fake_compatible


async def test_a_research_question_ends_done_with_checked_sources_from_searxng_and_nothing_sent_to_openai(
    local, searx, page_server, openai_tripwire
):
    revenue, services = publish(searx, page_server)
    script_analysis(local, sub(REVENUE), sub(SERVICES))
    local.script(
        TextReply(["Apple reported revenue of $391.04 billion for fiscal 2024 [1]."]),
        when=lambda r: writes_from_passages(r) and "revenue did Apple report" in r.input_text,
    )
    local.script(
        TextReply(["Services revenue grew 13% to $96.17 billion [2]."]),
        when=lambda r: writes_from_passages(r) and "services revenue grow" in r.input_text,
    )
    local.script(
        TextReply(["Apple's revenue was $391.04 billion in fiscal 2024 [1], and services grew 13% [2]."]),
        when=lambda r: is_synthesis(r) and not writes_from_passages(r),
    )

    events = await run(QUESTION, mode="research")

    summary = summary_of(events)
    assert summary.answer.startswith(
        "Apple's revenue was $391.04 billion in fiscal 2024 [1], and services grew 13% [2]."
    )
    assert sorted(steps(events)) == sorted(
        [(q, state, "web_search") for q in ("q1", "q2") for state in ("started", "done")]
    )
    [sources] = of_type(events, "sources")
    assert sorted(source.url for source in sources.sources) == sorted([revenue, services])
    [verification] = of_type(events, "verification")
    assert sorted((check.n, check.status) for check in verification.citations) == [(1, "supported"), (2, "supported")]
    assert {query["q"][0] for query in searx.queries} == {REVENUE, SERVICES}
    # Every model call went to the compatible server, over Chat Completions, by the model's own name.
    requests = local.requests
    assert {(r.method, r.path, r.model) for r in requests} == {("POST", "/v1/chat/completions", "qwen2.5:14b")}
    assert len([r for r in requests if is_analysis(r)]) == 1
    assert all(r.status == 200 for r in requests)
    assert summary.usage.by_model["openai-compatible:qwen2.5:14b"].calls == len(requests)
    assert openai_tripwire.requests == []


async def test_a_server_refusing_json_schema_still_plans_the_run_from_prompted_json(
    local, searx, page_server, openai_tripwire
):
    local.json_schema = False
    revenue, _ = publish(searx, page_server)
    plan = {"needs_decomposition": True, "sub_questions": [sub(REVENUE).model_dump(mode="json")]}
    local.script(JsonReply(raw=json.dumps(plan)), when=lambda r: asks_json_of(r, "needs_decomposition"))
    report = GapReport(complete=True, score=9.0).model_dump(mode="json")
    local.script(JsonReply(raw=json.dumps(report)), when=lambda r: asks_json_of(r, "follow_up_queries"))
    local.script(TextReply(["Apple reported revenue of $391.04 billion [1]."]), when=writes_from_passages)
    local.script(TextReply(["Revenue was $391.04 billion [1]."]), when=is_synthesis)

    events = await run(QUESTION, mode="research")

    summary = summary_of(events)
    assert summary.answer.startswith("Revenue was $391.04 billion [1].")
    # Planned from the prompted JSON, not a fallback: the plan's sub-question searched, the gap detector heard.
    assert (summary.signals["analysis_fallback"], summary.signals["gap_detector_fallback"]) == (None, None)
    assert [query["q"][0] for query in searx.queries] == [REVENUE]
    assert steps(events) == [("q1", "started", "web_search"), ("q1", "done", "web_search")]
    [sources] = of_type(events, "sources")
    assert [source.url for source in sources.sources] == [revenue]
    refused = [r for r in local.requests if r.status == 400]
    assert len(refused) == 1 and "response_format" in refused[0].body  # asked once, then remembered
