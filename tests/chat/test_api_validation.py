"""Bad input gets a clear 4xx JSON error and stores nothing; owners never see each other's data."""

from __future__ import annotations

import uuid

import pytest

from chat.models import Conversation, Message, ResearchRun

pytestmark = pytest.mark.django_db(transaction=True)


async def _conversation(api) -> str:
    response = await api.post("/api/conversations", json={})
    assert response.status_code == 201
    return response.json()["id"]


def _error_code(response) -> str:
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["message"]
    return body["error"]["code"]


@pytest.mark.parametrize(
    "body",
    [
        {"content": ""},
        {"content": "   \n\t "},
        {"content": "x" * 8001},
        {"content": "What is AAPL?", "mode": "deep"},
        {"content": 42},
        {"mode": "quick"},
        {"content": "What is AAPL?", "surprise": True},
    ],
    ids=["empty", "whitespace", "too-long", "unknown-mode", "not-a-string", "missing", "unknown-field"],
)
async def test_invalid_message_is_a_400_and_stores_nothing(api, body):
    conversation_id = await _conversation(api)

    response = await api.post(f"/api/conversations/{conversation_id}/messages", json=body)

    assert response.status_code == 400
    assert _error_code(response) == "invalid_request"
    assert await Message.objects.acount() == 0
    assert await ResearchRun.objects.acount() == 0


async def test_content_is_trimmed_and_8000_characters_are_accepted(api, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    conversation_id = await _conversation(api)

    response = await api.post(f"/api/conversations/{conversation_id}/messages", json={"content": "  " + "y" * 8000 + "  "})

    assert response.status_code == 202
    stored = await Message.objects.aget(pk=response.json()["message_id"])
    assert stored.content == "y" * 8000


async def test_malformed_json_is_a_400(api):
    conversation_id = await _conversation(api)

    response = await api.post(
        f"/api/conversations/{conversation_id}/messages",
        content=b'{"content": "unterminated',
        headers={"Content-Type": "application/json"},
    )

    assert response.status_code == 400
    assert _error_code(response) == "malformed_json"
    assert await Message.objects.acount() == 0


@pytest.mark.parametrize("path", ["/api/conversations/{id}", "/api/runs/{id}", "/api/runs/{id}/events"])
async def test_unknown_ids_are_404(api, path):
    response = await api.get(path.format(id=uuid.uuid4()))

    assert response.status_code == 404
    assert _error_code(response) == "not_found"


async def test_malformed_ids_are_404(api):
    for path in ("/api/conversations/not-a-uuid", "/api/runs/123"):
        response = await api.get(path)
        assert response.status_code == 404, path


async def test_posting_to_an_unknown_conversation_stores_nothing(api):
    response = await api.post(f"/api/conversations/{uuid.uuid4()}/messages", json={"content": "Hello"})

    assert response.status_code == 404
    assert await Message.objects.acount() == 0


async def test_wrong_api_key_is_a_401(live_server_url, transactional_db):
    import httpx2

    async with httpx2.AsyncClient(base_url=live_server_url) as client:
        response = await client.get("/api/conversations", headers={"Authorization": "Bearer frk_wrong"})

    assert response.status_code == 401
    assert _error_code(response) == "unauthorized"


async def test_other_owner_cannot_read_post_cancel_or_subscribe(api, other_api, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    conversation_id = await _conversation(api)
    accepted = (await api.post(f"/api/conversations/{conversation_id}/messages", json={"content": "Mine"})).json()
    run_id = accepted["run_id"]

    attempts = [
        await other_api.get(f"/api/conversations/{conversation_id}"),
        await other_api.post(f"/api/conversations/{conversation_id}/messages", json={"content": "Theirs"}),
        await other_api.get(f"/api/runs/{run_id}"),
        await other_api.post(f"/api/runs/{run_id}/cancel"),
        await other_api.get(f"/api/runs/{run_id}/events"),
        await other_api.get(f"/api/runs/{run_id}/events?lastEventId=run-{run_id}:0"),
    ]

    assert [r.status_code for r in attempts] == [404] * len(attempts)
    assert (await other_api.get("/api/conversations")).json() == []
    assert await Message.objects.filter(content="Theirs").acount() == 0


async def test_anonymous_sessions_own_their_conversations(live_server_url, transactional_db):
    import httpx2

    async with httpx2.AsyncClient(base_url=live_server_url) as first, httpx2.AsyncClient(base_url=live_server_url) as second:
        created = await first.post("/api/conversations", json={"title": "Mine"})
        assert created.status_code == 201
        conversation_id = created.json()["id"]

        assert (await first.get(f"/api/conversations/{conversation_id}")).status_code == 200
        assert (await second.get(f"/api/conversations/{conversation_id}")).status_code == 404
        assert [c["id"] for c in (await first.get("/api/conversations")).json()] == [conversation_id]


async def test_conversations_are_listed_newest_first(api):
    first = await _conversation(api)
    second = await _conversation(api)

    listed = (await api.get("/api/conversations")).json()

    assert [c["id"] for c in listed] == [second, first]
    assert await Conversation.objects.acount() == 2


async def test_openapi_docs_are_served(api):
    assert (await api.get("/api/docs")).status_code == 200
    schema = (await api.get("/api/openapi.json")).json()
    assert "/api/conversations/{conversation_id}/messages" in schema["paths"]
    assert "/api/runs/{run_id}/events" in schema["paths"]


async def test_an_unknown_time_zone_is_a_400_and_stores_nothing(api):
    conversation_id = await _conversation(api)

    response = await api.post(
        f"/api/conversations/{conversation_id}/messages", json={"content": "What happened today?", "timezone": "Mars/Base"}
    )

    assert response.status_code == 400
    assert "time zone" in response.json()["error"]["message"]
    assert await Message.objects.acount() == 0


async def test_an_authorization_header_that_is_not_a_bearer_key_is_a_401(live_server_url, transactional_db):
    import httpx2

    async with httpx2.AsyncClient(base_url=live_server_url) as client:
        for header in ("Token frk_abc", "Basic YWxpY2U6cHc=", "frk_abc"):
            response = await client.post("/api/conversations", json={}, headers={"Authorization": header})
            assert response.status_code == 401, header
    assert await Conversation.objects.acount() == 0


async def test_anonymous_callers_can_be_turned_away(live_server_url, transactional_db, settings):
    import httpx2

    settings.CHAT_ALLOW_ANONYMOUS = False
    async with httpx2.AsyncClient(base_url=live_server_url) as client:
        response = await client.post("/api/conversations", json={})

    assert response.status_code == 401
    assert _error_code(response) == "unauthorized"


@pytest.mark.parametrize("path", ["/api/nothing-here", "/api/runs/not-a-uuid/events", "/api/conversations/x/y/z"])
async def test_unknown_api_paths_answer_in_the_json_error_shape(api, path):
    response = await api.get(path)

    assert response.status_code == 404
    assert _error_code(response) == "not_found"


async def test_an_oversized_body_is_a_413(api):
    conversation_id = await _conversation(api)

    response = await api.post(
        f"/api/conversations/{conversation_id}/messages",
        content=b'{"content": "' + b"x" * 3_000_000 + b'"}',
        headers={"Content-Type": "application/json"},
    )

    assert response.status_code == 413
    assert _error_code(response) == "request_too_large"
    assert await Message.objects.acount() == 0
