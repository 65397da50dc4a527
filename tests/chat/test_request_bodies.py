"""What a request body may be, and where it is parsed: at most 256 KB, read no further; at most 10,000 JSON
arrays and objects; parsed and validated off the event loop. Refusals store nothing."""

from __future__ import annotations

import asyncio

import pytest

from chat.models import Conversation, Message, ResearchRun

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 256 * 1024
LIMIT_NAMED = "over the limit of 262144 bytes (256 KB)"


def nested_arrays(count: int) -> bytes:
    return b"[" * count + b"]" * count


def json_padded_to(size: int, head: bytes, tail: bytes = b'"}') -> bytes:
    return head + b"x" * (size - len(head) - len(tail)) + tail


async def _conversation(api) -> str:
    response = await api.post("/api/conversations", json={})
    assert response.status_code == 201
    return response.json()["id"]


async def test_a_body_one_byte_over_the_limit_is_a_413_naming_it_and_stores_nothing(api):
    conversation_id = await _conversation(api)
    bodies = {
        "/api/conversations": json_padded_to(LIMIT + 1, b'{"title": "'),
        f"/api/conversations/{conversation_id}/messages": json_padded_to(LIMIT + 1, b'{"content": "'),
    }

    responses = {
        path: await api.post(path, content=body, headers={"Content-Type": "application/json"})
        for path, body in bodies.items()
    }

    for response in responses.values():
        assert response.status_code == 413
        error = response.json()["error"]
        assert error["code"] == "request_too_large" and LIMIT_NAMED in error["message"]
    assert await Conversation.objects.acount() == 1
    assert await Message.objects.acount() == 0 and await ResearchRun.objects.acount() == 0


async def test_a_body_at_the_limit_is_read(api):
    response = await api.post(
        "/api/conversations",
        content=json_padded_to(LIMIT, b'{"title": "'),
        headers={"Content-Type": "application/json"},
    )

    assert response.status_code == 400  # read and validated: the title is too long
    assert response.json()["error"]["message"] == "title: String should have at most 200 characters"


async def test_a_chunked_body_without_a_length_is_held_to_the_limit_too(api):
    conversation_id = await _conversation(api)

    async def chunks():
        yield b'{"content": "'
        for _ in range(5):
            yield b"x" * 65536
        yield b'"}'

    response = await api.post(
        f"/api/conversations/{conversation_id}/messages", content=chunks(), headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 413 and LIMIT_NAMED in response.json()["error"]["message"]
    assert await Message.objects.acount() == 0


async def test_the_app_reads_no_further_than_one_byte_past_the_limit_before_it_answers(api_key):
    """Played at the ASGI interface: the client sends 64 KB chunks, and the rest only once it has an answer.
    Django's own handler would wait for the whole body first, and never answer."""
    from config.asgi import application

    chunk = b"x" * 65536
    delivered = 0
    answered = asyncio.Event()
    sent: list[dict] = []

    async def receive() -> dict:
        nonlocal delivered
        if delivered * len(chunk) > LIMIT:
            await answered.wait()
            return {"type": "http.disconnect"}
        delivered += 1
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message: dict) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            answered.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/conversations",
        "raw_path": b"/api/conversations",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/json"),
            (b"authorization", f"Bearer {api_key}".encode()),
            (b"transfer-encoding", b"chunked"),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("testserver", 80),
    }
    await asyncio.wait_for(application(scope, receive, send), timeout=20)

    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 413
    assert delivered == LIMIT // len(chunk) + 1  # the chunk that went past the limit, and no more
    assert LIMIT_NAMED.encode() in b"".join(message.get("body", b"") for message in sent)
    assert await Conversation.objects.acount() == 0


async def test_a_body_with_more_than_10000_arrays_and_objects_is_a_400_naming_the_bound(api):
    conversation_id = await _conversation(api)
    body = b'{"content": "What is AAPL?", "nested": ' + nested_arrays(10_001) + b"}"

    response = await api.post(
        f"/api/conversations/{conversation_id}/messages", content=body, headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 400
    error = response.json()["error"]
    assert error == {
        "code": "invalid_request",
        "message": "The request body holds more than 10000 JSON arrays and objects.",
    }
    assert await Message.objects.acount() == 0


async def test_a_question_is_parsed_and_validated_off_the_event_loop(api, monkeypatch):
    """The time zone's check is part of the body's validation: it runs where the body is parsed."""
    from chat import schemas

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    checked_on_a_loop: list[bool] = []
    known_timezone = schemas.known_timezone

    def spying(name: str) -> str:
        try:
            asyncio.get_running_loop()
            checked_on_a_loop.append(True)
        except RuntimeError:
            checked_on_a_loop.append(False)
        return known_timezone(name)

    monkeypatch.setattr(schemas, "known_timezone", spying)
    conversation_id = await _conversation(api)

    response = await api.post(
        f"/api/conversations/{conversation_id}/messages", json={"content": "What is AAPL?", "timezone": "Europe/Paris"}
    )

    assert response.status_code == 202
    assert checked_on_a_loop == [False]
