"""The quick answer path end to end, through the ASGI app, against the fake OpenAI server."""

from __future__ import annotations

import asyncio
import re
import threading
import uuid

import pytest

from chat.models import Message, ResearchRun
from tests.fakes.openai_server import ErrorReply, Sentence, TextReply
from tests.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)

CITED_ANSWER = TextReply(
    [
        Sentence("Apple reported revenue of $94.9 billion.", cites=[("https://www.reuters.com/apple-q4", "Apple Q4 - Reuters")]),
        Sentence("Services grew 12% year over year.", cites=[("https://www.cnbc.com/apple-services", "Services - CNBC")]),
        Sentence("Guidance was unchanged.", cites=[("https://www.reuters.com/apple-q4", "Apple Q4 - Reuters")]),
    ]
)


async def ask(api, content: str = "How did Apple's last quarter go?", mode: str = "quick") -> dict:
    conversation_id = (await api.post("/api/conversations", json={})).json()["id"]
    response = await api.post(f"/api/conversations/{conversation_id}/messages", json={"content": content, "mode": mode})
    assert response.status_code == 202, response.text
    return {"conversation_id": conversation_id, **response.json()}


async def wait_finished(api, run_id: str, timeout: float = 15) -> dict:
    async with asyncio.timeout(timeout):
        while True:
            run = (await api.get(f"/api/runs/{run_id}")).json()
            if run["status"] in ("done", "error", "cancelled"):
                return run
            await asyncio.sleep(0.05)


def answer_text(events) -> str:
    return "".join(e.data["text"] for e in events if e.type == "delta")


async def test_question_is_answered_streamed_cited_and_stored(api, fake_openai):
    fake_openai.script(CITED_ANSWER)
    accepted = await ask(api)
    await wait_finished(api, accepted["run_id"])  # subscribe late: after the run is over

    events = await read_events(api, accepted["events_url"])

    types = [e.type for e in events]
    assert types[0] == "status"
    assert "delta" in types and types.index("delta") < types.index("sources") < types.index("done")
    assert types[-1] == "done" and types.count("done") == 1
    text = answer_text(events)
    sources = next(e for e in events if e.type == "sources").data["sources"]
    assert [s["url"] for s in sources] == ["https://www.reuters.com/apple-q4", "https://www.cnbc.com/apple-services"]
    assert {s["kind"] for s in sources} == {"web"}
    assert sorted({int(n) for n in re.findall(r"\[(\d+)\]", text)}) == [1, 2]
    assert "utm_source" not in text and "](http" not in text
    done = events[-1].data
    assert done["run_id"] == accepted["run_id"]

    conversation = (await api.get(f"/api/conversations/{accepted['conversation_id']}")).json()
    user, assistant = conversation["messages"]
    assert (user["role"], user["content"]) == ("user", "How did Apple's last quarter go?")
    assert assistant["id"] == done["message_id"]
    assert (assistant["role"], assistant["content"], assistant["status"]) == ("assistant", text, "complete")
    assert assistant["sources"] == sources
    assert conversation["title"] == "How did Apple's last quarter go?"


async def test_every_event_has_an_id_and_arrives_once_in_order(api, fake_openai):
    fake_openai.script(TextReply(CITED_ANSWER.sentences, chunk_chars=3, delta_delay=0.01))
    accepted = await ask(api)

    events = await read_events(api, accepted["events_url"])  # subscribed while the answer streams

    numbers = [int(e.id.rsplit(":", 1)[1]) for e in events]
    assert numbers == list(range(1, len(events) + 1))
    assert all(e.id.startswith(f"run-{accepted['run_id']}:") for e in events)
    stored = await Message.objects.aget(pk=events[-1].data["message_id"])
    assert stored.content == answer_text(events)


@pytest.mark.parametrize("how", ["header", "query"])
async def test_reconnecting_with_last_event_id_resumes_exactly_once(api, fake_openai, how):
    fake_openai.script(TextReply(CITED_ANSWER.sentences, chunk_chars=2, delta_delay=0.01))
    accepted = await ask(api)
    url = accepted["events_url"]

    first = await read_events(api, url, stop_after=3)
    last_id = first[-1].id
    if how == "header":
        rest = await read_events(api, url, headers={"Last-Event-ID": last_id})
    else:
        rest = await read_events(api, f"{url}?lastEventId={last_id}")
    everything = await read_events(api, url)

    assert [e.id for e in first + rest] == [e.id for e in everything]
    assert answer_text(first + rest) == answer_text(everything)


