"""Admission control: per-owner rates and a cap on runs in flight, answered 429 with nothing stored."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.utils import timezone

from chat.models import ApiKey, Conversation, Message, ResearchRun
from tests.chat.test_runs import ask, wait_finished
from tests.fakes.openai_server import TextReply

pytestmark = pytest.mark.django_db(transaction=True)

@pytest.fixture
async def settled(api, fake_openai):
    """Alice's runs still in flight when the test ends are cancelled and awaited, so that none of them
    writes while the database is being emptied for the next test."""
    yield
    in_flight = ResearchRun.objects.filter(status__in=("queued", "running"), conversation__user__username="alice")
    run_ids = [str(run_id) async for run_id in in_flight.values_list("id", flat=True)]
    for run_id in run_ids:
        await api.post(f"/api/runs/{run_id}/cancel")
    for run_id in run_ids:
        await wait_finished(api, run_id)


@pytest.fixture
def slow_answers(fake_openai, settled):
    """`slow_answers(n)` keeps the next n runs in flight for 5 s."""

    def script(times: int = 1) -> None:
        fake_openai.script(TextReply(first_byte_delay=5), times=times)

    return script


async def new_conversation(api) -> str:
    return (await api.post("/api/conversations", json={})).json()["id"]


async def post_question(api, conversation_id: str, content: str):
    return await api.post(f"/api/conversations/{conversation_id}/messages", json={"content": content, "mode": "quick"})


def assert_refused(response, code: str) -> int:
    """A 429 in the API's error shape; returns its Retry-After in seconds."""
    assert response.status_code == 429, response.text
    assert response.json()["error"]["code"] == code
    assert response.json()["error"]["message"]
    retry_after = int(response.headers["Retry-After"])
    assert retry_after >= 1
    return retry_after


@sync_to_async
def stored_questions() -> list[str]:
    return list(Message.objects.filter(role="user").order_by("created_at").values_list("content", flat=True))


async def test_a_question_over_the_rate_is_a_429_with_retry_after_and_stores_nothing(api, settled, limits):
    limits(CHAT_RATE_LIMIT="2/h")
    conversation_id = await new_conversation(api)
    assert (await post_question(api, conversation_id, "First?")).status_code == 202
    assert (await post_question(api, conversation_id, "Second?")).status_code == 202

    refused = await post_question(api, conversation_id, "Third?")

    assert assert_refused(refused, "rate_limited") <= 3600
    assert await stored_questions() == ["First?", "Second?"]
    assert await ResearchRun.objects.acount() == 2


async def test_another_owner_is_not_held_back_by_one_owners_limits(api, other_api, slow_answers, limits):
    limits(CHAT_RATE_LIMIT="1/h", CHAT_MAX_CONCURRENT_RUNS=1)
    slow_answers()
    await ask(api, "Alice's question")
    assert_refused(await post_question(api, await new_conversation(api), "Alice again"), "too_many_runs")

    accepted = await ask(other_api, "Mallory's question")

    assert accepted["run_id"]
    assert sorted(await stored_questions()) == ["Alice's question", "Mallory's question"]


async def test_two_anonymous_sessions_are_two_owners(live_server_url, fake_openai, limits):
    import httpx2

    limits(CHAT_RATE_LIMIT="1/h")

    async def browser_asks(browser: httpx2.AsyncClient, content: str):
        await browser.get("/api/conversations")  # the session and its CSRF cookie
        csrf = {"X-CSRFToken": browser.cookies.get("csrftoken")}
        conversation_id = (await browser.post("/api/conversations", json={}, headers=csrf)).json()["id"]
        body = {"content": content, "mode": "quick"}
        return await browser.post(f"/api/conversations/{conversation_id}/messages", json=body, headers=csrf)

    first, second = httpx2.AsyncClient(base_url=live_server_url), httpx2.AsyncClient(base_url=live_server_url)
    async with first, second:
        one = await browser_asks(first, "One")
        two = await browser_asks(first, "Two")
        three = await browser_asks(second, "Three")
        for browser, accepted in ((first, one), (second, three)):
            assert accepted.status_code == 202
            await wait_finished(browser, accepted.json()["run_id"])

    assert_refused(two, "rate_limited")

    assert sorted(await stored_questions()) == ["One", "Three"]


async def test_at_the_maximum_of_runs_in_flight_a_question_is_refused_until_one_is_cancelled(api, slow_answers, limits):
    limits(CHAT_MAX_CONCURRENT_RUNS=2)
    slow_answers(2)
    first = await ask(api, "One")
    await ask(api, "Two")

    refused = await post_question(api, first["conversation_id"], "Three")

    assert assert_refused(refused, "too_many_runs") == 5
    assert await stored_questions() == ["One", "Two"]
    assert (await api.post(f"/api/runs/{first['run_id']}/cancel")).status_code == 202
    assert (await wait_finished(api, first["run_id"]))["status"] == "cancelled"
    assert (await post_question(api, first["conversation_id"], "Three")).status_code == 202


async def test_a_question_is_accepted_again_once_the_run_in_flight_finishes(api, fake_openai, settled, limits):
    limits(CHAT_MAX_CONCURRENT_RUNS=1)
    fake_openai.script(TextReply(first_byte_delay=1))
    first = await ask(api, "One")
    assert_refused(await post_question(api, first["conversation_id"], "Two"), "too_many_runs")

    assert (await wait_finished(api, first["run_id"]))["status"] == "done"

    assert (await post_question(api, first["conversation_id"], "Two")).status_code == 202
    assert await stored_questions() == ["One", "Two"]


