"""The fake OpenAI server speaks the Responses API as the real openai SDK expects it."""

from __future__ import annotations

import asyncio
import datetime
import json
import time
import typing
from typing import Any, Literal

import httpx2
import openai
import pytest
from openai import AsyncOpenAI
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import BaseModel

from tests.fakes.openai_server import (
    NO_CREDIT,
    ErrorReply,
    FakeOpenAIServer,
    FindInPage,
    JsonReply,
    OpenPage,
    RefusalReply,
    Search,
    Sentence,
    TextReply,
    Usage,
    input_contains,
    model_is,
    wants_structured_output,
)

REUTERS = ("https://www.reuters.com/markets/us/apple-results-2025", "Apple beats estimates | Reuters")
FT = ("https://www.ft.com/content/apple", "Apple services growth - FT")
CITED = TextReply(
    [
        Sentence("Apple's revenue rose 6% to $94.9 billion in the quarter.", cites=[REUTERS]),
        Sentence("Services set a record.", cites=[FT, REUTERS]),
    ],
    usage=Usage(input_tokens=300, output_tokens=90, reasoning_tokens=20, cached_tokens=100),
)

EVENT_TYPES: dict[str, type[BaseModel]] = {
    typing.get_args(cls.model_fields["type"].annotation)[0]: cls
    for cls in typing.get_args(typing.get_args(ResponseStreamEvent)[0])
}


def validate_as_the_sdk_types_it(data: dict[str, Any]) -> None:
    """Strict validation against the SDK's own event type, except where the real API, as recorded, sends
    what that type does not describe: a `web_search_call` added without its `action`, and an `error` event
    whose fields are nested under `error`. The SDK builds events without validating them, so it reads both."""
    item = data.get("item") or {}
    if data["type"] == "error" or (data["type"] == "response.output_item.added" and "action" not in item):
        return
    EVENT_TYPES[data["type"]].model_validate(data)


def client_for(fake: FakeOpenAIServer, **options: Any) -> AsyncOpenAI:
    return AsyncOpenAI(api_key="test-key", base_url=fake.base_url, **options)


