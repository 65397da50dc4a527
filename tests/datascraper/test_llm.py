"""The provider layer: client set-up, per-model request options, usage and named failures."""

from __future__ import annotations

import socket
from typing import Literal

import pytest
from openai.lib._parsing._responses import type_to_text_format_param
from pydantic import BaseModel

from datascraper.errors import (
    ProviderNotConfigured,
    ResearchError,
    UpstreamError,
    UpstreamRateLimited,
    UpstreamTimeout,
)
from datascraper.llm import (
    StructuredOutputInvalid,
    get_openai_client,
    model_kwargs,
    parse_structured,
    reset_openai_client,
    usage_from_response,
)
from datascraper.schemas import ModelUsage, UsageLedger
from tests.fakes.openai_server import ErrorReply, JsonReply, TextReply, Usage

SECRET_KEY = "sk-test-SECRET-0123456789"


class Plan(BaseModel):
    needs_decomposition: bool
    sub_questions: list[str]
    kind: Literal["numerical", "qualitative", "analytical"]


async def plan(ledger: UsageLedger, model: str = "gpt-5-mini") -> Plan:
    return await parse_structured(model, "Plan the research.", "How did Apple do?", Plan, ledger)


# --- request options ----------------------------------------------------------------------------------


def test_reasoning_model_gets_reasoning_effort_and_never_temperature():
    assert model_kwargs("gpt-5-mini", effort="medium", temperature=0.3) == {"reasoning": {"effort": "medium"}}
    assert model_kwargs("o4-mini") == {"reasoning": {"effort": "low"}}


def test_chat_latest_model_gets_no_reasoning_but_keeps_temperature():
    assert model_kwargs("gpt-5.2-chat-latest", effort="high") == {}
    assert model_kwargs("gpt-5.2-chat-latest", temperature=0.2) == {"temperature": 0.2}


def test_web_search_raises_minimal_effort_to_low_which_the_api_accepts():
    assert model_kwargs("gpt-5-mini", effort="minimal", web_search=True) == {"reasoning": {"effort": "low"}}
    assert model_kwargs("gpt-5-mini", effort="minimal") == {"reasoning": {"effort": "minimal"}}


def test_usage_without_a_usage_object_still_counts_the_call():
    assert usage_from_response(None) == ModelUsage(calls=1)


# --- the client -----------------------------------------------------------------------------------------


async def test_missing_key_raises_provider_not_configured(monkeypatch, research_env):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    research_env()

    with pytest.raises(ProviderNotConfigured) as raised:
        get_openai_client()

    assert raised.value.code == "provider_not_configured"


async def test_client_is_shared_until_reset_and_built_from_the_configuration(fake_openai, research_env):
    research_env(RESEARCH_REQUEST_TIMEOUT="7", RESEARCH_MAX_RETRIES="1")

    client = get_openai_client()

    assert get_openai_client() is client
    assert str(client.base_url).rstrip("/") == fake_openai.base_url
    assert client.max_retries == 1 and client.timeout == 7
    reset_openai_client()
    assert get_openai_client() is not client


# --- structured output ----------------------------------------------------------------------------------


async def test_parse_structured_returns_the_schema_object_and_records_usage(fake_openai):
    fake_openai.script(
        JsonReply(
            {"needs_decomposition": True, "sub_questions": ["revenue", "margins"], "kind": "analytical"},
            usage=Usage(input_tokens=50, output_tokens=30, reasoning_tokens=12),
        )
    )
    ledger = UsageLedger()

    result = await plan(ledger)

    assert result == Plan(needs_decomposition=True, sub_questions=["revenue", "margins"], kind="analytical")
    assert ledger.by_model["gpt-5-mini"] == ModelUsage(calls=1, input_tokens=50, output_tokens=30, reasoning_tokens=12)
    (request,) = fake_openai.requests
    assert request.is_structured and request.text_format["strict"] is True
    assert request.body["reasoning"] == {"effort": "low"}
    assert "temperature" not in request.body
    assert request.instructions == "Plan the research."


