"""Runs across real processes (RUNS_BACKEND=queue on the test PostgreSQL and Redis): workers killed,
frozen and stopped, web processes stopped, cancels from another process.

Every process here is real: uvicorn web processes and `manage.py runworker` workers, answering against the
fake OpenAI server of this test process. Leases are short (RUNS_LEASE_SECONDS=1.5) so that a dead worker's
run is resumed within seconds.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

import httpx2
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from chat.models import Message, ResearchRun
from tests.datascraper.research_support import (
    gaps,
    is_analysis,
    is_gap_report,
    script_analysis,
    script_gaps,
    sub,
    well_sourced,
)
from tests.fakes.openai_server import TextReply, has_web_search
from tests.processes import running_apps
from tests.sse import parse_frames, read_events

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.processes,
    pytest.mark.skipif(not settings.IS_POSTGRES or not settings.REDIS_URL, reason="the queue needs PostgreSQL and Redis"),
]

LONG_ANSWER = [f"Sentence {n} of a long answer about Apple's quarter [1]." for n in range(40)]


@pytest.fixture
def processes(fake_openai, api_key):
    with running_apps(RUNS_BACKEND="queue", RUNS_LEASE_SECONDS="1.5") as apps:
        yield apps


def client(url: str, api_key: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {api_key}"}, timeout=30)


def script_research(fake, *, synthesis_delay: float = 0.05) -> None:
    """Two web sub-questions, a complete verdict on well-sourced findings (one round), then a slow
    streamed answer."""
    script_analysis(fake, sub("Apple revenue last quarter"), sub("Apple guidance"))
    script_gaps(fake, gaps(9, complete=True))
    fake.script(TextReply([well_sourced("Revenue rose 6%.")], delta_delay=0.001), when=has_web_search, times=None)
    fake.script(TextReply(LONG_ANSWER, chunk_chars=12, delta_delay=synthesis_delay), times=None)


async def ask(api, mode: str = "research") -> dict:
    conversation_id = (await api.post("/api/conversations", json={})).json()["id"]
    response = await api.post(
        f"/api/conversations/{conversation_id}/messages", json={"content": "How did Apple do?", "mode": mode}
    )
    assert response.status_code == 202, response.text
    return response.json()


async def answer_under_way(api) -> dict:
    """Ask, and return once the answer is streaming (a dozen events in)."""
    accepted = await ask(api)
    await read_events(api, accepted["events_url"], stop_after=12)
    return accepted


async def until(predicate, timeout: float = 30, interval: float = 0.05):
    async with asyncio.timeout(timeout):
        while not (value := await predicate()):
            await asyncio.sleep(interval)
        return value


async def running_on(run_id: str) -> int:
    """The pid of the worker holding the run's lease, once it has one."""

    async def owner():
        run = await ResearchRun.objects.filter(pk=run_id, status="running").exclude(lease_owner="").afirst()
        return run and int(run.lease_owner.split(":")[1])

    return await until(owner)


def answer_after_last_attempt(events) -> str:
    text = []
    for event in events:
        if event.type == "attempt":
            text = []
        elif event.type == "delta":
            text.append(event.data["text"])
    return "".join(text)


async def test_a_killed_worker_s_run_is_resumed_from_its_checkpoint_by_another(processes, fake_openai, api_key):
    script_research(fake_openai)
    await get_user_model().objects.filter(username="alice").aupdate(is_staff=True)
    _, url = processes.web()
    processes.worker()
    processes.worker()
    async with client(url, api_key) as api:

        async def two_workers_alive():
            return (await api.get("/api/status")).json()["workers"] == 2

        await until(two_workers_alive, timeout=15, interval=0.2)
        accepted = await answer_under_way(api)
        os.kill(await running_on(accepted["run_id"]), signal.SIGKILL)

        events = await read_events(api, accepted["events_url"])

    ids = [int(e.id.rsplit(":", 1)[1]) for e in events]
    assert ids == list(range(1, len(events) + 1))  # exactly once, in order
    types = [e.type for e in events]
    assert types.count("attempt") == 1 and types[-1] == "done" and types.count("done") == 1
    attempt = events[types.index("attempt")]
    assert attempt.data == {"n": 2, "reason": "worker_lost"}
    stored = await Message.objects.aget(pk=events[-1].data["message_id"])
    assert stored.content == answer_after_last_attempt(events)
    assert stored.content.startswith("Sentence 0") and "Sentence 39" in stored.content
    # The plan and the finished round came from the checkpoint: they were not asked again.
    assert len([r for r in fake_openai.requests if is_analysis(r)]) == 1
    assert len([r for r in fake_openai.requests if is_gap_report(r)]) == 1


