"""Browser-session callers pass Django's CSRF check on unsafe requests; API-key callers need no token.

Real HTTP against the live app: Django's test client skips CSRF checks unless told otherwise, so only a
real client proves the check is there.
"""

from __future__ import annotations

import httpx2
import pytest

from chat.models import Conversation, Message, ResearchRun
from tests.fakes.openai_server import TextReply
from tests.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def browser(live_server_url):
    """A browser that has opened the page (the CSRF cookie) and started its session with a first write
    (a cookieless one needs no token); the conversation that write made is removed, so tests count from 0."""
    async with httpx2.AsyncClient(base_url=live_server_url, timeout=20) as client:
        assert (await client.get("/")).status_code == 200
        assert (await client.post("/api/conversations", json={})).status_code == 201
        assert client.cookies.get("sessionid")
        await Conversation.objects.all().adelete()
        yield client


def token(browser: httpx2.AsyncClient) -> dict[str, str]:
    return {"X-CSRFToken": browser.cookies["csrftoken"]}


def error_of(response: httpx2.Response) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"}
    return body["error"]


async def test_the_page_sets_the_csrf_cookie_its_script_sends(live_server_url):
    async with httpx2.AsyncClient(base_url=live_server_url) as client:
        page = await client.get("/")

    assert page.status_code == 200
    [cookie] = [c for c in page.headers.get_list("set-cookie") if c.startswith("csrftoken=")]
    assert "httponly" not in cookie.lower(), "the page's script must be able to read the token"
    assert client.cookies.get("csrftoken")


async def test_a_session_client_that_skips_the_page_gets_the_cookie_from_any_api_call(live_server_url):
    async with httpx2.AsyncClient(base_url=live_server_url) as client:
        # No cookie yet: this request cannot act on anyone's data, so it needs no token; it starts a session.
        created = await client.post("/api/conversations", json={})
        assert created.status_code == 201 and client.cookies.get("csrftoken")

        listed = await client.get("/api/conversations")
        again = await client.post("/api/conversations", json={}, headers={"X-CSRFToken": client.cookies["csrftoken"]})

    assert listed.status_code == 200 and again.status_code == 201
    assert await Conversation.objects.acount() == 2


async def test_a_session_post_without_the_token_is_refused_and_stores_nothing(browser):
    conversation_id = (await browser.post("/api/conversations", json={}, headers=token(browser))).json()["id"]

    refused = [
        await browser.post("/api/conversations", json={"title": "Forged"}),
        await browser.post(f"/api/conversations/{conversation_id}/messages", json={"content": "Sell everything?"}),
    ]

    assert [r.status_code for r in refused] == [403, 403]
    assert {error_of(r)["code"] for r in refused} == {"csrf_failed"}
    assert "CSRF token missing" in error_of(refused[0])["message"]
    assert await Conversation.objects.acount() == 1
    assert await Message.objects.acount() == 0
    assert await ResearchRun.objects.acount() == 0


async def test_a_session_cancel_without_the_token_leaves_the_run_alone(browser, fake_openai):
    fake_openai.set_default(TextReply(first_byte_delay=30))  # the run stays in flight while we try
    conversation_id = (await browser.post("/api/conversations", json={}, headers=token(browser))).json()["id"]
    accepted = await browser.post(
        f"/api/conversations/{conversation_id}/messages", json={"content": "How did Apple do?", "mode": "quick"},
        headers=token(browser),
    )
    run_id = accepted.json()["run_id"]

    forged = await browser.post(f"/api/runs/{run_id}/cancel")
    assert forged.status_code == 403 and error_of(forged)["code"] == "csrf_failed"
    assert not (await ResearchRun.objects.aget(pk=run_id)).cancel_requested

    assert (await browser.post(f"/api/runs/{run_id}/cancel", headers=token(browser))).status_code == 202


async def test_a_session_post_with_the_pages_token_is_accepted(browser, fake_openai):
    created = await browser.post("/api/conversations", json={"title": "Mine"}, headers=token(browser))
    assert created.status_code == 201

    accepted = await browser.post(
        f"/api/conversations/{created.json()['id']}/messages",
        json={"content": "How did Apple do?"},
        headers=token(browser),
    )

    assert accepted.status_code == 202
    assert await Message.objects.filter(role="user", content="How did Apple do?").acount() == 1
    # The session can watch its run; reading it to its end also keeps the run from writing while the
    # next test's database flush runs.
    events = await read_events(browser, accepted.json()["events_url"])
    assert events[-1].type == "done"


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({"X-CSRFToken": "x" * 32}, "incorrect"),
        ({"Origin": "https://evil.example"}, "Origin checking failed"),
    ],
    ids=["wrong-token", "other-origin"],
)
async def test_a_wrong_token_or_another_sites_origin_is_refused_with_djangos_reason(browser, headers, reason):
    response = await browser.post("/api/conversations", json={}, headers={**token(browser), **headers})

    assert response.status_code == 403
    assert error_of(response)["code"] == "csrf_failed"
    assert reason in error_of(response)["message"]
    assert await Conversation.objects.acount() == 0


async def test_bearer_callers_need_no_token_even_with_a_session_cookie(browser, api_key, fake_openai):
    bearer = {"Authorization": f"Bearer {api_key}"}

    created = await browser.post("/api/conversations", json={}, headers=bearer)
    accepted = await browser.post(
        f"/api/conversations/{created.json()['id']}/messages", json={"content": "How did Apple do?"}, headers=bearer
    )

    assert (created.status_code, accepted.status_code) == (201, 202)
    assert (await Conversation.objects.select_related("user").aget()).user.username == "alice"


async def test_the_openai_endpoint_takes_api_keys_only_never_the_session(browser):
    body = {"model": "finance-research", "messages": [{"role": "user", "content": "How did Apple do?"}]}

    response = await browser.post("/v1/chat/completions", json=body, headers=token(browser))

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
    assert await Conversation.objects.acount() == 0


@pytest.mark.parametrize("with_key", [False, True], ids=["session", "bearer"])
async def test_a_post_to_an_unknown_api_path_is_a_json_404(browser, api_key, with_key):
    headers = {"Authorization": f"Bearer {api_key}"} if with_key else {}

    response = await browser.post("/api/nowhere", json={}, headers=headers)

    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"
