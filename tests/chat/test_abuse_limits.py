"""Limits that hold for someone who starts new sessions, holds streams open or guesses keys (issue 23).

Real requests through the app. The live server's clients all connect from 127.0.0.1, one address, which
is what a script on one machine looks like; tests that need several addresses drive the ASGI app with a
chosen socket peer instead.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.contrib.sessions.models import Session

from chat.models import Conversation, Message, ResearchRun
from tests.chat.test_admission import assert_refused, stored_questions
from tests.chat.test_runs import ask, wait_finished
from tests.fakes.openai_server import TextReply

pytestmark = pytest.mark.django_db(transaction=True)


def fresh_browser(live_server_url: str) -> httpx2.AsyncClient:
    """A client with no cookies: a new visitor, or a script that drops its cookies every time."""
    return httpx2.AsyncClient(base_url=live_server_url, timeout=20)


async def first_question(browser: httpx2.AsyncClient, content: str) -> httpx2.Response:
    """What a fresh visitor does: a conversation (its first write, which starts the session), then a question."""
    created = await browser.post("/api/conversations", json={})
    if created.status_code != 201:
        return created
    csrf = {"X-CSRFToken": browser.cookies["csrftoken"]}
    body = {"content": content, "mode": "quick"}
    return await browser.post(f"/api/conversations/{created.json()['id']}/messages", json=body, headers=csrf)


@sync_to_async
def session_rows() -> int:
    return Session.objects.count()


# --- many fresh sessions from one address ----------------------------------------------------------------


async def test_questions_from_fresh_sessions_are_held_by_the_address_rate(live_server_url, fake_openai, limits):
    limits(CHAT_RATE_LIMIT="3/h", CHAT_ADDRESS_RATE_LIMIT="3/h")
    async with AsyncExitStack() as stack:
        browsers = [await stack.enter_async_context(fresh_browser(live_server_url)) for _ in range(8)]

        responses = await asyncio.gather(*(first_question(b, f"Question {n}") for n, b in enumerate(browsers)))

        accepted = [(b, r) for b, r in zip(browsers, responses, strict=True) if r.status_code == 202]
        for browser, response in accepted:
            await wait_finished(browser, response.json()["run_id"])

    assert len(accepted) == 3
    for refused in (r for r in responses if r.status_code != 202):
        assert_refused(refused, "rate_limited")
        assert "your address" in refused.json()["error"]["message"]
    assert len(await stored_questions()) == 3
    assert await ResearchRun.objects.acount() == 3


async def test_new_sessions_from_one_address_are_limited(live_server_url, limits):
    limits(CHAT_ADDRESS_SESSION_RATE_LIMIT="2/h")
    async with AsyncExitStack() as stack:
        browsers = [await stack.enter_async_context(fresh_browser(live_server_url)) for _ in range(3)]
        responses = [await browser.post("/api/conversations", json={}) for browser in browsers]

    assert [r.status_code for r in responses[:2]] == [201, 201]
    assert assert_refused(responses[2], "rate_limited") <= 3600  # a fixed window of an hour, its start per key
    assert "sessionid" not in responses[2].cookies
    assert await session_rows() == 2
    assert await Conversation.objects.acount() == 2


# --- sessions only when needed ---------------------------------------------------------------------------


async def test_cookieless_reads_store_no_session_and_the_first_write_stores_one(live_server_url):
    async with AsyncExitStack() as stack:
        readers = [await stack.enter_async_context(fresh_browser(live_server_url)) for _ in range(20)]
        pages = [await reader.get("/") for reader in readers[:10]]
        listings = [await reader.get("/api/conversations") for reader in readers[10:]]

        assert [r.status_code for r in pages + listings] == [200] * 20
        assert all(listing.json() == [] for listing in listings)
        assert not any("sessionid" in r.cookies for r in pages + listings)
        assert await session_rows() == 0

        writer = readers[0]  # opened the page: it has the CSRF cookie, not yet a session
        created = await writer.post("/api/conversations", json={})
        listed = await writer.get("/api/conversations")

    assert created.status_code == 201 and writer.cookies.get("sessionid")
    assert await session_rows() == 1
    assert [c["id"] for c in listed.json()] == [created.json()["id"]]


async def test_cookieless_readers_are_counted_by_address_toward_the_api_rate(live_server_url, limits):
    limits(CHAT_API_RATE_LIMIT="3/h")
    async with AsyncExitStack() as stack:
        readers = [await stack.enter_async_context(fresh_browser(live_server_url)) for _ in range(4)]
        responses = [await reader.get("/api/conversations") for reader in readers]

    assert [r.status_code for r in responses[:3]] == [200, 200, 200]
    assert_refused(responses[3], "rate_limited")


async def test_a_cookieless_reader_owns_nothing_of_anyone_elses(live_server_url):
    """No session is not a session key of None that matches someone's rows."""
    await sync_to_async(Conversation.objects.create)(session_key="someone-elses-session", title="Theirs")
    async with fresh_browser(live_server_url) as reader:
        listed = await reader.get("/api/conversations")

    assert listed.json() == []


