"""The fake Anthropic API is as strict as the real one and speaks its wire: checked with the real SDK alone."""

from __future__ import annotations

import anthropic
import httpx2
import pytest

from tests.fakes.anthropic_server import API_KEY, FakeAnthropicServer
from tests.fakes.anthropic_wire import TextAnswer
from tests.fakes.openai_server import Sentence

USER = [{"role": "user", "content": "How did Apple do?"}]
WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}


@pytest.fixture
def fake():
    with FakeAnthropicServer() as server:
        yield server
    assert not server.errors


def client(fake: FakeAnthropicServer, key: str = API_KEY) -> anthropic.AsyncAnthropic:
    # `connection: close`: no pooled connection outlives the test's event loop.
    return anthropic.AsyncAnthropic(
        api_key=key, base_url=fake.base_url, max_retries=0, default_headers={"connection": "close"}
    )


async def test_a_field_the_api_does_not_take_is_a_400_with_the_error_body_and_a_request_id(fake):
    with pytest.raises(anthropic.BadRequestError) as raised:
        await client(fake).messages.create(
            model="claude-haiku-4-5", max_tokens=100, messages=USER, extra_body={"temperature": 0.2}
        )

    assert (
        raised.value.type == "invalid_request_error"
        and raised.value.api_message == "temperature: Extra inputs are not permitted"
    )
    assert raised.value.request_id is not None and raised.value.request_id.startswith("req_")


@pytest.mark.parametrize(
    ("options", "error", "status"),
    [
        ({"model": "claude-3-5-haiku-latest"}, anthropic.NotFoundError, 404),  # retired
        ({"model": "claude-nonexistent"}, anthropic.NotFoundError, 404),
        ({"max_tokens": 70_000, "timeout": 30}, anthropic.BadRequestError, 400),
        ({"tools": [{"type": "web_search_20990101", "name": "web_search"}]}, anthropic.BadRequestError, 400),
        (
            {
                "extra_body": {
                    "output_config": {"format": {"type": "json_schema", "schema": {"type": "object", "properties": {}}}}
                }
            },
            anthropic.BadRequestError,
            400,
        ),
    ],
)
async def test_what_the_api_refuses_the_fake_refuses(fake, options, error, status):
    arguments = {"model": "claude-haiku-4-5", "max_tokens": 100, "messages": USER, **options}

    with pytest.raises(error) as raised:
        await client(fake).messages.create(**arguments)

    assert raised.value.status_code == status


async def test_a_wrong_key_and_a_missing_version_header_are_refused(fake):
    with pytest.raises(anthropic.AuthenticationError):
        await client(fake, "placeholder-key-wrong").models.list()
    async with httpx2.AsyncClient(base_url=fake.base_url) as http:
        response = await http.get("/v1/models", headers={"x-api-key": API_KEY})
    assert response.status_code == 400
    assert response.json()["error"] == {
        "type": "invalid_request_error",
        "message": "anthropic-version: header is required",
    }


async def test_a_web_searched_stream_sends_the_real_event_sequence(fake):
    fake.script(
        TextAnswer([Sentence("Revenue rose 6%.", cites=[("https://example.com/a", "A")]), "More."], chunk_chars=100)
    )
    events = []
    async with client(fake).messages.stream(
        model="claude-sonnet-4-6", max_tokens=100, messages=USER, tools=[WEB_SEARCH]
    ) as stream:
        async for event in stream:
            events.append(event)
        final = await stream.get_final_message()

    raw = [(event.type, _kind(event)) for event in events if event.type.startswith(("message", "content"))]
    sequence = [kind for i, kind in enumerate(raw) if i == 0 or raw[i - 1] != kind]  # repeated deltas once
    assert sequence == [
        ("message_start", None),
        ("content_block_start", "text"),  # the narration before the search
        ("content_block_delta", "text_delta"),
        ("content_block_stop", None),
        ("content_block_start", "server_tool_use"),
        ("content_block_delta", "input_json_delta"),
        ("content_block_stop", None),
        ("content_block_start", "web_search_tool_result"),
        ("content_block_stop", None),
        ("content_block_start", "text"),
        ("content_block_delta", "citations_delta"),
        ("content_block_delta", "text_delta"),
        ("content_block_stop", None),
        ("content_block_start", "text"),
        ("content_block_delta", "text_delta"),
        ("content_block_stop", None),
        ("message_delta", None),
        ("message_stop", None),
    ]
    assert [block.type for block in final.content] == [
        "text",
        "server_tool_use",
        "web_search_tool_result",
        "text",
        "text",
    ]
    assert final.content[1].input == {"query": "How did Apple do?"}
    assert final.content[3].text == "Revenue rose 6%" and final.content[3].citations[0].url == "https://example.com/a"
    assert final.content[4].text == ". More."
    assert final.stop_reason == "end_turn" and final.usage.server_tool_use.web_search_requests == 1


async def test_the_model_list_pages_as_the_api_does(fake):
    page = await client(fake).models.list(limit=2)

    assert [m.id for m in page.data] == ["claude-sonnet-5-5", "claude-haiku-5-5"]
    assert (page.has_more, page.first_id, page.last_id) == (True, "claude-sonnet-5-5", "claude-haiku-5-5")
    every = [m.id async for m in await client(fake).models.list(limit=2)]
    assert "claude-haiku-4-5-20251001" in every and "claude-3-5-haiku-20241022" not in every
    assert (await client(fake).models.retrieve("claude-haiku-4-5")).id == "claude-haiku-4-5-20251001"


def _kind(event: object) -> str | None:
    """What a start event begins (its block's type) or a delta carries (the delta's type)."""
    if getattr(event, "type", None) == "content_block_start":
        return event.content_block.type  # type: ignore[attr-defined]
    if getattr(event, "type", None) == "content_block_delta":
        return event.delta.type  # type: ignore[attr-defined]
    return None