async def test_a_worker_told_to_stop_hands_its_run_over(processes, fake_openai, api_key):
    script_research(fake_openai, synthesis_delay=0.1)
    _, url = processes.web()
    first = processes.worker(grace=0.5)
    async with client(url, api_key) as api:
        accepted = await answer_under_way(api)
        assert await running_on(accepted["run_id"]) == first.pid
        processes.worker()
        first.send_signal(signal.SIGTERM)
        started = time.monotonic()
        await asyncio.to_thread(first.wait, 20)
        stopped_after = time.monotonic() - started

        events = await read_events(api, accepted["events_url"])

    assert first.returncode == 0 and stopped_after < 10
    types = [e.type for e in events]
    assert events[types.index("attempt")].data == {"n": 2, "reason": "handed_over"}
    assert types[-1] == "done" and types.count("done") == 1
    stored = await Message.objects.aget(pk=events[-1].data["message_id"])
    assert stored.content == answer_after_last_attempt(events)


async def test_a_worker_told_to_stop_finishes_a_short_run_within_its_grace(processes, fake_openai, api_key):
    script_research(fake_openai, synthesis_delay=0.005)
    _, url = processes.web()
    worker = processes.worker(grace=15)
    async with client(url, api_key) as api:
        accepted = await ask(api)
        await read_events(api, accepted["events_url"], stop_after=3)
        worker.send_signal(signal.SIGTERM)
        events = await read_events(api, accepted["events_url"])
        await asyncio.to_thread(worker.wait, 20)

    assert "attempt" not in [e.type for e in events] and events[-1].type == "done"
    assert worker.returncode == 0


async def test_a_cancel_sent_to_another_web_process_reaches_the_worker_at_once(processes, fake_openai, api_key):
    script_research(fake_openai, synthesis_delay=0.1)
    _, url_a = processes.web()
    _, url_b = processes.web()
    processes.worker()
    async with client(url_a, api_key) as api_a, client(url_b, api_key) as api_b:
        accepted = await answer_under_way(api_a)
        started = time.monotonic()
        assert (await api_b.post(f"/api/runs/{accepted['run_id']}/cancel")).status_code == 202
        events = await read_events(api_a, accepted["events_url"])
        took = time.monotonic() - started

    assert events[-1].type == "error" and events[-1].data["code"] == "cancelled"
    assert took < 1.5  # the lease (1.5 s) did not have to run out: the worker heard it
    run = await ResearchRun.objects.aget(pk=accepted["run_id"])
    assert run.status == "cancelled"


async def test_a_streaming_v1_client_that_hangs_up_cancels_its_run_on_the_worker(processes, fake_openai, api_key):
    script_research(fake_openai, synthesis_delay=0.1)
    _, url = processes.web()
    processes.worker()
    body = {"model": "finance-research", "messages": [{"role": "user", "content": "How did Apple do?"}],
            "mode": "research", "stream": True}
    async with client(url, api_key) as api:
        async with api.stream("POST", "/v1/chat/completions", json=body) as response:
            async for line in response.aiter_lines():
                if '"content":"Sentence 0' in line:
                    break  # leaving the block closes the connection with the stream unread

    async def finished():
        run = await ResearchRun.objects.aget()
        return run.is_finished and run

    run = await until(finished, timeout=10)
    assert run.status == "cancelled"
    [synthesis] = [r for r in fake_openai.requests if getattr(r.reply, "sentences", None) == LONG_ANSWER]

    async def synthesis_ended():
        return synthesis.ended_at is not None

    await until(synthesis_ended, timeout=5)
    assert synthesis.client_closed, "the worker should close the synthesis stream at once"
    partial = await Message.objects.aget(pk=run.answer_id)
    assert partial.status == "incomplete" and partial.content.startswith("Sentence 0")