async def test_bad_last_event_id_is_a_400(api, fake_openai):
    accepted = await ask(api)
    await wait_finished(api, accepted["run_id"])

    for value in ("garbage", "run-other:1", "999999"):
        response = await api.get(accepted["events_url"], headers={"Last-Event-ID": value})
        assert response.status_code == 400, value
        assert response.json()["error"]["code"] == "invalid_last_event_id"


async def test_answer_is_stored_with_no_client_listening(api, fake_openai):
    accepted = await ask(api)

    run = await wait_finished(api, accepted["run_id"])

    assert run["status"] == "done" and run["mode"] == "quick"
    answer = await Message.objects.aget(pk=run["message_id"])
    assert answer.role == "assistant" and answer.content
    assert run["usage"]["by_model"]["gpt-5.4"]["calls"] == 1
    assert run["timings"]["total_ms"] >= 0


async def test_without_api_key_the_run_errors_and_the_question_stays(api, monkeypatch):
    from datascraper.models_config import get_research_config

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    get_research_config.cache_clear()
    accepted = await ask(api)

    events = await read_events(api, accepted["events_url"])

    assert [e.type for e in events] == ["error"]
    assert events[0].data["code"] == "provider_not_configured"
    assert "message_id" not in events[0].data
    assert await Message.objects.filter(pk=accepted["message_id"], role="user").aexists()
    run = await ResearchRun.objects.aget(pk=accepted["run_id"])
    assert run.status == "error" and run.error["code"] == "provider_not_configured"


@pytest.mark.parametrize(
    ("reply", "code"),
    [(ErrorReply(429), "rate_limited"), (ErrorReply(500), "upstream_error")],
    ids=["429", "500"],
)
async def test_upstream_errors_after_retries_end_in_an_error_event(api, fake_openai, research_env, reply, code):
    research_env(RESEARCH_MAX_RETRIES="1")
    fake_openai.script(reply, times=None)
    accepted = await ask(api)

    events = await read_events(api, accepted["events_url"])

    assert events[-1].type == "error" and events[-1].data["code"] == code
    assert len(fake_openai.requests) == 2  # the first call and one retry
    assert await Message.objects.filter(role="assistant").acount() == 0


async def test_upstream_timeout_ends_in_an_error_event(api, fake_openai, research_env):
    research_env(RESEARCH_MAX_RETRIES="0", RESEARCH_REQUEST_TIMEOUT="0.3")
    fake_openai.script(TextReply(first_byte_delay=2))
    accepted = await ask(api)

    events = await read_events(api, accepted["events_url"])

    assert events[-1].type == "error" and events[-1].data["code"] == "upstream_timeout"


@pytest.mark.parametrize("interrupt", ["drop", "failed", "error"])
async def test_a_broken_stream_keeps_the_partial_answer_marked_incomplete(api, fake_openai, interrupt):
    fake_openai.script(TextReply(CITED_ANSWER.sentences, chunk_chars=5, interrupt=interrupt, after_deltas=6))
    accepted = await ask(api)

    events = await read_events(api, accepted["events_url"])

    error = events[-1]
    assert error.type == "error" and error.data["code"] in {"stream_interrupted", "upstream_error"}
    partial = await Message.objects.aget(pk=error.data["message_id"])
    assert partial.status == "incomplete"
    assert partial.content == answer_text(events) and partial.content
    run = await wait_finished(api, accepted["run_id"])
    assert run["status"] == "error" and run["message_id"] == error.data["message_id"]


async def test_cancel_ends_the_run_with_a_cancelled_error(api, fake_openai):
    fake_openai.script(TextReply(CITED_ANSWER.sentences, chunk_chars=2, delta_delay=0.05))
    accepted = await ask(api)
    await read_events(api, accepted["events_url"], stop_after=3)

    response = await api.post(f"/api/runs/{accepted['run_id']}/cancel")
    events = await read_events(api, accepted["events_url"])

    assert response.status_code == 202
    assert events[-1].type == "error" and events[-1].data["code"] == "cancelled"
    assert [e.type for e in events].count("error") == 1
    run = await wait_finished(api, accepted["run_id"])
    assert run["status"] == "cancelled"
    again = await api.post(f"/api/runs/{accepted['run_id']}/cancel")
    assert again.status_code == 409