async def test_parse_structured_sends_the_sdk_strict_schema_on_every_call(fake_openai):
    await plan(UsageLedger())
    await plan(UsageLedger())

    expected = type_to_text_format_param(Plan)  # what `responses.parse(text_format=Plan)` sends
    assert [request.body["text"]["format"] for request in fake_openai.requests] == [expected, expected]
    assert expected["name"] == "Plan" and expected["strict"] is True


async def test_parse_structured_sends_no_reasoning_to_a_chat_model(fake_openai):
    await plan(UsageLedger(), model="gpt-5.2-chat-latest")

    assert "reasoning" not in fake_openai.requests[0].body


@pytest.mark.parametrize(
    "reply",
    [
        JsonReply(raw="Sure! Here is the plan: {"),
        JsonReply({"needs_decomposition": "maybe"}, validate=False),
        TextReply(["I cannot help with that."]),
    ],
    ids=["not-json", "wrong-shape", "prose"],
)
async def test_output_that_does_not_fit_the_schema_raises_invalid_model_output(fake_openai, reply):
    fake_openai.script(reply)
    ledger = UsageLedger()

    with pytest.raises(StructuredOutputInvalid) as raised:
        await plan(ledger)

    assert raised.value.code == "invalid_model_output"
    assert ledger.by_model["gpt-5-mini"].calls == 1
    assert ledger.by_model["gpt-5-mini"].output_tokens > 0  # the tokens were spent all the same


# --- failures -------------------------------------------------------------------------------------------


async def test_rate_limit_raises_upstream_rate_limited_after_the_retries(fake_openai, research_env):
    research_env(RESEARCH_MAX_RETRIES="2")
    fake_openai.script(ErrorReply(429), times=3)
    ledger = UsageLedger()

    with pytest.raises(UpstreamRateLimited):
        await plan(ledger)

    assert len(fake_openai.requests) == 3  # max_retries + 1
    assert ledger.calls == 1


async def test_persistent_server_error_raises_upstream_error(fake_openai, research_env):
    research_env(RESEARCH_MAX_RETRIES="1")
    fake_openai.set_default(ErrorReply(500))

    with pytest.raises(UpstreamError) as raised:
        await plan(UsageLedger())

    assert "HTTP 500" in raised.value.message
    assert len(fake_openai.requests) == 2


async def test_slow_provider_raises_upstream_timeout(fake_openai, research_env):
    research_env(RESEARCH_REQUEST_TIMEOUT="0.2", RESEARCH_MAX_RETRIES="1")
    fake_openai.set_default(JsonReply(first_byte_delay=2))

    with pytest.raises(UpstreamTimeout):
        await plan(UsageLedger())

    assert len(fake_openai.requests) == 2


async def test_rejected_key_raises_provider_not_configured(fake_openai):
    fake_openai.script(ErrorReply(401))

    with pytest.raises(ProviderNotConfigured):
        await plan(UsageLedger())


async def test_unreachable_provider_raises_upstream_error(monkeypatch, research_env):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    research_env(OPENAI_BASE_URL=f"http://127.0.0.1:{closed_port}/v1", RESEARCH_MAX_RETRIES="0")

    with pytest.raises(UpstreamError) as raised:
        await plan(UsageLedger())

    assert raised.value.message == "Could not connect to the model provider."


@pytest.mark.parametrize("status", [400, 401, 429, 500])
async def test_error_messages_carry_neither_the_key_nor_the_upstream_body(fake_openai, research_env, status):
    research_env(OPENAI_API_KEY=SECRET_KEY, RESEARCH_MAX_RETRIES="0")
    fake_openai.script(ErrorReply(status, message=f"bad things; key {SECRET_KEY} upstream-detail"))

    with pytest.raises(ResearchError) as raised:
        await plan(UsageLedger())

    for text in (str(raised.value), raised.value.message, repr(raised.value)):
        assert SECRET_KEY not in text
        assert "upstream-detail" not in text