@sync_to_async
def abandoned_run() -> ResearchRun:
    """A run left `running` five minutes ago by a server process that died without a sign of life since."""
    owner = ApiKey.objects.get(user__username="alice").user
    conversation = Conversation.objects.create(user=owner, title="Apple")
    question = Message.objects.create(conversation=conversation, role="user", content="Abandoned")
    run = ResearchRun.objects.create(conversation=conversation, user_message=question, status="running")
    ResearchRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    return run


async def test_a_run_whose_process_died_does_not_hold_a_slot(api, settled, limits):
    limits(CHAT_MAX_CONCURRENT_RUNS=1)
    dead = await abandoned_run()

    accepted = await ask(api, "Fresh question")

    assert accepted["run_id"]
    assert (await ResearchRun.objects.aget(pk=dead.pk)).status == "error"  # ended as interrupted on the way


async def test_every_api_request_counts_against_the_looser_api_rate(api, other_api, limits):
    limits(CHAT_API_RATE_LIMIT="3/h")
    for _ in range(3):
        assert (await api.get("/api/conversations")).status_code == 200

    refused = await api.post("/api/conversations", json={})

    assert_refused(refused, "rate_limited")
    assert await Conversation.objects.acount() == 0
    assert (await other_api.get("/api/conversations")).status_code == 200


async def test_limits_set_to_off_admit_everything(api, slow_answers, limits):
    limits(CHAT_RATE_LIMIT=None, CHAT_API_RATE_LIMIT=None, CHAT_MAX_CONCURRENT_RUNS=0)
    slow_answers(3)
    conversation_id = await new_conversation(api)

    responses = [await post_question(api, conversation_id, f"Question {n}") for n in range(3)]

    assert [r.status_code for r in responses] == [202, 202, 202]


# --- what staff see -------------------------------------------------------------------------------------


@sync_to_async
def queued_runs(count: int, *, waiting_for: timedelta) -> None:
    """Runs waiting their turn in some other owner's conversation, nobody answering them yet."""
    owner = get_user_model().objects.create_user("bob")
    conversation = Conversation.objects.create(user=owner, title="Queued")
    for n in range(count):
        question = Message.objects.create(conversation=conversation, role="user", content=f"Queued {n}")
        run = ResearchRun.objects.create(conversation=conversation, user_message=question)
        ResearchRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - waiting_for)


async def wait_running(api, run_id: str) -> None:
    import asyncio

    async with asyncio.timeout(5):
        while (await api.get(f"/api/runs/{run_id}")).json()["status"] != "running":
            await asyncio.sleep(0.05)


async def test_staff_see_the_queue_depth_and_the_runs_answering(api, slow_answers, limits):
    limits(
        CHAT_RATE_LIMIT="30/m",
        CHAT_API_RATE_LIMIT="600/m",
        CHAT_MAX_CONCURRENT_RUNS=5,
        CHAT_MAX_STREAMS_PER_OWNER=10,
        CHAT_ADDRESS_RATE_LIMIT="60/m",
        CHAT_ADDRESS_SESSION_RATE_LIMIT="30/h",
        CHAT_AUTH_FAILURE_RATE_LIMIT="10/m",
        CHAT_MAX_STREAMS_PER_ADDRESS=40,
    )
    await get_user_model().objects.filter(username="alice").aupdate(is_staff=True)
    slow_answers()
    running = await ask(api, "Slow one")
    await wait_running(api, running["run_id"])
    await queued_runs(2, waiting_for=timedelta(seconds=30))

    response = await api.get("/api/status")

    assert response.status_code == 200, response.text
    status = response.json()
    assert status["runs"] == {"queued": 2, "running": 1}
    assert 30 <= status["oldest_queued_s"] < 60
    assert 0 <= status["oldest_running_s"] < 5
    assert status["limits"] == {
        "rate": "30/m",
        "api_rate": "600/m",
        "max_concurrent_runs": 5,
        "max_streams_per_owner": 10,
        "address_rate": "60/m",
        "address_session_rate": "30/h",
        "auth_failure_rate": "10/m",
        "max_streams_per_address": 40,
    }
    assert (status["backend"], status["workers"]) == ("inprocess", None)


async def test_the_status_is_a_404_for_anyone_but_staff(api, live_server_url, limits):
    import httpx2

    async with httpx2.AsyncClient(base_url=live_server_url) as anonymous:
        responses = [await api.get("/api/status"), await anonymous.get("/api/status")]

    for response in responses:
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


@pytest.mark.django_db
def test_the_admin_lists_runs_by_status(client):
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin)
    conversation = Conversation.objects.create(user=admin, title="Apple")
    for status in ("queued", "running", "done"):
        question = Message.objects.create(conversation=conversation, role="user", content=status)
        ResearchRun.objects.create(conversation=conversation, user_message=question, status=status)

    listed = client.get("/admin/chat/researchrun/", {"status__exact": "queued"})

    assert listed.status_code == 200
    assert [run.status for run in listed.context["cl"].result_list] == ["queued"]