async def test_follow_up_questions_carry_the_conversation_history(api, fake_openai):
    first = await ask(api, "What is Apple's ticker?")
    await wait_finished(api, first["run_id"])
    response = await api.post(
        f"/api/conversations/{first['conversation_id']}/messages", json={"content": "And its CEO?", "mode": "quick"}
    )
    await wait_finished(api, response.json()["run_id"])

    last_input = fake_openai.requests[-1].body["input"]
    assert [turn["role"] for turn in last_input] == ["user", "assistant", "user"]
    assert last_input[0]["content"] == "What is Apple's ticker?"
    assert last_input[-1]["content"] == "And its CEO?"


async def test_the_askers_time_zone_reaches_the_models(api, fake_openai):
    conversation_id = (await api.post("/api/conversations", json={})).json()["id"]
    accepted = (
        await api.post(
            f"/api/conversations/{conversation_id}/messages",
            json={"content": "How did the market close today?", "timezone": "Pacific/Kiritimati"},
        )
    ).json()

    await wait_finished(api, accepted["run_id"])

    assert (await ResearchRun.objects.aget(pk=accepted["run_id"])).timezone == "Pacific/Kiritimati"
    [analysis] = [request for request in fake_openai.requests if request.is_structured]
    assert "Pacific/Kiritimati" in analysis.instructions + analysis.input_text


async def test_a_cancel_arriving_while_the_answer_is_stored_does_not_lose_the_final_event(api, fake_openai, monkeypatch):
    from chat.services import attempts

    storing, release = asyncio.Event(), threading.Event()
    loop = asyncio.get_running_loop()
    finish_done = attempts.finish_done

    def slow_finish(*args):  # runs on a database thread
        loop.call_soon_threadsafe(storing.set)
        release.wait(timeout=10)
        return finish_done(*args)

    monkeypatch.setattr(attempts, "finish_done", slow_finish)
    accepted = await ask(api)
    await storing.wait()

    cancelling = asyncio.create_task(api.post(f"/api/runs/{accepted['run_id']}/cancel"))
    await asyncio.sleep(0.2)  # the cancel is in (on SQLite it queues behind the write being made)
    release.set()
    cancelled = await cancelling
    events = await read_events(api, accepted["events_url"])

    # Too late to stop it: accepted while the answer is being stored (202), or refused once it is (409,
    # where database calls queue behind one another, as on SQLite).
    assert cancelled.status_code in (202, 409)
    terminal = [e.type for e in events if e.type in ("done", "error")]
    assert terminal == ["done"]
    assert (await wait_finished(api, accepted["run_id"]))["status"] == "done"


async def test_a_server_shutdown_mid_run_ends_it_as_interrupted_not_cancelled(api, fake_openai):
    from chat.services import leases

    fake_openai.script(TextReply(CITED_ANSWER.sentences, chunk_chars=2, delta_delay=0.05))
    accepted = await ask(api)
    await read_events(api, accepted["events_url"], stop_after=3)

    task = leases.local_handle(uuid.UUID(accepted["run_id"])).task
    task.get_loop().call_soon_threadsafe(task.cancel)  # what uvicorn does to pending tasks on shutdown
    events = await read_events(api, accepted["events_url"])

    assert events[-1].type == "error" and events[-1].data["code"] == "interrupted"
    run = await wait_finished(api, accepted["run_id"])
    assert run["status"] == "error" and run["message_id"] == events[-1].data["message_id"]


async def test_a_subscriber_that_hangs_up_stops_listening_while_the_run_goes_on(api, fake_openai):
    from django_eventstream.views import get_listener_manager

    fake_openai.script(TextReply(CITED_ANSWER.sentences, chunk_chars=2, delta_delay=0.05))
    accepted = await ask(api)
    channel = f"run-{accepted['run_id']}"

    await read_events(api, accepted["events_url"], stop_after=3)  # then the client closes the stream
    async with asyncio.timeout(5):
        while channel in get_listener_manager().listeners_by_channel:
            await asyncio.sleep(0.02)

    assert (await wait_finished(api, accepted["run_id"]))["status"] == "done"  # the answer is still stored


async def test_a_failed_run_still_records_what_it_cost_and_did(api, fake_openai):
    fake_openai.script(TextReply(CITED_ANSWER.sentences, chunk_chars=5, interrupt="drop", after_deltas=6))
    accepted = await ask(api)

    run = await wait_finished(api, accepted["run_id"])

    assert run["status"] == "error" and run["error"]["code"] == "stream_interrupted"
    assert run["mode"] == "quick"
    assert run["usage"]["by_model"]["gpt-5.4"]["calls"] == 1
    assert run["signals"]["error"] == "stream_interrupted"
    assert run["timings"]["total_ms"] >= 0
