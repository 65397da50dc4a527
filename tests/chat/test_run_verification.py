"""Verified citations through the chat app: the `verification` event after the answer's last delta and
before `done`, the run's `verification` stored and served by GET /api/runs/{id}, and nothing of it with
CITATION_VERIFY=0. The real pipeline against the fake OpenAI server; the cited pages on a local server."""

from __future__ import annotations

import pytest

from chat.models import ResearchRun
from tests.chat.test_runs import ask, wait_finished
from tests.datascraper.citations.test_run_verification import script_cited_answer
from tests.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)


async def test_the_verification_event_follows_the_answer_and_the_run_stores_it(
    api, fake_openai, verifying, page_server
):
    script_cited_answer(fake_openai, page_server)
    accepted = await ask(api, "How did Apple do last year?")

    events = await read_events(api, accepted["events_url"])
    run = await wait_finished(api, accepted["run_id"])

    types = [event.type for event in events]
    last_delta = max(i for i, kind in enumerate(types) if kind == "delta")
    assert types.count("verification") == 1
    assert last_delta < types.index("sources") < types.index("verification") < types.index("done") == len(types) - 1
    citations = events[types.index("verification")].data["citations"]
    assert [(c["marker_index"], c["n"], c["status"]) for c in citations] == [
        (0, 1, "supported"),
        (1, 1, "unsupported"),
        (2, 2, "unreachable"),
    ]
    assert "$391.04 billion" in citations[0]["evidence"]
    assert all("evidence" not in c for c in citations[1:])
    assert [c.get("reason") for c in citations] == [None, None, "http_404"], "an unreachable one says why"
    assert run["status"] == "done"
    assert run["verification"] == citations
    stored = await ResearchRun.objects.aget(pk=accepted["run_id"])
    assert stored.verification == citations
    signal = run["signals"]["verification"]
    assert (signal["supported"], signal["unsupported"], signal["unreachable"]) == (1, 1, 1)
    assert events[-1].data["signals"]["verification"] == signal


async def test_with_citation_verify_0_the_run_has_no_verification(api, fake_openai, verifying, page_server):
    verifying(CITATION_VERIFY="0")
    script_cited_answer(fake_openai, page_server)
    accepted = await ask(api, "How did Apple do last year?")

    events = await read_events(api, accepted["events_url"])
    run = await wait_finished(api, accepted["run_id"])

    assert "verification" not in [event.type for event in events]
    assert events[-1].type == "done"
    assert run["verification"] == [] and run["signals"]["verification"] is None
    assert page_server.first_hit_at is None
