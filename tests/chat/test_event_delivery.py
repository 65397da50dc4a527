"""A run's stream sends the events its wake-ups carry while it keeps up, and reads the store only when it
has missed something (a full wake-up queue, a late start). Either way each event arrives once, in order."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django_eventstream import views
from django_eventstream.views import ListenerManager

from chat.event_store import encode, get_event_store
from chat.events import KEEPALIVE, RunEventRecord, iter_run_events, publish
from chat.models import Conversation, Message, ResearchRun

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def _running_run() -> ResearchRun:
    owner = get_user_model().objects.create(username=f"watcher-{uuid.uuid4().hex[:8]}")
    conversation = Conversation.objects.create(user=owner, title="Apple")
    question = Message.objects.create(conversation=conversation, role="user", content="How did Apple do?")
    return ResearchRun.objects.create(
        conversation=conversation, user_message=question, status=ResearchRun.Status.RUNNING, attempt=1
    )


@pytest.fixture(autouse=True)
async def own_listener_manager(monkeypatch) -> AsyncIterator[ListenerManager]:
    """A listener manager of these tests' own, for the streams of this test's loop. With Redis,
    django-eventstream's process-wide manager runs its Redis listener on the loop of the first stream of the
    process and never restarts it: these tests, on a loop that closes after each, must not be the ones to
    start the process's. And that listener may already run, for the live server's streams in its own
    thread: it hands every wake-up to `get_listener_manager()`, so that function answers by loop, as if the
    live server were another process. Otherwise each wake-up would reach these tests twice."""
    manager = ListenerManager()
    process_manager = views.listener_manager
    test_loop = asyncio.get_running_loop()

    def manager_of_the_running_loop() -> ListenerManager:
        try:
            on_test_loop = asyncio.get_running_loop() is test_loop
        except RuntimeError:  # a thread without a loop
            on_test_loop = False
        return manager if on_test_loop else process_manager

    monkeypatch.setattr(views, "get_listener_manager", manager_of_the_running_loop)
    monkeypatch.setattr("chat.events.get_listener_manager", manager_of_the_running_loop)
    yield manager
    for task in asyncio.all_tasks():
        if "start_redis_listener" in repr(task.get_coro()):
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if manager.redis_listener is not None:
        await manager.redis_listener.redis_client.aclose()


@pytest.fixture
def store_reads(monkeypatch) -> list[int]:
    """The `last_id` of every read of the event store, in order."""
    store = get_event_store()
    read_after = store.read_after
    reads: list[int] = []

    async def counted(run_id, last_id, limit=100):
        reads.append(last_id)
        return await read_after(run_id, last_id, limit)

    monkeypatch.setattr(store, "read_after", counted)
    # A lost wake-up (a Redis subscription still starting) is made up for by the re-read after a quiet period.
    monkeypatch.setattr("chat.events.KEEPALIVE_SECONDS", 0.2)
    return reads


async def watch(run_id: uuid.UUID, received: list[RunEventRecord], *, pause_s: float = 0.0) -> None:
    async for record in iter_run_events(run_id, 0):
        if record is not KEEPALIVE:
            received.append(record)
            await asyncio.sleep(pause_s)  # a slow client


async def until(condition, timeout_s: float = 5.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


async def test_a_watcher_that_keeps_up_is_sent_each_event_without_reading_the_store_again(store_reads):
    run = await _running_run()
    await get_event_store().open_attempt(run.id, 1)
    received: list[RunEventRecord] = []
    watcher = asyncio.create_task(watch(run.id, received))
    await publish(run.id, 1, "status", {"phase": "synthesizing", "label": "Writing", "detail": ""})
    await until(lambda: len(received) == 1)
    reads_before = len(store_reads)

    for text in ("Apple ", "grew ", "8% [1]."):
        await publish(run.id, 1, "delta", {"text": text})
        await until(lambda text=text: received[-1].type == "delta" and received[-1].data["text"] == text)
    await publish(run.id, 1, "done", {"message_id": "m", "run_id": str(run.id), "signals": {}}, final=True)
    await asyncio.wait_for(watcher, 5)

    assert [(r.id, r.type) for r in received] == [(1, "status"), (2, "delta"), (3, "delta"), (4, "delta"), (5, "done")]
    assert "".join(r.data["text"] for r in received if r.type == "delta") == "Apple grew 8% [1]."
    assert len(store_reads) == reads_before  # the wake-ups carried every event


async def test_a_watcher_that_falls_behind_reads_the_store_and_gets_each_event_once(store_reads):
    run = await _running_run()
    await get_event_store().open_attempt(run.id, 1)
    received: list[RunEventRecord] = []
    watcher = asyncio.create_task(watch(run.id, received, pause_s=0.02))
    await until(lambda: len(store_reads) >= 1)  # subscribed

    for n in range(30):  # faster than it reads: its wake-up queue (10) overflows
        await publish(run.id, 1, "delta", {"text": f"{n} "})
    await publish(run.id, 1, "done", {"message_id": "m", "run_id": str(run.id), "signals": {}}, final=True)
    await asyncio.wait_for(watcher, 10)

    assert [r.id for r in received] == list(range(1, 32))
    assert "".join(r.data["text"] for r in received[:-1]) == "".join(f"{n} " for n in range(30))
    assert len(store_reads) > 1  # it caught up from the store


async def test_a_late_watcher_gets_the_whole_run_from_the_store(store_reads):
    run = await _running_run()
    await get_event_store().open_attempt(run.id, 1)
    for text in ("Apple ", "grew."):
        await publish(run.id, 1, "delta", {"text": text})
    received: list[RunEventRecord] = []
    watcher = asyncio.create_task(watch(run.id, received))
    await until(lambda: len(received) == 2)

    await publish(run.id, 1, "done", {"message_id": "m", "run_id": str(run.id), "signals": {}}, final=True)
    await asyncio.wait_for(watcher, 5)

    assert [(r.id, r.type) for r in received] == [(1, "delta"), (2, "delta"), (3, "done")]
    assert store_reads[0] == 0


async def test_a_watcher_whose_wake_up_was_lost_reads_the_missed_event_before_the_next(store_reads):
    run = await _running_run()
    await get_event_store().open_attempt(run.id, 1)
    received: list[RunEventRecord] = []
    watcher = asyncio.create_task(watch(run.id, received))
    await until(lambda: len(store_reads) >= 1)  # subscribed

    await get_event_store().append(run.id, 1, "delta", encode({"text": "Apple "}), final=False)  # stored, nobody woken
    await publish(run.id, 1, "delta", {"text": "grew."})
    await publish(run.id, 1, "done", {"message_id": "m", "run_id": str(run.id), "signals": {}}, final=True)
    await asyncio.wait_for(watcher, 5)

    assert [(r.id, r.type) for r in received] == [(1, "delta"), (2, "delta"), (3, "done")]
    assert "".join(r.data["text"] for r in received[:2]) == "Apple grew."