async def test_a_cancel_for_a_run_whose_worker_is_gone_ends_it_at_once(processes, fake_openai, api_key):
    script_research(fake_openai, synthesis_delay=0.1)
    _, url = processes.web()
    processes.worker()
    async with client(url, api_key) as api:
        accepted = await answer_under_way(api)
        os.kill(await running_on(accepted["run_id"]), signal.SIGKILL)
        await asyncio.sleep(0.2)  # the kernel closes the dead worker's Redis connection

        response = await api.post(f"/api/runs/{accepted['run_id']}/cancel")
        run = await ResearchRun.objects.aget(pk=accepted["run_id"])

    assert response.status_code == 202
    assert run.status == "cancelled" and run.error["code"] == "cancelled"
    partial = await Message.objects.aget(pk=run.answer_id)
    assert partial.status == "incomplete" and partial.content.startswith("Sentence 0")


async def test_a_frozen_worker_resumed_after_losing_its_run_publishes_nothing(processes, fake_openai, api_key):
    script_research(fake_openai, synthesis_delay=0.05)
    _, url = processes.web()
    processes.worker()
    processes.worker()
    async with client(url, api_key) as api:
        accepted = await answer_under_way(api)
        frozen = await running_on(accepted["run_id"])
        os.kill(frozen, signal.SIGSTOP)
        try:
            events = await read_events(api, accepted["events_url"])  # another worker finishes it
        finally:
            os.kill(frozen, signal.SIGCONT)
        await asyncio.sleep(2)  # the thawed worker goes on with its stale attempt
        after = (await api.get(accepted["events_url"], headers={"Last-Event-ID": events[-1].id})).text

    assert events[-1].type == "done"
    assert parse_frames(after) == [] or all(e.type in ("stream-open", "keep-alive") for e in parse_frames(after))
    assert await Message.objects.filter(role="assistant", conversation__runs=accepted["run_id"]).acount() == 1


async def test_a_run_that_used_up_its_attempts_ends_with_an_error_without_anyone_looking(fake_openai, api_key):
    script_research(fake_openai, synthesis_delay=0.1)
    with running_apps(RUNS_BACKEND="queue", RUNS_LEASE_SECONDS="1.5", RUNS_MAX_ATTEMPTS="1") as apps:
        _, url = apps.web()
        apps.worker()
        apps.worker()
        async with client(url, api_key) as api:
            accepted = await answer_under_way(api)
            os.kill(await running_on(accepted["run_id"]), signal.SIGKILL)

            async def ended():
                return await ResearchRun.objects.filter(pk=accepted["run_id"], status="error").afirst()

            run = await until(ended, timeout=15)
    assert run.error["code"] == "interrupted"


async def test_sigterm_on_a_web_process_closes_its_streams_and_clients_resume_on_another(processes, fake_openai, api_key):
    script_research(fake_openai, synthesis_delay=0.05)
    web_a, url_a = processes.web()
    _, url_b = processes.web()
    processes.worker()
    async with client(url_a, api_key) as api_a, client(url_b, api_key) as api_b:
        accepted = await ask(api_a)
        first = await read_events(api_a, accepted["events_url"], stop_after=8)
        reading = asyncio.create_task(read_events(api_a, accepted["events_url"], headers={"Last-Event-ID": first[-1].id}))
        await asyncio.sleep(0.3)
        web_a.send_signal(signal.SIGTERM)
        started = time.monotonic()
        cut = await asyncio.wait_for(reading, timeout=5)
        closed_after = time.monotonic() - started
        last_seen = (cut or first)[-1].id
        rest = await read_events(api_b, accepted["events_url"], headers={"Last-Event-ID": last_seen})

    assert closed_after < 2 and all(e.type not in ("done", "error") for e in cut)
    everything = first + cut + rest
    assert [int(e.id.rsplit(":", 1)[1]) for e in everything] == list(range(1, len(everything) + 1))
    assert everything[-1].type == "done"
