"""The provider layer: client set-up, per-model request options, usage and named failures."""

from __future__ import annotations

import socket
from datetime import date
from typing import Literal

import pytest
from openai.lib._parsing._responses import type_to_text_format_param
from pydantic import BaseModel

from datascraper.errors import (
    ModelRefused,
    ModelUnavailable,
    ProviderAuthFailed,
    ProviderNotConfigured,
    ProviderQuotaExceeded,
    ResearchError,
    StructuredOutputInvalid,
    UpstreamError,
    UpstreamRateLimited,
    UpstreamTimeout,
)
from datascraper.providers.openai.capabilities import capabilities_for, request_options
from datascraper.providers.openai.client import get_openai_client, reset_openai_client
from datascraper.providers.openai.usage import usage_from_response
from datascraper.providers.structured import parse_structured
from datascraper.schemas import ModelUsage, UsageLedger
from tests.fakes.openai_server import ErrorReply, JsonReply, RefusalReply, TextReply, Usage

SECRET_KEY = "sk-test-SECRET-0123456789"


class Plan(BaseModel):
    needs_decomposition: bool
    sub_questions: list[str]
    kind: Literal["numerical", "qualitative", "analytical"]


async def plan(ledger: UsageLedger, model: str = "gpt-5.4-mini") -> Plan:
    return await parse_structured(model, "Plan the research.", "How did Apple do?", Plan, ledger)


# --- request options ----------------------------------------------------------------------------------


def test_reasoning_model_gets_a_reasoning_effort_it_takes_and_never_temperature():
    assert request_options("gpt-5.4-mini", effort="medium", temperature=0.3) == {"reasoning": {"effort": "medium"}}
    assert request_options("o4-mini") == {"reasoning": {"effort": "low"}}
    assert request_options("gpt-5.5-2026-04-23", effort="high") == {"reasoning": {"effort": "high"}}


def test_newer_models_are_reasoning_models_too():
    # The old rule guessed from name prefixes; gpt-6 and the gpt-5.6 tiers take an effort all the same.
    for model in ("gpt-6-sol", "gpt-6.2-astra", "gpt-5.6-terra", "gpt-5.4", "gpt-5.5"):
        assert capabilities_for(model).is_reasoning, model


def test_an_effort_the_model_does_not_know_becomes_the_nearest_it_does():
    assert request_options("gpt-5.4", effort="minimal") == {"reasoning": {"effort": "low"}}  # gpt-5.1+ refuse minimal
    assert request_options("gpt-5.4-mini", effort="none") == {"reasoning": {"effort": "low"}}
    assert request_options("gpt-5-mini", effort="minimal") == {"reasoning": {"effort": "minimal"}}
    assert request_options("o3", effort="xhigh") == {"reasoning": {"effort": "high"}}


def test_chat_model_gets_no_reasoning_and_no_temperature():
    assert request_options("gpt-5.2-chat-latest", effort="high", temperature=0.2) == {}


def test_a_model_with_sampling_keeps_its_temperature():
    assert request_options("gpt-4.1", temperature=0.2) == {"temperature": 0.2}


def test_an_unknown_model_gets_the_conservative_options():
    assert request_options("acme-finance-7b", effort="high", temperature=0.2) == {}
    assert request_options("acme-finance-7b", web_search=True) == {}


def test_web_search_never_gets_minimal_or_no_reasoning():
    assert request_options("gpt-5-mini", effort="minimal", web_search=True) == {"reasoning": {"effort": "low"}}
    assert request_options("gpt-5.4", effort="none", web_search=True) == {"reasoning": {"effort": "low"}}


def test_usage_without_a_usage_object_still_counts_the_call():
    assert usage_from_response(None) == ModelUsage(calls=1)


def test_usage_counts_cached_input_and_hosted_searches_and_the_budget_weighs_cached_input_lightly():
    usage = usage_from_response(
        {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 800}, "output_tokens": 100},
        [{"type": "web_search_call"}, {"type": "web_search_call"}, {"type": "message"}],
    )

    assert usage == ModelUsage(calls=1, input_tokens=1000, output_tokens=100, cached_tokens=800, web_search_calls=2)
    assert usage.budget_tokens == pytest.approx(200 + 80 + 100)


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
    assert ledger.by_model["gpt-5.4-mini"] == ModelUsage(calls=1, input_tokens=50, output_tokens=30, reasoning_tokens=12)
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


async def test_parse_structured_sends_no_reasoning_to_a_model_without_it(fake_openai):
    await plan(UsageLedger(), model="gpt-4.1")

    assert "reasoning" not in fake_openai.requests[0].body


async def test_a_refused_structured_answer_raises_model_refused_with_the_models_words(fake_openai):
    fake_openai.script(RefusalReply("I can't plan that."))

    with pytest.raises(ModelRefused) as raised:
        await plan(UsageLedger())

    assert raised.value.code == "model_refused" and raised.value.message == "I can't plan that."


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
    assert ledger.by_model["gpt-5.4-mini"].calls == 1
    assert ledger.by_model["gpt-5.4-mini"].output_tokens > 0  # the tokens were spent all the same


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


async def test_rejected_key_raises_provider_auth_failed_without_retrying(fake_openai):
    fake_openai.revoked_keys.add("test-key")

    with pytest.raises(ProviderAuthFailed) as raised:
        await plan(UsageLedger())

    assert raised.value.code == "provider_auth_failed" and "OPENAI_API_KEY" in raised.value.message
    assert len(fake_openai.requests) == 1


async def test_an_account_without_credit_raises_quota_exceeded_after_one_request(fake_openai, research_env):
    research_env(RESEARCH_MAX_RETRIES="2")
    fake_openai.set_default(ErrorReply(429, type="insufficient_quota", code="insufficient_quota"))

    with pytest.raises(ProviderQuotaExceeded) as raised:
        await plan(UsageLedger())

    assert raised.value.code == "provider_quota_exceeded"
    assert len(fake_openai.requests) == 1  # not worth retrying: the SDK is told not to


async def test_a_retired_planner_model_raises_model_unavailable_naming_the_model_and_its_setting(
    fake_openai, research_env
):
    research_env(RESEARCH_PLANNER_MODEL="gpt-5-mini")
    fake_openai.today = date(2026, 12, 11)  # gpt-5-mini's announced shutdown

    with pytest.raises(ModelUnavailable) as raised:
        await plan(UsageLedger(), model="gpt-5-mini")

    assert raised.value.code == "model_unavailable"
    assert "'gpt-5-mini'" in raised.value.message and "RESEARCH_PLANNER_MODEL" in raised.value.message


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
