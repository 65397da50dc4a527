"""The real Responses API's replies, recorded in `../shared/recorded/openai`, replayed byte for byte behind the
real openai SDK: our web search parser, the synthesis, the structured calls and the error translation read
them as a user needs them read. The expectations are computed from each recording's own final response, not
from our code. Skipped where the folder is absent (a user's clone)."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from typing import Any

import openai
import pytest
from pydantic import BaseModel, ConfigDict

from datascraper.errors import (
    ModelRefused,
    ModelUnavailable,
    ProviderAuthFailed,
    ProviderQuotaExceeded,
    ResearchError,
    StreamInterrupted,
    StructuredOutputInvalid,
    UpstreamError,
)
from datascraper.models_config import get_research_config
from datascraper.providers import breaker
from datascraper.providers.openai.client import get_openai_client
from datascraper.providers.openai.failures import translate_error
from datascraper.providers.structured import parse_structured
from datascraper.research_engine.synthesizer import Synthesis
from datascraper.schemas import ModelUsage, UsageLedger
from datascraper.web_search import WebSearchStream
from tests.fakes.openai_recorded import recorded_events, recorded_reply
from tests.recorded import requires_recorded

pytestmark = requires_recorded

WEB_SEARCH_STREAMS = (
    "ws_gpt52_alberta_a",
    "ws_gpt52_alberta_b",
    "ws_gpt5_weather",
    "ws_gpt4o_bitcoin",
    "ws_gpt4o_ethereum",
    "ws_gpt5mini_technews",
    "ws_gpt51_tokyo",
)
_TRACKING = re.compile(r"[?&]utm_source=openai$")


def final_response(name: str) -> dict[str, Any]:
    return recorded_events(name)[-1]["response"]


def answer_as_recorded(response: dict[str, Any]) -> tuple[str, list[tuple[int, str, str]]]:
    """What a reader must see of a recorded answer: its final text with each cited span replaced by its
    page's number (pages numbered by first citation), and the pages (number, annotation title, URL
    without the tracking parameter)."""
    [message] = [item for item in response["output"] if item["type"] == "message"]
    part = message["content"][0]
    text, shown, at = part["text"], [], 0
    numbers: dict[str, int] = {}
    titles: dict[str, str] = {}
    for annotation in sorted(part["annotations"], key=lambda a: a["start_index"]):
        url = _TRACKING.sub("", annotation["url"])
        n = numbers.setdefault(url, len(numbers) + 1)
        titles[url] = annotation["title"]
        shown += [text[at : annotation["start_index"]], f"[{n}]"]
        at = annotation["end_index"]
    shown.append(text[at:])
    return "".join(shown), [(n, titles[url], url) for url, n in numbers.items()]


def usage_as_recorded(response: dict[str, Any]) -> ModelUsage:
    usage = response["usage"]
    return ModelUsage(
        calls=1,
        input_tokens=usage["input_tokens"],
        output_tokens=usage["output_tokens"],
        cached_tokens=usage["input_tokens_details"]["cached_tokens"],
        reasoning_tokens=usage["output_tokens_details"]["reasoning_tokens"],
        web_search_calls=sum(item["type"] == "web_search_call" for item in response["output"]),
    )


async def search(question: str = "q", ledger: UsageLedger | None = None) -> WebSearchStream:
    """A web search read to its end (or its failure, raised); the stream keeps the result."""
    stream = WebSearchStream(question, ledger=ledger)
    async for _ in stream:
        pass
    return stream


# --- streamed web searches --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", WEB_SEARCH_STREAMS)
async def test_a_recorded_web_search_streams_as_text_whose_markers_name_the_pages_it_cites(fake_openai, name):
    fake_openai.script(recorded_reply(name))
    recorded = final_response(name)
    ledger = UsageLedger()

    stream = await search("What does the web say?", ledger)

    text, sources = answer_as_recorded(recorded)
    result = stream.result
    assert result.complete
    assert result.text == text
    assert "](http" not in result.text and "utm_source" not in result.text
    assert [(s.n, s.title, s.url) for s in result.sources] == sources
    assert result.usage == usage_as_recorded(recorded)
    assert ledger.by_model == {"gpt-5.4": result.usage}  # counted under the model asked, not its snapshot


async def test_a_recorded_answer_without_tools_streams_through_the_synthesis_as_written(fake_openai):
    fake_openai.script(recorded_reply("plain_gpt52"))
    ledger = UsageLedger()
    synthesis = Synthesis(
        "What is 2 + 2?",
        [],
        history=(),
        today=date(2026, 1, 18),
        timezone=None,
        config=get_research_config(),
        ledger=ledger,
    )

    shown = [delta.text async for delta in synthesis]

    assert "".join(shown) == synthesis.text == "2+2 = 4"
    assert "tools" not in fake_openai.requests[0].body
    assert ledger.by_model["gpt-5.4"] == usage_as_recorded(final_response("plain_gpt52"))


async def test_a_recorded_answer_cut_by_max_output_tokens_keeps_its_text_and_says_why(fake_openai):
    fake_openai.script(recorded_reply("stream_incomplete_gpt4o"))
    streamed = "".join(
        e["delta"] for e in recorded_events("stream_incomplete_gpt4o") if e["type"] == "response.output_text.delta"
    )
    stream = WebSearchStream("q")

    with pytest.raises(StreamInterrupted) as raised:
        async for _ in stream:
            pass

    assert "max_output_tokens" in raised.value.message
    assert stream.result.text == streamed and streamed.endswith("9. Florida")
    assert not stream.result.complete
    assert stream.result.usage.output_tokens == 50


async def test_a_recorded_streamed_refusal_ends_as_a_refusal_in_the_models_words(fake_openai):
    fake_openai.script(recorded_reply("stream_refusal_gpt4o"))
    stream = WebSearchStream("q")

    with pytest.raises(ModelRefused) as raised:
        async for _ in stream:
            pass

    assert raised.value.message == "I'm sorry, I can't assist with that."
    assert stream.result.text == ""


async def test_a_recorded_stream_of_an_account_without_credit_is_quota_exceeded_at_once(fake_openai, research_env):
    research_env(RESEARCH_MAX_RETRIES="2")
    fake_openai.script(recorded_reply("stream_error_quota_gpt5nano"))
    ledger = UsageLedger()

    with pytest.raises(ProviderQuotaExceeded) as raised:
        await search(ledger=ledger)

    assert raised.value.code == "provider_quota_exceeded"
    assert [request.status for request in fake_openai.requests] == [200]  # HTTP 200, the failure inside
    assert ledger.by_model["gpt-5.4"] == ModelUsage(calls=1)  # `usage: null`
    breaker.WEB_SEARCH.check()  # not taken for a hung provider: the next search may go


async def test_the_sdks_own_stream_of_that_recording_translates_to_quota_exceeded_too(fake_openai):
    fake_openai.script(recorded_reply("stream_error_quota_gpt5nano"))
    stream = await get_openai_client().responses.create(model="gpt-5.4", input="q", stream=True)

    with pytest.raises(openai.APIError) as raised:
        async for _ in stream:
            pass

    assert isinstance(translate_error(raised.value, model="gpt-5.4"), ProviderQuotaExceeded)


# --- structured calls ---------------------------------------------------------------------------------------


class Payment(BaseModel):
    """The schema of the recorded strict structured answer (pydantic-ai's decimal test)."""

    model_config = ConfigDict(extra="forbid")
    amount: Decimal


async def test_a_recorded_strict_structured_answer_parses_and_counts_its_usage(fake_openai):
    fake_openai.script(recorded_reply("json_structured_gpt54mini"))
    ledger = UsageLedger()

    payment = await parse_structured("gpt-5.4-mini", "Extract the payment.", "I paid 12.34.", Payment, ledger)

    assert payment == Payment(amount=Decimal("12.34"))
    assert ledger.by_model["gpt-5.4-mini"] == ModelUsage(calls=1, input_tokens=72, output_tokens=14)


@pytest.mark.parametrize(
    ("name", "error"),
    [("json_refusal_gpt4o", ModelRefused), ("json_incomplete_gpt4o", StructuredOutputInvalid)],
    ids=["refusal", "incomplete"],
)
async def test_a_recorded_structured_refusal_or_cut_answer_raises_its_named_error(fake_openai, name, error):
    fake_openai.script(recorded_reply(name))  # gzip-encoded, as the API sent it

    with pytest.raises(error) as raised:
        await parse_structured("gpt-5.4-mini", "Answer.", "q", Payment, UsageLedger())

    if error is ModelRefused:
        assert raised.value.message == "I'm very sorry, but I can't assist with that."


# --- errors -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "streamed", "code"),
    [
        ("err_400_model_not_found", False, "model_unavailable"),
        ("err_400_model_not_found_raw", False, "model_unavailable"),
        ("err_400_model_not_found_stream", True, "model_unavailable"),
        ("err_401_invalid_api_key", False, "provider_auth_failed"),
        ("err_401_invalid_api_key_stream", True, "provider_auth_failed"),
        ("err_400_invalid_value", True, "upstream_error"),
        ("err_429_insufficient_quota_body", False, "provider_quota_exceeded"),
    ],
)
async def test_a_recorded_error_is_translated_by_its_code_after_one_request(
    fake_openai, research_env, name, streamed, code
):
    research_env(RESEARCH_MAX_RETRIES="2", RESEARCH_PLANNER_MODEL="gpt-5.4-mini")
    fake_openai.script(recorded_reply(name), times=None)

    with pytest.raises(ResearchError) as raised:
        if streamed:
            await search()
        else:
            await parse_structured("gpt-5.4-mini", "Answer.", "q", Payment, UsageLedger())

    failure = raised.value
    assert failure.code == code
    assert len(fake_openai.requests) == 1, "none of these is worth retrying"
    assert "does not exist" not in failure.message and "*****" not in failure.message  # never the upstream body
    if isinstance(failure, ModelUnavailable):
        model, setting = ("gpt-5.4", "RESEARCH_MODEL") if streamed else ("gpt-5.4-mini", "RESEARCH_PLANNER_MODEL")
        assert (failure.model, failure.setting) == (model, setting)
        assert f"'{model}'" in failure.message and setting in failure.message
    if isinstance(failure, UpstreamError):
        assert failure.message == "The model provider returned an error (HTTP 400, decimal_below_min_value)."
    if isinstance(failure, ProviderAuthFailed):
        assert "OPENAI_API_KEY" in failure.message
