"""In-process runs: a run whose server process died (its lease expired) is ended as `interrupted` when
someone looks, keeping what it streamed; a cancel ends it at once."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from chat.event_store import get_event_store
from chat.events import publish
from chat.models import ApiKey, Conversation, Message, ResearchRun
from chat.services import leases
from tests.chat.test_runs import ask, wait_finished
from tests.fakes.openai_server import TextReply
from tests.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)

SOURCES = [{"n": 1, "title": "Apple Q4 - Reuters", "url": "https://www.reuters.com/apple-q4", "kind": "web"}]


@sync_to_async
def _dead_processs_run(expired_for: timedelta) -> ResearchRun:
    owner = ApiKey.objects.get().user
    conversation = Conversation.objects.create(user=owner, title="Apple")
    question = Message.objects.create(conversation=conversation, role="user", content="How did Apple do?")
    return ResearchRun.objects.create(
        conversation=conversation,
        user_message=question,
        status=ResearchRun.Status.RUNNING,
        attempt=1,
        lease_owner="gone-host:4242:deadbeef",
        lease_expires_at=timezone.now() - expired_for,
    )


async def abandoned_run(*, expired_for: timedelta) -> ResearchRun:
    """A run some dead process had started and streamed part of an answer for."""
    run = await _dead_processs_run(expired_for)
    await get_event_store().open_attempt(run.id, 1)
    await publish(run.id, 1, "status", {"phase": "synthesizing", "label": "Writing", "detail": ""})
    await publish(run.id, 1, "delta", {"text": "Apple grew "})
    await publish(run.id, 1, "delta", {"text": "8% [1]."})
    await publish(run.id, 1, "sources", {"sources": SOURCES})
    return run


async def test_looking_at_an_abandoned_run_ends_it_and_keeps_its_partial_answer(api):
    run = await abandoned_run(expired_for=timedelta(minutes=5))

    shown = (await api.get(f"/api/runs/{run.id}")).json()

    assert shown["status"] == "error" and shown["error"]["code"] == "interrupted"
    partial = await Message.objects.aget(pk=shown["message_id"])
    assert (partial.content, partial.status, partial.sources) == ("Apple grew 8% [1].", "incomplete", SOURCES)
    events = await read_events(api, f"/api/runs/{run.id}/events")
    assert [e.type for e in events] == ["status", "delta", "delta", "sources", "error"]
    assert events[-1].data == {
        "code": "interrupted",
        "message": "The server stopped while answering; please ask again.",
        "message_id": shown["message_id"],
    }


async def test_a_subscriber_waiting_on_a_run_that_goes_silent_gets_one_error(api, monkeypatch):
    monkeypatch.setattr("chat.events.KEEPALIVE_SECONDS", 0.05)
    run = await abandoned_run(expired_for=timedelta(seconds=-0.3))  # its lease runs out after the stream opens

    events = await read_events(api, f"/api/runs/{run.id}/events")

    assert [e.type for e in events][-2:] == ["sources", "error"]
    assert [e.type for e in events].count("error") == 1
    assert (await ResearchRun.objects.aget(pk=run.id)).error["code"] == "interrupted"


async def test_a_recently_active_run_is_left_alone(api):
    run = await abandoned_run(expired_for=timedelta(seconds=-10))  # its lease is still valid

    shown = (await api.get(f"/api/runs/{run.id}")).json()

    assert shown["status"] == "running" and shown["error"] is None


async def test_a_run_answered_in_this_process_is_never_reaped(api, fake_openai, monkeypatch):
    monkeypatch.setattr(leases, "LEASE_SECONDS", 0)  # every lease has expired as soon as it is taken
    fake_openai.script(TextReply(chunk_chars=4, delta_delay=0.03))
    accepted = await ask(api)

    while (run := await ResearchRun.objects.aget(pk=accepted["run_id"])).status in ("queued", "running"):
        assert (await api.get(f"/api/runs/{run.id}")).json()["status"] in ("queued", "running", "done")
        await asyncio.sleep(0.02)

    assert (await wait_finished(api, accepted["run_id"]))["status"] == "done"


async def test_renewing_leases_extends_the_runs_answered_here_and_stops_cancelled_ones(api):
    run = await abandoned_run(expired_for=timedelta(seconds=1))
    await ResearchRun.objects.filter(pk=run.id).aupdate(lease_owner=leases.OWNER)
    handle = await leases.register(run.id)
    handle.task = asyncio.create_task(asyncio.sleep(30))
    try:
        await leases.renew_leases()
        renewed = await ResearchRun.objects.aget(pk=run.id)
        await ResearchRun.objects.filter(pk=run.id).aupdate(cancel_requested=True)
        await leases.renew_leases()
    finally:
        leases.unregister(run.id)

    assert renewed.lease_expires_at > timezone.now() + timedelta(seconds=leases.LEASE_SECONDS - 5)
    assert handle.stop_cause == "cancel"
    await asyncio.gather(handle.task, return_exceptions=True)
    assert handle.task.cancelled()


async def test_cancelling_an_abandoned_run_ends_it_at_once(api):
    run = await abandoned_run(expired_for=timedelta(minutes=5))

    response = await api.post(f"/api/runs/{run.id}/cancel")

    assert response.status_code == 202
    stored = await ResearchRun.objects.aget(pk=run.id)
    assert stored.status == "cancelled" and stored.error["code"] == "cancelled"
    events = await read_events(api, f"/api/runs/{run.id}/events")
    assert events[-1].type == "error" and events[-1].data["code"] == "cancelled"
