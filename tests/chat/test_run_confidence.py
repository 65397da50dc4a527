"""The evidence confidence and the research trace on the run, through the ASGI app: the real pipeline
against the fake OpenAI server."""

from __future__ import annotations

import pytest

from chat.models import ResearchRun
from tests.chat.test_runs import answer_text, ask, wait_finished
from tests.datascraper.research_support import gaps, script_analysis, script_gaps, script_synthesis
from tests.datascraper.test_research_confidence import ANALYSTS, CONFIRMATION, QUESTION, script_one_reuters_source
from tests.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)

COMPONENTS = {"score", "coverage", "credibility", "diversity", "evidence", "consistency", "shallow"}


async def test_the_run_serves_its_confidence_and_one_trace_entry_per_round(api, fake_openai):
    script_analysis(fake_openai, ANALYSTS)
    script_one_reuters_source(fake_openai)
    script_gaps(fake_openai, gaps(9, complete=True), gaps(9.5, complete=True))
    script_synthesis(fake_openai, "Analysts rate Apple a buy [1][2][3].")
    accepted = await ask(api, QUESTION, mode="research")

    run = await wait_finished(api, accepted["run_id"])
    events = await read_events(api, accepted["events_url"])

    assert run["status"] == "done"
    confidence = run["confidence"]
    assert COMPONENTS <= set(confidence)
    assert all(0 <= confidence[name] <= 1 for name in COMPONENTS - {"shallow"})
    assert confidence["shallow"] is False and confidence["score"] >= confidence["threshold"] == 0.75
    assert confidence["progression"] == [0.619, confidence["score"]]
    trace = run["trace"]
    assert [(t["n"], t["goes_on_because"], t["stop_reason"]) for t in trace] == [(1, "shallow", None), (2, None, "complete")]
    assert trace[0]["plan_changes"] == [
        {"id": "q2", "question": CONFIRMATION, "reason": "weak_evidence", "weak_area": "q1: backed by one source (reuters.com)"}
    ]
    # the round events carry the same entries
    rounds = [e.data for e in events if e.type == "round"]
    assert [(r["n"], r["confidence"], r["new_sources"], r["weak_areas"], r["contradictions"]) for r in rounds] == [
        (t["n"], t["confidence"]["score"], t["new_sources"], t["weak_areas"], t["contradictions"]) for t in trace
    ]
    assert rounds[0]["shallow"] is True and rounds[0]["follow_ups"] == [CONFIRMATION]
    # and the row keeps them
    row = await ResearchRun.objects.aget(pk=accepted["run_id"])
    assert row.confidence == confidence and row.trace == trace
    assert answer_text(events) == "Analysts rate Apple a buy [1][2][3]."


async def test_a_low_confidence_answer_is_stored_with_its_warning(api, fake_openai, research_env):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, ANALYSTS)
    script_one_reuters_source(fake_openai)
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "Analysts rate Apple a buy [1].")
    accepted = await ask(api, QUESTION, mode="research")
    run = await wait_finished(api, accepted["run_id"])

    events = await read_events(api, accepted["events_url"])

    text = answer_text(events)
    assert text.startswith("Analysts rate Apple a buy [1].\n\nNote: low confidence in the evidence")
    conversation = (await api.get(f"/api/conversations/{accepted['conversation_id']}")).json()
    assert conversation["messages"][-1]["content"] == text
    assert run["confidence"]["shallow"] is True and run["trace"][-1]["stop_reason"] == "max_iterations"
    assert run["signals"]["confidence"] == run["confidence"]["score"]


async def test_a_quick_answer_has_no_confidence_and_no_trace(api, fake_openai):
    accepted = await ask(api, "How did Apple do?", mode="quick")

    run = await wait_finished(api, accepted["run_id"])

    assert (run["confidence"], run["trace"]) == (None, [])


async def test_the_api_documents_confidence_and_trace(api):
    schema = (await api.get("/api/openapi.json")).json()["components"]["schemas"]

    assert {"confidence", "trace"} <= set(schema["RunOut"]["properties"])
    assert COMPONENTS | {"summary", "progression"} <= set(schema["RunConfidence"]["properties"])
    assert {"confidence", "new_sources", "weak_areas", "plan_changes", "stop_reason"} <= set(schema["TraceEntry"]["properties"])


async def test_each_web_search_step_names_the_model_that_answered_it_with_its_provider(api, fake_openai, research_env):
    research_env(RESEARCH_MODEL="openai:gpt-5.4", RESEARCH_PLANNER_MODEL="gpt-5.4-mini")
    script_analysis(fake_openai, ANALYSTS)
    script_one_reuters_source(fake_openai)
    script_gaps(fake_openai, gaps(9, complete=True), gaps(9.5, complete=True))
    script_synthesis(fake_openai, "Analysts rate Apple a buy [1][2][3].")
    accepted = await ask(api, QUESTION, mode="research")

    run = await wait_finished(api, accepted["run_id"])
    events = await read_events(api, accepted["events_url"])

    steps = [e.data for e in events if e.type == "step"]
    assert steps and {(s["route"], s["model"]) for s in steps} == {("web_search", "openai:gpt-5.4")}
    assert [r["models"] for r in run["rounds"]] == [{"q1": "openai:gpt-5.4"}, {"q2": "openai:gpt-5.4"}]
    # the run's usage names each model by its label: the default provider's without its prefix
    assert set(run["usage"]["by_model"]) == {"gpt-5.4", "gpt-5.4-mini"}