async def raw_stream(fake: FakeOpenAIServer, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The SSE frames of one streamed request, as (event, data) pairs."""
    frames: list[tuple[str, dict[str, Any]]] = []
    async with httpx2.AsyncClient(timeout=10, headers={"Authorization": "Bearer test-key"}) as http:
        async with http.stream("POST", f"{fake.base_url}/responses", json={**body, "stream": True}) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            event = ""
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    frames.append((event, json.loads(line.removeprefix("data: "))))
    return frames


async def test_stream_follows_the_real_event_order_and_every_event_validates_strictly(fake_openai):
    fake_openai.script(CITED)
    frames = await raw_stream(
        fake_openai, {"model": "gpt-5.4-mini", "input": "Apple results?", "tools": [{"type": "web_search"}],
                      "reasoning": {"effort": "low"}}
    )

    for event, data in frames:
        assert event == data["type"]
        validate_as_the_sdk_types_it(data)  # required fields present, types right
    assert [data["sequence_number"] for _, data in frames] == list(range(len(frames)))
    kinds = [event for event, _ in frames]
    first_delta = kinds.index("response.output_text.delta")
    assert kinds[:first_delta] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",  # reasoning
        "response.output_item.done",
        "response.output_item.added",  # web_search_call
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.output_item.done",
        "response.output_item.added",  # reasoning again, before the message
        "response.output_item.done",
        "response.output_item.added",  # message
        "response.content_part.added",
    ]
    assert kinds[-6:] == [
        "response.output_text.delta",
        "response.output_text.annotation.added",  # the answer ends with a cited link
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert kinds.count("response.output_text.annotation.added") == 3


async def test_sdk_parses_the_stream_and_annotations_span_the_inline_links_after_their_deltas(fake_openai):
    fake_openai.script(CITED)
    client = client_for(fake_openai)
    stream = await client.responses.create(
        model="gpt-5.4", input="Apple results?", tools=[{"type": "web_search"}], stream=True
    )
    text = ""
    annotations = []
    async with stream:
        async for event in stream:
            if event.type == "response.output_text.delta":
                text += event.delta
            elif event.type == "response.output_text.annotation.added":
                annotation = event.annotation
                # It cites text that has already arrived.
                assert annotation.end_index <= len(text)
                annotations.append(annotation)
            elif event.type == "response.completed":
                completed = event.response

    assert completed.output_text == text
    assert completed.usage.input_tokens == 300
    assert completed.usage.output_tokens_details.reasoning_tokens == 20
    assert completed.usage.input_tokens_details.cached_tokens == 100
    assert completed.usage.total_tokens == 390
    assert [(a.url, a.title) for a in annotations] == [
        (REUTERS[0] + "?utm_source=openai", REUTERS[1]),
        (FT[0] + "?utm_source=openai", FT[1]),
        (REUTERS[0] + "?utm_source=openai", REUTERS[1]),
    ]
    first = annotations[0]
    assert text[first.start_index : first.end_index] == (
        f"([reuters.com]({REUTERS[0]}?utm_source=openai))"
    )
    assert text.startswith("Apple's revenue rose 6% to $94.9 billion in the quarter. ([reuters.com](")
    message = completed.output[-1]
    assert [a.url for a in message.content[0].annotations] == [a.url for a in annotations]


async def test_non_streaming_reply_is_a_strictly_valid_response_object(fake_openai):
    fake_openai.script(CITED)
    async with httpx2.AsyncClient(timeout=10, headers={"Authorization": "Bearer test-key"}) as http:
        reply = await http.post(
            f"{fake_openai.base_url}/responses",
            json={"model": "gpt-5.4", "input": "q", "tools": [{"type": "web_search"}]},
        )
    assert reply.status_code == 200
    response = Response.model_validate(reply.json())
    assert response.status == "completed"
    assert [item.type for item in response.output] == ["web_search_call", "message"]
    assert "([reuters.com](" in response.output_text
    assert response.usage is not None and response.usage.output_tokens == 90


class Finding(BaseModel):
    complete: bool
    score: int
    gaps: list[str]
    kind: Literal["numerical", "qualitative"]
    note: str | None


async def test_structured_reply_is_parsed_by_responses_parse(fake_openai):
    fake_openai.script(
        JsonReply({"complete": True, "score": 9, "gaps": [], "kind": "numerical", "note": None}),
        when=wants_structured_output,
    )
    parsed = await client_for(fake_openai).responses.parse(model="gpt-5.4-mini", input="judge", text_format=Finding)

    assert parsed.output_parsed == Finding(complete=True, score=9, gaps=[], kind="numerical", note=None)
    assert fake_openai.requests[0].text_format["type"] == "json_schema"


async def test_unscripted_structured_request_gets_the_smallest_answer_its_schema_allows(fake_openai):
    parsed = await client_for(fake_openai).responses.parse(model="gpt-5.4-mini", input="judge", text_format=Finding)

    assert parsed.output_parsed == Finding(complete=False, score=0, gaps=[], kind="numerical", note=None)


async def test_unscripted_text_request_gets_a_short_cited_answer(fake_openai):
    response = await client_for(fake_openai).responses.create(model="gpt-5.4", input="anything")

    assert "([example.com](https://www.example.com/" in response.output_text


async def test_scripted_replies_are_used_in_order_by_predicate_then_the_default(fake_openai):
    fake_openai.script(TextReply(["for the planner"]), when=model_is("gpt-5.4-mini"))
    fake_openai.script(TextReply(["about tesla"]), when=input_contains("TSLA"), times=2)
    fake_openai.script(TextReply(["first come"]))
    client = client_for(fake_openai)

    async def answer(model: str, question: str) -> str:
        return (await client.responses.create(model=model, input=question)).output_text

    assert await answer("gpt-5.4", "TSLA deliveries?") == "about tesla"
    assert await answer("gpt-5.4", "AAPL?") == "first come"
    assert await answer("gpt-5.4-mini", "TSLA?") == "for the planner"
    assert await answer("gpt-5.4-mini", "tsla margins") == "about tesla"
    assert "default answer" in await answer("gpt-5.4-mini", "TSLA again")
    assert fake_openai.pending() == 0


async def test_http_error_reply_carries_openai_error_body_and_makes_sdk_retries_immediate(fake_openai):
    fake_openai.script(ErrorReply(429), times=3)
    started = time.monotonic()

    with pytest.raises(openai.RateLimitError) as raised:
        await client_for(fake_openai, max_retries=2).responses.create(model="gpt-5.4-mini", input="q")

    assert time.monotonic() - started < 1  # the SDK's own backoff would take about 1.5 s
    assert raised.value.body["code"] == "rate_limit_exceeded"
    assert [r.status for r in fake_openai.requests] == [429, 429, 429]


async def test_broken_stream_drops_the_connection_after_the_scripted_deltas(fake_openai):
    fake_openai.script(TextReply(chunk_chars=4, interrupt="drop", after_deltas=3))
    stream = await client_for(fake_openai).responses.create(model="gpt-5.4-mini", input="q", stream=True)
    deltas = []

    with pytest.raises(openai.APIConnectionError):
        async for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)

    assert deltas == ["This", " is ", "the "]


@pytest.mark.parametrize(
    ("interrupt", "last_types"),
    [
        ("failed", ["response.failed"]),
        ("incomplete", ["response.incomplete"]),
        ("error", ["error", "response.failed"]),  # as the real API sends it
    ],
)
async def test_failure_events_end_the_stream_after_the_scripted_deltas(fake_openai, interrupt, last_types):
    fake_openai.script(TextReply(interrupt=interrupt, after_deltas=2, error_code="server_error"))
    frames = await raw_stream(fake_openai, {"model": "gpt-5.4-mini", "input": "q"})

    assert [event for event, _ in frames[-len(last_types) :]] == last_types
    for _, data in frames[-len(last_types) :]:
        validate_as_the_sdk_types_it(data)
    assert [event for event, _ in frames].count("response.output_text.delta") == 2
    if interrupt != "incomplete":
        failed = frames[-1][1]["response"]
        assert failed["status"] == "failed" and failed["error"]["code"] == "server_error" and failed["usage"] is None


async def test_an_account_without_credit_fails_inside_a_200_stream_and_with_a_429_when_not_streamed(fake_openai):
    fake_openai.set_default(NO_CREDIT)

    frames = await raw_stream(fake_openai, {"model": "gpt-5-nano", "input": "q"})
    async with httpx2.AsyncClient(timeout=10, headers={"Authorization": "Bearer test-key"}) as http:
        plain = await http.post(f"{fake_openai.base_url}/responses", json={"model": "gpt-5-nano", "input": "q"})

    # The order and nesting recorded from the real API (stream_error_quota_gpt5nano).
    assert [event for event, _ in frames] == ["response.created", "response.in_progress", "error", "response.failed"]
    error = frames[2][1]
    assert set(error) == {"type", "sequence_number", "error"}
    assert error["error"]["code"] == error["error"]["type"] == "insufficient_quota"
    assert error["error"]["message"].startswith("You exceeded your current quota")
    failed = frames[3][1]["response"]
    assert failed["error"]["code"] == "insufficient_quota" and failed["usage"] is None and failed["output"] == []
    assert [r.status for r in fake_openai.requests] == [200, 429]
    assert plain.json()["error"]["code"] == "insufficient_quota"


async def test_the_sdks_own_stream_raises_the_in_stream_error_with_its_code(fake_openai):
    fake_openai.set_default(NO_CREDIT)
    stream = await client_for(fake_openai).responses.create(model="gpt-5.4", input="q", stream=True)

    with pytest.raises(openai.APIError) as raised:
        async for _ in stream:
            pass

    assert raised.value.code == "insufficient_quota"


async def test_requests_are_recorded_without_the_key_and_with_their_timing(fake_openai):
    fake_openai.script(TextReply(first_byte_delay=0.2))
    await client_for(fake_openai).responses.create(
        model="gpt-4.1", input="q", temperature=0.2, tools=[{"type": "web_search"}]
    )

    (request,) = fake_openai.requests
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == "Bearer <redacted>"
    assert "test-key" not in json.dumps(request.headers)
    assert request.body["temperature"] == 0.2
    assert request.has_web_search and not request.stream
    assert request.ended_at - request.started_at >= 0.2


async def test_concurrent_requests_are_seen_overlapping(fake_openai):
    fake_openai.set_default(TextReply(["slow"], first_byte_delay=0.3))
    client = client_for(fake_openai)

    await asyncio.gather(*(client.responses.create(model="gpt-5.4-mini", input=f"q{i}") for i in range(3)))

    assert fake_openai.max_concurrency() == 3
    first, second, _ = fake_openai.requests
    assert first.overlaps(second)


async def test_scripted_json_that_breaks_the_request_schema_is_reported_by_the_fake():
    with FakeOpenAIServer() as fake:
        fake.script(JsonReply({"complete": "yes"}))
        response = await client_for(fake).responses.parse(
            model="gpt-5.4-mini", input="judge", text_format=Finding, parse_as=None
        )
    assert response.output_text == '{"complete": "yes"}'
    assert len(fake.errors) == 1 and "schema" in fake.errors[0]


# --- as strict as the real API ------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_a_model_past_its_shutdown_answers_400_model_not_found_on_responses_as_the_real_api(fake_openai, stream):
    fake_openai.today = datetime.date(2026, 11, 26)
    async with httpx2.AsyncClient(timeout=10, headers={"Authorization": "Bearer test-key"}) as http:
        reply = await http.post(
            f"{fake_openai.base_url}/responses", json={"model": "gpt-5.2-chat-latest", "input": "q", "stream": stream}
        )

    # A plain, pretty-printed JSON 400 even for a streamed call (err_400_model_not_found_raw and _stream).
    assert reply.status_code == 400 and reply.headers["content-type"] == "application/json"
    assert reply.text == (
        "{\n"
        '  "error": {\n'
        '    "message": "The requested model \'gpt-5.2-chat-latest\' does not exist.",\n'
        '    "type": "invalid_request_error",\n'
        '    "param": "model",\n'
        '    "code": "model_not_found"\n'
        "  }\n"
        "}"
    )


async def test_a_model_past_its_shutdown_leaves_the_listing_and_is_a_404_on_its_own_page(fake_openai):
    fake_openai.today = datetime.date(2026, 11, 26)
    client = client_for(fake_openai, max_retries=0)

    with pytest.raises(openai.BadRequestError) as raised:
        await client.responses.create(model="gpt-5.2-chat-latest", input="q")

    assert raised.value.code == "model_not_found"
    listed = {model.id: model for model in (await client.models.list()).data}
    assert "gpt-5.2-chat-latest" not in listed
    assert listed["gpt-5-mini"].shutdown_date == "2026-12-11"
    assert listed["gpt-5.4"].shutdown_date is None
    fake_openai.today = datetime.date(2026, 12, 11)
    with pytest.raises(openai.NotFoundError):
        await client.models.retrieve("gpt-5-mini")


@pytest.mark.parametrize(
    ("request_body", "code", "param"),
    [
        ({"model": "gpt-5.4", "input": "q", "temprature": 0.2}, "unknown_parameter", "temprature"),
        ({"model": "gpt-5.4", "input": "q", "temperature": 0.2}, "unsupported_parameter", "temperature"),
        ({"model": "gpt-4.1", "input": "q", "reasoning": {"effort": "low"}}, "unsupported_parameter", "reasoning.effort"),
        ({"model": "gpt-5.4", "input": "q", "reasoning": {"effort": "minimal"}}, "unsupported_value", "reasoning.effort"),
        (
            {"model": "gpt-5-mini", "input": "q", "reasoning": {"effort": "minimal"}, "tools": [{"type": "web_search"}]},
            "unsupported_value",
            "tools",
        ),
        (
            {
                "model": "gpt-5.4-mini",
                "input": "q",
                "text": {"format": {"type": "json_schema", "name": "Loose", "strict": True, "schema": {
                    "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}},
            },
            "invalid_json_schema",
            "text.format.schema",
        ),
    ],
    ids=["unknown-parameter", "temperature-on-reasoning", "reasoning-on-chat", "unknown-effort", "search-minimal", "strict"],
)
async def test_what_the_real_api_refuses_is_refused_with_its_400(fake_openai, request_body, code, param):
    async with httpx2.AsyncClient(timeout=10, headers={"Authorization": "Bearer test-key"}) as http:
        reply = await http.post(f"{fake_openai.base_url}/responses", json=request_body)

    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == code and reply.json()["error"]["param"] == param


async def test_a_revoked_key_answers_401(fake_openai):
    fake_openai.revoked_keys.add("test-key")

    with pytest.raises(openai.AuthenticationError):
        await client_for(fake_openai, max_retries=0).responses.create(model="gpt-5.4", input="q")


async def test_a_refusal_streams_as_refusal_events_and_a_refusal_part(fake_openai):
    fake_openai.script(RefusalReply("I can't help with that."))

    frames = await raw_stream(fake_openai, {"model": "gpt-5.4", "input": "q"})

    types = [event for event, _ in frames]
    assert "response.output_text.delta" not in types
    assert "".join(data["delta"] for event, data in frames if event == "response.refusal.delta") == "I can't help with that."
    for _, data in frames:
        validate_as_the_sdk_types_it(data)
    final = Response.model_validate(frames[-1][1]["response"])
    assert final.output[-1].content[0].type == "refusal"


# --- the real stream's shapes (LIBRARIES.md; compared with the recordings in test_openai_recordings.py) --------


async def test_a_search_is_added_without_its_query_which_comes_with_the_item_done(fake_openai):
    fake_openai.script(TextReply(actions=[Search("apple q4 revenue"), OpenPage("https://www.reuters.com/a"),
                                          FindInPage("revenue", "https://www.reuters.com/a")]))

    frames = await raw_stream(
        fake_openai, {"model": "gpt-5-mini", "input": "q", "tools": [{"type": "web_search"}], "reasoning": {"effort": "low"}}
    )

    items = [(event, data["item"]) for event, data in frames if event.startswith("response.output_item")]
    searches = [item for event, item in items if item["type"] == "web_search_call"]
    assert [set(item) for item in searches[::2]] == [{"id", "type", "status"}] * 3  # added: no action yet
    assert [item["action"] for item in searches[1::2]] == [
        {"type": "search", "queries": ["apple q4 revenue"], "query": "apple q4 revenue"},
        {"type": "open_page", "url": "https://www.reuters.com/a"},
        {"type": "find_in_page", "pattern": "revenue", "url": "https://www.reuters.com/a"},
    ]
    # Reasoning items interleave with the searches, and one comes before the message.
    added = [item["type"] for event, item in items if event == "response.output_item.added"]
    assert added == ["reasoning", "web_search_call"] * 3 + ["reasoning", "message"]


async def test_sources_are_listed_only_when_asked_and_an_api_source_has_no_url(fake_openai):
    fake_openai.script(TextReply(actions=[Search("weather: Cupertino", api=["oai-weather"])]), times=2)
    body = {"model": "gpt-5.4", "input": "q", "tools": [{"type": "web_search"}]}

    plain = await raw_stream(fake_openai, body)
    asked = await raw_stream(fake_openai, {**body, "include": ["web_search_call.action.sources"]})

    def search_action(frames):
        return next(d["item"]["action"] for e, d in frames if e == "response.output_item.done" and d["item"]["type"] == "web_search_call")

    assert "sources" not in search_action(plain)
    assert search_action(asked)["sources"] == [
        {"type": "url", "url": "https://www.example.com/markets/overview"},
        {"type": "url", "url": "https://www.example.org/data/placeholder"},
        {"type": "api", "name": "oai-weather"},
    ]


async def test_every_text_delta_carries_an_obfuscation_string_and_the_response_names_the_dated_snapshot(fake_openai):
    frames = await raw_stream(fake_openai, {"model": "gpt-5.4-mini", "input": "q"})

    deltas = [data for event, data in frames if event == "response.output_text.delta"]
    assert deltas and all(isinstance(d["obfuscation"], str) and d["obfuscation"] for d in deltas)
    assert {data["response"]["model"] for event, data in frames if "response" in data} == {"gpt-5.4-mini-2026-03-17"}


async def test_an_annotation_may_come_deltas_after_the_one_that_completes_its_link(fake_openai):
    fake_openai.script(TextReply(CITED.sentences, chunk_chars=10, annotation_lag=3))

    frames = await raw_stream(fake_openai, {"model": "gpt-5.4", "input": "q", "tools": [{"type": "web_search"}]})

    text = ""
    lags = []
    for event, data in frames:
        if event == "response.output_text.delta":
            text += data["delta"]
        elif event == "response.output_text.annotation.added":
            completed_at = -(-data["annotation"]["end_index"] // 10)  # the delta that completed the link
            lags.append(-(-len(text) // 10) - completed_at)
    assert lags[:2] == [3, 3]  # the last ones come with the answer's last delta
    assert len(lags) == 3


async def test_an_incomplete_answer_not_streamed_is_a_200_with_status_incomplete(fake_openai):
    fake_openai.script(TextReply(interrupt="incomplete"))

    response = await client_for(fake_openai).responses.create(model="gpt-5.4", input="q")

    assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"
