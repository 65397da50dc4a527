"""A web process of the embedded default (in-process runs) stopped mid-answer, as a deploy stops it:
real uvicorn processes on the test database (SQLite or PostgreSQL), against the fake OpenAI server."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest

from chat.models import Message, ResearchRun
from tests.chat.test_run_processes import ask, client
from tests.fakes.openai_server import TextReply
from tests.processes import running_apps
from tests.sse import read_events

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processes]

LONG_ANSWER = [f"Sentence {n} of a long answer." for n in range(60)]


@pytest.fixture
def processes(fake_openai, api_key):
    with running_apps(RUNS_BACKEND="inprocess", RUNS_LEASE_SECONDS="1") as apps:
        yield apps


async def test_sigterm_ends_the_streams_at_once_and_the_lost_run_is_ended_with_what_it_streamed(
    processes, fake_openai, api_key
):
    fake_openai.script(TextReply(LONG_ANSWER, chunk_chars=10, delta_delay=0.05), times=None)
    web_a, url_a = processes.web()
    _, url_b = processes.web()
    async with client(url_a, api_key) as api_a, client(url_b, api_key) as api_b:
        accepted = await ask(api_a, mode="quick")
        first = await read_events(api_a, accepted["events_url"], stop_after=4)
        reading = asyncio.create_task(read_events(api_a, accepted["events_url"], headers={"Last-Event-ID": first[-1].id}))
        await asyncio.sleep(0.3)
        web_a.send_signal(signal.SIGTERM)
        started = time.monotonic()
        cut = await asyncio.wait_for(reading, timeout=10)
        closed_after = time.monotonic() - started
        await asyncio.to_thread(web_a.wait, 15)
        await asyncio.sleep(1.2)  # the dead process's lease runs out

        # The client resumes on the process that stays; the run that died with its process ends there.
        rest = await read_events(api_b, accepted["events_url"], headers={"Last-Event-ID": (cut or first)[-1].id})

    assert closed_after < 2 and all(e.type not in ("done", "error") for e in cut)
    everything = first + cut + rest
    assert [int(e.id.rsplit(":", 1)[1]) for e in everything] == list(range(1, len(everything) + 1))
    assert everything[-1].type == "error" and everything[-1].data["code"] == "interrupted"
    run = await ResearchRun.objects.aget(pk=accepted["run_id"])
    partial = await Message.objects.aget(pk=run.answer_id)
    streamed = "".join(e.data["text"] for e in everything if e.type == "delta")
    assert partial.status == "incomplete" and partial.content == streamed and streamed.startswith("Sentence 0")