# --- event streams ---------------------------------------------------------------------------------------


async def test_opening_an_event_stream_counts_toward_the_api_rate(api, fake_openai, limits):
    limits(CHAT_API_RATE_LIMIT="4/h")
    accepted = await ask(api)  # requests 1 and 2

    first = await api.get(accepted["events_url"])  # 3: read to the run's end
    second = await api.get(accepted["events_url"])  # 4
    third = await api.get(accepted["events_url"])

    assert (first.status_code, second.status_code) == (200, 200)
    assert "event: done" in first.text
    assert_refused(third, "rate_limited")


@pytest.fixture
async def slow_run(api, fake_openai):
    """A run of alice's that stays in flight (cancelled and awaited when the test ends)."""
    fake_openai.script(TextReply(first_byte_delay=30))
    accepted = await ask(api)
    yield accepted
    await api.post(f"/api/runs/{accepted['run_id']}/cancel")
    await wait_finished(api, accepted["run_id"])


async def open_stream(stack: AsyncExitStack, client: httpx2.AsyncClient, url: str) -> httpx2.Response:
    """A stream held open (headers read, body not) until the stack closes."""
    return await stack.enter_async_context(client.stream("GET", url))


async def test_open_streams_per_owner_are_capped_and_a_closed_one_frees_its_place(api, slow_run, limits):
    limits(CHAT_MAX_STREAMS_PER_OWNER=2)
    url = slow_run["events_url"]
    async with AsyncExitStack() as held:
        streams = [await open_stream(held, api, url) for _ in range(2)]
        refused = await api.get(url)
        assert [s.status_code for s in streams] == [200, 200]
        assert_refused(refused, "too_many_streams")

    async with asyncio.timeout(5):  # the server hears the hang-ups and gives the places back
        while (again := await api.get(url, headers={"Last-Event-ID": "x"})).status_code == 429:
            await asyncio.sleep(0.05)
    assert again.status_code == 400  # admitted, then its bad Last-Event-ID answered: nothing held
    async with AsyncExitStack() as held:
        assert (await open_stream(held, api, url)).status_code == 200


async def test_open_streams_per_address_are_capped_whoever_the_owner(api, other_api, slow_run, limits):
    limits(CHAT_MAX_STREAMS_PER_OWNER=10, CHAT_MAX_STREAMS_PER_ADDRESS=2)
    mallorys = await ask(other_api)
    try:
        async with AsyncExitStack() as held:
            await open_stream(held, api, slow_run["events_url"])
            await open_stream(held, api, slow_run["events_url"])

            refused = await other_api.get(mallorys["events_url"])

        assert_refused(refused, "too_many_streams")
    finally:
        await other_api.post(f"/api/runs/{mallorys['run_id']}/cancel")
        await wait_finished(other_api, mallorys["run_id"])


