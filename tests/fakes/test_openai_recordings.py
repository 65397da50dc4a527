"""The fake OpenAI server sends what the real API sends, field for field: its events, output items, responses
and error bodies are compared with real replies recorded in `../shared/recorded/openai` (skipped where that
folder is absent, as in a user's clone)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import httpx2
import pytest

from tests.fakes.openai_recorded import recorded_body, recorded_events
from tests.fakes.openai_server import (
    NO_CREDIT,
    ErrorReply,
    FakeOpenAIServer,
    FindInPage,
    OpenPage,
    RefusalReply,
    Search,
    Sentence,
    TextReply,
)
from tests.recorded import requires_recorded

pytestmark = requires_recorded

RECORDED_STREAMS = (
    "ws_gpt52_alberta_a",
    "ws_gpt52_alberta_b",
    "plain_gpt52",
    "ws_gpt5_weather",
    "ws_gpt4o_bitcoin",
    "ws_gpt4o_ethereum",
    "ws_gpt5mini_technews",
    "ws_gpt51_tokyo",
    "stream_incomplete_gpt4o",
    "stream_refusal_gpt4o",
    "stream_error_quota_gpt5nano",
)
CITED = [
    Sentence("Apple's revenue rose 6%.", cites=[("https://www.reuters.com/a", "Apple beats - Reuters")]),
    Sentence("Services set a record.", cites=[("https://www.ft.com/b", "Services - FT")]),
]
WEB_SEARCH = {"model": "gpt-5-mini", "tools": [{"type": "web_search"}], "reasoning": {"effort": "low"}}


def shapes(events: list[dict[str, Any]]) -> dict[tuple[str, str], set[frozenset[str]]]:
    """The sets of fields seen per event type, and per event type and item or part type."""
    seen: dict[tuple[str, str], set[frozenset[str]]] = defaultdict(set)
    for event in events:
        seen[(event["type"], "")].add(frozenset(event))
        for inner in ("item", "part"):
            if isinstance(event.get(inner), dict):
                seen[(event["type"], f"{inner}:{event[inner]['type']}")].add(frozenset(event[inner]))
    return seen


async def fake_stream(fake: FakeOpenAIServer, body: dict[str, Any]) -> list[dict[str, Any]]:
    async with httpx2.AsyncClient(timeout=10, headers={"Authorization": "Bearer test-key"}) as http:
        reply = await http.post(f"{fake.base_url}/responses", json={"input": "q", **body, "stream": True})
    return [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: ")]


async def every_kind_of_fake_stream(fake: FakeOpenAIServer) -> list[dict[str, Any]]:
    """A cited web search with reasoning and each kind of action, a refusal, an incomplete answer, and a
    call without credit."""
    actions = [
        Search("apple revenue"),
        OpenPage("https://www.reuters.com/a"),
        FindInPage("6%", "https://www.reuters.com/a"),
    ]
    fake.script(TextReply(CITED, actions=actions))
    fake.script(RefusalReply())
    fake.script(TextReply(CITED, interrupt="incomplete", after_deltas=3))
    fake.script(NO_CREDIT)
    events = await fake_stream(fake, WEB_SEARCH)
    for _ in range(3):
        events += await fake_stream(fake, {"model": "gpt-4o"})
    return events


async def test_each_event_the_fake_streams_has_the_fields_of_a_recorded_event_of_its_kind(fake_openai):
    recorded: dict[tuple[str, str], set[frozenset[str]]] = defaultdict(set)
    for name in RECORDED_STREAMS:
        for kind, fields in shapes(recorded_events(name)).items():
            recorded[kind] |= fields

    sent = shapes(await every_kind_of_fake_stream(fake_openai))

    assert set(sent) <= set(recorded), "the fake sends no event, item or part the real API does not"
    for kind, fields in sent.items():
        assert fields <= recorded[kind], f"{kind}: {fields - recorded[kind]} is not a recorded shape"
    # What a tidy stream would leave out: the search's query only when done, obfuscation on every delta.
    assert sent[("response.output_item.added", "item:web_search_call")] == {frozenset({"id", "type", "status"})}
    assert "obfuscation" in next(iter(sent[("response.output_text.delta", "")]))


async def test_the_fakes_response_carries_every_field_every_recorded_response_carries(fake_openai):
    recorded = [
        event["response"] for name in RECORDED_STREAMS for event in recorded_events(name) if "response" in event
    ]
    recorded.append(json.loads(recorded_body("json_ws_gpt52_alberta")))
    always = set.intersection(*(set(response) for response in recorded))

    sent = [event["response"] for event in await every_kind_of_fake_stream(fake_openai) if "response" in event]

    for response in sent:
        assert always <= set(response), always - set(response)


async def test_a_retired_model_is_refused_with_the_recorded_400_byte_for_byte(fake_openai):
    async with httpx2.AsyncClient(timeout=10, headers={"Authorization": "Bearer test-key"}) as http:
        plain = await http.post(
            f"{fake_openai.base_url}/responses", json={"model": "this-model-does-not-exist-12345", "input": "q"}
        )
        streamed = await http.post(
            f"{fake_openai.base_url}/responses",
            json={"model": "this-model-does-not-exist-12345", "input": "q", "stream": True},
        )

    assert (plain.status_code, plain.content) == (400, recorded_body("err_400_model_not_found_raw"))
    assert (streamed.status_code, streamed.content) == (400, recorded_body("err_400_model_not_found_stream"))


@pytest.mark.parametrize(
    ("fake_reply", "recorded"),
    [
        (ErrorReply.for_code("insufficient_quota"), "err_429_insufficient_quota_body"),
        (ErrorReply(401), "err_401_invalid_api_key"),
    ],
    ids=["no-credit", "rejected-key"],
)
async def test_error_bodies_are_laid_out_as_the_recorded_ones(fake_openai, fake_reply, recorded):
    fake_openai.script(fake_reply)
    async with httpx2.AsyncClient(timeout=10, headers={"Authorization": "Bearer test-key"}) as http:
        reply = await http.post(f"{fake_openai.base_url}/responses", json={"model": "gpt-5.4", "input": "q"})

    real = json.loads(recorded_body(recorded))["error"]
    sent = reply.json()["error"]
    assert list(sent) == list(real)  # message, type, param, code
    assert (sent["type"], sent["param"], sent["code"]) == (real["type"], real["param"], real["code"])
    assert reply.text.startswith('{\n  "error": {\n    "message": ')  # pretty-printed, as the API writes it
    if recorded == "err_429_insufficient_quota_body":
        assert sent["message"] == real["message"]
