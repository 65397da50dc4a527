"""Briefs end to end: the live app, the real market data server and filing tools (in memory) over the fake
yfinance and the fake SEC on loopback, and the fake OpenAI server for the one model call a brief may make.

The fakes' data is anchored in 2025 (Yahoo's at 2025-06-13; Apple's 8-K of 2025-01-30 with its Exhibit
99.1, its 10-Q of 2025-01-31, two Form 4s in April): a brief made now finds nothing at all, and one
whose window ends on a day of 2025 finds what was filed, traded and published then.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from chat.models import Brief, Conversation, Message, ResearchRun, Watchlist
from chat.services.briefs import BriefSlotTaken, start_brief
from tests.chat.test_watchlists import create
from tests.datascraper.conftest import filed, sec_server  # noqa: F401 (the fixtures)
from tests.datascraper.research_support import is_synthesis, script_synthesis
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)

EIGHT_K = "0000320193-25-000007"
TEN_Q = "0000320193-25-000008"
HEADLINE = "Apple reports first quarter results"
HISTORY_TITLE = "Yahoo Finance — AAPL price history"


async def apple_watchlist(api, channels: list[dict] | None = None) -> Watchlist:
    created = await create(api, symbols=["AAPL"], channels=channels or [], timezone="UTC")
    return await Watchlist.objects.aget(pk=created["id"])


async def finished(api, brief_id: uuid.UUID, timeout: float = 20) -> dict:
    async with asyncio.timeout(timeout):
        while True:
            response = await api.get(f"/api/briefs/{brief_id}")
            assert response.status_code == 200, response.text
            if response.json()["status"] != "running":
                return response.json()
            await asyncio.sleep(0.05)


def of_kind(brief: dict, kind: str) -> list[dict]:
    return [change for change in brief["changes"] if change["kind"] == kind]


async def test_a_new_8k_and_a_price_move_are_written_up_by_one_run_each_cited_to_its_source(
    api,
    fake_openai,
    filed,  # noqa: F811
):
    watchlist = await apple_watchlist(api)
    script_synthesis(fake_openai, f'Apple filed an 8-K: "{HEADLINE}" [1]. Its shares moved [2].')

    started = await start_brief(watchlist, until=datetime(2025, 1, 31, 12, tzinfo=UTC))
    brief = await finished(api, started.pk)

    assert brief["status"] == "done" and brief["run_id"] == str(started.run_id)
    assert set(brief) == {
        "id", "watchlist_id", "status", "since", "until", "changes", "run_id", "answer", "sources", "deliveries",
        "error",
    }  # fmt: skip
    assert brief["error"] is None
    [eight_k] = [c for c in of_kind(brief, "filing") if c["source"]["form"] == "8-K"]
    assert eight_k["source"]["accession"] == EIGHT_K and f'exhibit 99: "{HEADLINE}"' in eight_k["summary"]
    assert "item 2.02 Results of Operations and Financial Condition" in eight_k["summary"]
    [price] = of_kind(brief, "price")
    assert "official close" in price["summary"] and "USD" in price["summary"]
    assert price["source"]["title"].startswith(HISTORY_TITLE)
    assert brief["answer"].startswith("Apple filed an 8-K")
    # One model call, the synthesizer's: given each change with the number of the source it cites.
    [request] = fake_openai.requests
    assert is_synthesis(request)
    sources = {(s["kind"], s["title"]): s for s in brief["sources"]}
    filing = next(s for (kind, title), s in sources.items() if kind == "filing" and "8-K" in title)
    history = next(s for (kind, title), s in sources.items() if title.startswith(HISTORY_TITLE))
    assert filing["url"] == eight_k["source"]["url"] and history["kind"] == "market_data"
    [eight_k_line] = [line for line in request.input_text.splitlines() if line.startswith("8-K filed 2025-01-30")]
    assert eight_k_line.endswith(f"[{filing['n']}]")
    assert f"[{history['n']}] {history['title']}" in request.input_text
    # The run is an ordinary one: its events stream as any research answer's do.
    events = await read_events(api, f"/api/runs/{brief['run_id']}/events")
    types = [event.type for event in events]
    assert types[0] == "plan" and "sources" in types and types[-1] == "done"


async def test_a_written_brief_is_delivered_once_to_its_webhook_signed_and_the_api_shows_the_delivery(
    api,
    fake_openai,
    filed,
    settings,  # noqa: F811
):
    settings.WEBHOOK_ALLOW_PRIVATE = True
    receiver = WebhookReceiver([500]).start()  # the first attempt fails: the delivery is retried
    settings.BRIEFS_DELIVERY_BACKOFF = 0
    try:
        channel = {"type": "webhook", "url": receiver.url, "secret": "placeholder-webhook-secret"}
        watchlist = await apple_watchlist(api, [channel])
        script_synthesis(fake_openai, f'Apple filed an 8-K: "{HEADLINE}" [1].')

        started = await start_brief(watchlist, until=datetime(2025, 1, 31, 12, tzinfo=UTC))
        await finished(api, started.pk)
        async with asyncio.timeout(10):
            while (await api.get(f"/api/briefs/{started.pk}")).json()["deliveries"][0]["status"] != "delivered":
                await asyncio.sleep(0.05)
    finally:
        receiver.stop()

    brief = (await api.get(f"/api/briefs/{started.pk}")).json()
    [delivery] = brief["deliveries"]
    assert (delivery["channel"], delivery["index"], delivery["attempts"]) == ("webhook", 0, 2)
    assert [a["outcome"] for a in delivery["attempt_log"]] == ["temporary_failure", "delivered"]
    assert len(receiver.requests) == 2 and receiver.requests[0].body == receiver.requests[1].body
    body = receiver.requests[-1].body
    signature = "sha256=" + hmac.new(b"placeholder-webhook-secret", body, hashlib.sha256).hexdigest()
    assert receiver.requests[-1].headers["X-Signature-256"] == signature
    sent = json.loads(body)
    assert next(iter(sent)) == "id" and sent["id"] == brief["id"] and "deliveries" not in sent
    assert {k: v for k, v in brief.items() if k != "deliveries"} == sent


async def test_the_briefs_citations_are_checked_against_the_filings_and_market_data_the_changes_came_from(
    api,
    fake_openai,
    filed,
    verifying,  # noqa: F811
):
    watchlist = await apple_watchlist(api)
    # The sources, in the order the findings give them: the 10-Q, the 8-K, the 8-K's item with its exhibit,
    # the price history.
    script_synthesis(
        fake_openai,
        "Apple filed its 10-Q for the period ending 2024-12-28 on 2025-01-31 [1]. ",
        f'Its 8-K of 2025-01-30 carried the release "{HEADLINE}" [3]. ',
        "AAPL closed at 149.56 USD on 2025-01-30 [4].",
    )

    started = await start_brief(watchlist, until=datetime(2025, 1, 31, 12, tzinfo=UTC))
    brief = await finished(api, started.pk)

    run = await ResearchRun.objects.aget(pk=brief["run_id"])
    assert [(check["n"], check["status"]) for check in run.verification] == [
        (1, "supported"), (3, "supported"), (4, "supported")
    ]  # fmt: skip
    assert run.confidence["citation_support"] == 1.0 and run.confidence["rounds"] == 1


async def test_a_filing_is_reported_once_the_next_brief_starting_where_the_last_ended(
    api,
    fake_openai,
    filed,  # noqa: F811
):
    watchlist = await apple_watchlist(api)
    script_synthesis(fake_openai, "Apple filed an 8-K [1].")
    script_synthesis(fake_openai, "Apple filed its 10-Q [1].")

    first = await finished(api, (await start_brief(watchlist, until=datetime(2025, 1, 30, 23, tzinfo=UTC))).pk)
    second = await finished(api, (await start_brief(watchlist, until=datetime(2025, 1, 31, 23, tzinfo=UTC))).pk)

    assert second["since"] == first["until"]
    # The 8-K is dated 2025-01-30, a day both windows touch: its accession keeps it out of the second.
    assert [c["source"]["accession"] for c in of_kind(first, "filing")] == [EIGHT_K]
    assert [c["source"]["accession"] for c in of_kind(second, "filing")] == [TEN_Q]
    listed = (await api.get(f"/api/watchlists/{watchlist.pk}/briefs")).json()
    assert [b["id"] for b in listed] == [second["id"], first["id"]]


async def test_nothing_material_is_said_at_once_with_no_run_and_no_model_call(
    api,
    fake_openai,
    filed,
    settings,  # noqa: F811
):
    settings.BRIEFS_PRICE_MOVE_PCT = 50  # the latest close's move is reported, but is not material
    watchlist = await apple_watchlist(api)

    # A Sunday: Friday's close is the latest, and nothing was filed, rated or published since Saturday.
    started = await start_brief(watchlist, until=datetime(2025, 6, 15, 12, tzinfo=UTC))

    brief = (await api.get(f"/api/briefs/{started.pk}")).json()
    assert brief["status"] == "done" and brief["run_id"] is None
    assert brief["answer"].startswith("Nothing material changed since 2025-06-14 12:00 UTC")
    [price] = brief["changes"]
    assert price["kind"] == "price" and "on 2025-06-13 (official close)" in price["summary"]
    assert price["summary"] in brief["answer"]
    assert fake_openai.requests == []


async def test_a_brief_asked_through_the_api_with_nothing_new_answers_202_without_a_run(
    api,
    fake_openai,
    filed,  # noqa: F811
):
    watchlist = await apple_watchlist(api)

    response = await api.post(f"/api/watchlists/{watchlist.pk}/briefs")

    assert response.status_code == 202, response.text
    accepted = response.json()
    assert accepted["run_id"] is None and accepted["events_url"] is None
    brief = (await api.get(f"/api/briefs/{accepted['brief_id']}")).json()
    assert brief["status"] == "done" and brief["answer"].startswith("Nothing material changed since ")
    assert fake_openai.requests == []


async def test_another_owners_watchlist_and_briefs_do_not_exist_for_a_caller(
    api,
    other_api,
    fake_openai,
    filed,  # noqa: F811
):
    watchlist = await apple_watchlist(api)
    brief_id = (await api.post(f"/api/watchlists/{watchlist.pk}/briefs")).json()["brief_id"]

    for response in (
        await other_api.get(f"/api/briefs/{brief_id}"),
        await other_api.get(f"/api/watchlists/{watchlist.pk}/briefs"),
        await other_api.post(f"/api/watchlists/{watchlist.pk}/briefs"),
        await api.get(f"/api/briefs/{uuid.uuid4()}"),
    ):
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert await Brief.objects.filter(watchlist=watchlist).acount() == 1


async def test_the_brief_endpoints_are_in_the_openapi_document(api):
    paths = (await api.get("/api/openapi.json")).json()["paths"]
    assert "post" in paths["/api/watchlists/{watchlist_id}/briefs"]
    assert "get" in paths["/api/watchlists/{watchlist_id}/briefs"]
    assert "get" in paths["/api/briefs/{brief_id}"]


async def test_a_brief_over_its_owners_run_limit_is_recorded_failed_with_the_limits_code(
    api,
    fake_openai,
    filed,
    settings,  # noqa: F811
):
    settings.CHAT_MAX_CONCURRENT_RUNS = 1
    watchlist = await apple_watchlist(api)
    conversation = await Conversation.objects.acreate(user_id=watchlist.user_id, title="busy")
    question = await Message.objects.acreate(conversation=conversation, role="user", content="Still answering?")
    await ResearchRun.objects.acreate(conversation=conversation, user_message=question)  # queued: in flight

    started = await start_brief(watchlist, until=datetime(2025, 1, 31, 12, tzinfo=UTC))

    assert started.status == Brief.Status.FAILED and started.run_id is None
    assert started.error["code"] == "too_many_runs"
    shown = (await api.get(f"/api/briefs/{started.pk}")).json()
    assert shown["status"] == "failed" and shown["error"]["code"] == "too_many_runs" and shown["error"]["message"]
    assert [c["kind"] for c in started.changes][:1] == ["price"]  # what changed is kept all the same
    assert fake_openai.requests == []


async def test_a_scheduled_slot_gets_one_brief_and_a_second_start_is_refused_by_name(api, fake_openai, filed):  # noqa: F811
    watchlist = await apple_watchlist(api)
    slot = datetime(2026, 11, 27, 7, tzinfo=UTC)

    first = await start_brief(watchlist, scheduled_for=slot)
    with pytest.raises(BriefSlotTaken):
        await start_brief(watchlist, scheduled_for=slot)

    assert [brief.pk async for brief in Brief.objects.filter(watchlist=watchlist)] == [first.pk]


def sync_watchlist(username: str = "carol") -> Watchlist:
    user = get_user_model().objects.create(username=username)
    return Watchlist.objects.create(user=user, name="Morning", symbols=["AAPL"], schedule="0 7 * * *", timezone="UTC")


def test_the_command_makes_a_brief_and_prints_it(fake_openai, filed, capsys):  # noqa: F811
    watchlist = sync_watchlist()

    call_command("brief", str(watchlist.pk))

    assert capsys.readouterr().out.startswith("Nothing material changed since ")
    assert Brief.objects.get(watchlist=watchlist).status == Brief.Status.DONE
    assert fake_openai.requests == []


@pytest.mark.parametrize("watchlist_id", ["not-an-id", str(uuid.uuid4())])
def test_the_command_refuses_an_unknown_watchlist_without_a_traceback(watchlist_id):
    with pytest.raises(CommandError) as refused:
        call_command("brief", watchlist_id)

    assert refused.value.returncode == 2 and "watchlist" in str(refused.value)


async def test_a_brief_left_without_its_run_by_a_stopped_process_is_ended_by_the_next(api, fake_openai, filed):  # noqa: F811
    watchlist = await apple_watchlist(api)
    now = datetime.now(UTC)
    left = await Brief.objects.acreate(
        watchlist=watchlist, since=now - timedelta(days=2), until=now - timedelta(days=1)
    )
    await Brief.objects.filter(pk=left.pk).aupdate(created_at=now - timedelta(hours=1))

    await start_brief(watchlist)

    left = await Brief.objects.aget(pk=left.pk)
    assert left.status == Brief.Status.FAILED and left.error["code"] == "interrupted" and left.finished_at