# --- API keys and /v1 ------------------------------------------------------------------------------------


async def test_wrong_keys_from_one_address_are_limited_on_the_api_and_v1(live_server_url, api_key, limits):
    limits(CHAT_AUTH_FAILURE_RATE_LIMIT="3/h")
    wrong = {"Authorization": "Bearer frc_not-a-real-key"}
    right = {"Authorization": f"Bearer {api_key}"}
    async with fresh_browser(live_server_url) as client:
        failures = [
            await client.get("/api/conversations", headers=wrong),
            await client.get("/v1/models", headers=wrong),
            await client.post("/v1/chat/completions", headers=wrong, json={}),
        ]
        api_refused = await client.get("/api/conversations", headers=right)
        v1_refused = await client.get("/v1/models", headers=right)

    assert [r.status_code for r in failures] == [401, 401, 401]
    assert_refused(api_refused, "rate_limited")
    assert v1_refused.status_code == 429
    assert v1_refused.json()["error"]["type"] == "rate_limit_error"
    assert int(v1_refused.headers["Retry-After"]) >= 1


async def test_v1_requests_count_toward_the_api_rate(api, limits):
    limits(CHAT_API_RATE_LIMIT="3/h")
    responses = [await api.get("/v1/models") for _ in range(2)] + [await api.get("/api/conversations")]

    refused = await api.get("/v1/models")

    assert [r.status_code for r in responses] == [200, 200, 200]
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limited"
    assert refused.json()["error"]["type"] == "rate_limit_error"
    assert int(refused.headers["Retry-After"]) >= 1


# --- which address --------------------------------------------------------------------------------------


def app_client(peer: str) -> httpx2.AsyncClient:
    """The ASGI app itself, reached from socket peer `peer` (no server in between to rewrite it)."""
    from config.asgi import application

    return httpx2.AsyncClient(transport=httpx2.ASGITransport(application, client=(peer, 40000)), base_url="http://testserver")


async def new_session_from(peer: str, forwarded_for: str | None = None) -> int:
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    async with app_client(peer) as client:
        return (await client.post("/api/conversations", json={}, headers=headers)).status_code


async def test_ipv6_clients_are_counted_by_their_64_block(limits):
    limits(CHAT_ADDRESS_SESSION_RATE_LIMIT="1/h")

    statuses = [
        await new_session_from("2001:db8:1:2::1"),
        await new_session_from("2001:db8:1:2:ffff:ffff:ffff:fffe"),  # the same /64
        await new_session_from("2001:db8:1:3::1"),  # the next one
        await new_session_from("198.51.100.7"),
        await new_session_from("::ffff:198.51.100.7"),  # the same IPv4, mapped
    ]

    assert statuses == [201, 429, 201, 201, 429]


async def test_the_forwarded_address_counts_only_from_a_trusted_proxy(limits, settings):
    limits(CHAT_ADDRESS_SESSION_RATE_LIMIT="1/h")
    settings.TRUSTED_PROXIES = ["10.0.0.0/24"]

    statuses = [
        await new_session_from("203.0.113.9", forwarded_for="198.51.100.7"),
        await new_session_from("203.0.113.9", forwarded_for="192.0.2.1"),  # not a proxy: its header is ignored
        await new_session_from("10.0.0.1", forwarded_for="198.51.100.7"),  # counted as 198.51.100.7
        await new_session_from("10.0.0.2", forwarded_for="198.51.100.7"),
        await new_session_from("10.0.0.1", forwarded_for="192.0.2.1, 10.0.0.3"),  # through two proxies
        await new_session_from("10.0.0.1", forwarded_for="192.0.2.1"),
    ]

    assert statuses == [201, 429, 201, 429, 201, 429]
    assert await Message.objects.acount() == 0
