"""A web-searched answer streams as text with `[n]` markers that resolve to numbered web sources."""

from __future__ import annotations

import asyncio
import json
import re
from contextlib import aclosing
from datetime import date

import httpx2
import openai
import pytest

from datascraper import prompts
from datascraper.errors import (
    ModelUnavailable,
    ProviderAuthFailed,
    ProviderNotConfigured,
    ProviderQuotaExceeded,
    StreamInterrupted,
    UpstreamError,
    UpstreamRateLimited,
    UpstreamTimeout,
)
from datascraper.providers.openai.citations import CitationRewriter
from datascraper.schemas import ChatTurn, ModelUsage, Source, UsageLedger
from datascraper.sources import clean_url
from datascraper.web_search import WebSearchStream
from tests.fakes.openai_server import (
    NO_CREDIT,
    ErrorReply,
    FindInPage,
    OpenPage,
    Search,
    Sentence,
    TextReply,
    Usage,
    render_cited_text,
)

REUTERS = ("https://www.reuters.com/markets/us/apple-results-2025", "Apple beats estimates | Reuters")
FT = ("https://www.ft.com/content/apple?ref=home", "Apple services growth - FT")
CNBC = ("https://www.cnbc.com/2025/10/30/apple-earnings.html", "Apple earnings - CNBC")
APPLE_SENTENCES = [
    Sentence("Apple's revenue rose 6% to $94.9 billion in fiscal Q4 2025.", cites=[REUTERS]),
    Sentence("Services revenue reached a record $27.4 billion.", cites=[FT, REUTERS]),
    Sentence("Shares rose 2% after hours.", cites=[CNBC]),
]
MARKER = re.compile(r"\[(\d+)\]")


async def collect(stream: WebSearchStream) -> str:
    return "".join([delta.text async for delta in stream])


# --- the citation rewriter --------------------------------------------------------------------------------


def rewrite_in_chunks(raw: str, size: int, rewriter: CitationRewriter | None = None) -> str:
    rewriter = rewriter or CitationRewriter()
    shown = "".join(rewriter.feed(raw[i : i + size]) for i in range(0, len(raw), size))
    return shown + rewriter.flush()


@pytest.mark.parametrize("size", [1, 2, 3, 7, 50, 10_000])
def test_links_become_markers_however_the_text_is_split(size):
    raw, _ = render_cited_text(APPLE_SENTENCES)

    assert rewrite_in_chunks(raw, size) == (
        "Apple's revenue rose 6% to $94.9 billion in fiscal Q4 2025. [1] "
        "Services revenue reached a record $27.4 billion. [2] [1] "
        "Shares rose 2% after hours. [3]"
    )


def test_sources_are_deduplicated_by_url_without_tracking_parameters():
    rewriter = CitationRewriter()
    rewrite_in_chunks(render_cited_text(APPLE_SENTENCES)[0], 5, rewriter)

    assert rewriter.sources == [
        Source(n=1, title="reuters.com", url=REUTERS[0], kind="web"),
        Source(n=2, title="ft.com", url=FT[0], kind="web"),
        Source(n=3, title="cnbc.com", url=CNBC[0], kind="web"),
    ]


def test_annotation_title_replaces_the_link_label_and_numbers_start_after_the_offset():
    rewriter = CitationRewriter(source_offset=4)
    shown = rewriter.feed("Rates held. ([federalreserve.gov](https://www.federalreserve.gov/x?utm_source=openai))")
    rewriter.cite("https://www.federalreserve.gov/x?utm_source=openai", "FOMC statement")

    assert shown == "Rates held. [5]"
    assert rewriter.sources == [Source(n=5, title="FOMC statement", url="https://www.federalreserve.gov/x", kind="web")]


def test_a_group_of_links_in_one_parenthesis_becomes_consecutive_markers():
    rewriter = CitationRewriter()
    shown = rewriter.feed("Up 3%. ([a.com](https://a.com/1), [b.com](https://b.com/2)) Next.")

    assert shown == "Up 3%. [1][2] Next."


def test_plain_parentheses_and_links_are_shown_at_once():
    rewriter = CitationRewriter()

    assert rewriter.feed("EPS (diluted) was $1.85 ") == "EPS (diluted) was $1.85 "
    assert rewriter.feed("(see [the filing](https://sec.gov/x) below)") == "(see [the filing](https://sec.gov/x) below)"
    assert rewriter.feed("([not a url](ftp://x)) done") == "([not a url](ftp://x)) done"
    assert rewriter.sources == []


def test_only_a_possible_link_is_held_back_and_only_up_to_the_bound():
    rewriter = CitationRewriter(max_held_chars=40)

    assert rewriter.feed("Revenue rose. ([reuters.com](https://www.reut") == "Revenue rose. "
    assert rewriter.feed("ers.com/a)) More") == "[1] More"
    assert rewriter.feed(" text ([x](https://example.com/" + "a" * 40) == " text ([x](https://example.com/" + "a" * 40
    assert rewriter.flush() == ""


def test_tracking_parameters_are_stripped_and_others_kept():
    assert clean_url("https://x.com/a?id=3&utm_source=openai&utm_medium=x") == "https://x.com/a?id=3"
    assert clean_url("https://x.com/a?utm_source=openai") == "https://x.com/a"


# --- the streamed call ------------------------------------------------------------------------------------


async def test_answer_streams_with_markers_that_all_resolve_and_collects_usage(fake_openai):
    fake_openai.script(TextReply(APPLE_SENTENCES, usage=Usage(input_tokens=800, output_tokens=120)))
    ledger = UsageLedger()
    stream = WebSearchStream("How did Apple do last quarter?", ledger=ledger)

    text = await collect(stream)

    result = stream.result
    assert result.complete and result.text == text
    assert "](" not in text and "utm_source" not in text
    assert {int(n) for n in MARKER.findall(text)} == {s.n for s in result.sources} == {1, 2, 3}
    assert [(s.n, s.title, s.url) for s in result.sources] == [
        (1, REUTERS[1], REUTERS[0]),
        (2, FT[1], FT[0]),
        (3, CNBC[1], CNBC[0]),
    ]
    assert result.usage == ModelUsage(calls=1, input_tokens=800, output_tokens=120, web_search_calls=1)
    assert ledger.by_model == {"gpt-5.4": result.usage}


async def test_text_is_yielded_while_the_answer_is_still_being_written(fake_openai):
    fake_openai.script(TextReply(APPLE_SENTENCES, chunk_chars=12, delta_delay=0.01))
    stream = WebSearchStream("How did Apple do?")
    deltas_before_end = 0

    async for _ in stream:
        if fake_openai.requests[0].ended_at is None:
            deltas_before_end += 1

    assert deltas_before_end > 5


async def test_request_uses_hosted_web_search_with_history_and_todays_date(fake_openai):
    history = [ChatTurn(role="user", content="Tell me about Apple."), ChatTurn(role="assistant", content="Apple...")]

    await collect(WebSearchStream("And its margins?", history=history, today=date(2025, 11, 3)))

    (request,) = fake_openai.requests
    assert request.model == "gpt-5.4"
    assert request.stream and request.body["tools"] == [{"type": "web_search"}]
    assert request.body["reasoning"] == {"effort": "low"} and "temperature" not in request.body
    assert request.body["input"] == [
        {"role": "user", "content": "Tell me about Apple."},
        {"role": "assistant", "content": "Apple..."},
        {"role": "user", "content": "And its margins?"},
    ]
    assert request.instructions.startswith(prompts.QUICK_ANSWER_INSTRUCTIONS)
    assert "Monday, November 3, 2025 (2025-11-03)" in request.instructions


async def test_reasoning_model_searches_with_low_effort_and_no_temperature(fake_openai):
    await collect(WebSearchStream("q", model="gpt-5.4-mini"))

    request = fake_openai.requests[0]
    assert request.body["reasoning"] == {"effort": "low"}
    assert "temperature" not in request.body


async def test_consumer_stopping_early_closes_the_call_and_still_counts_it(fake_openai):
    fake_openai.script(TextReply(APPLE_SENTENCES, chunk_chars=4, delta_delay=0.05))
    ledger = UsageLedger()
    stream = WebSearchStream("q", ledger=ledger)

    async with aclosing(stream.__aiter__()) as deltas:
        async for _ in deltas:
            break

    for _ in range(50):
        if fake_openai.requests[0].ended_at is not None:
            break
        await asyncio.sleep(0.02)
    assert fake_openai.requests[0].ended_at is not None  # the fake saw the client go away
    assert ledger.calls == 1 and not stream.result.complete


# --- the real stream's shapes -----------------------------------------------------------------------------


async def test_citations_resolve_when_searches_open_pages_and_reasoning_come_between_and_annotations_come_late(
    fake_openai,
):
    actions = [Search("apple q4"), OpenPage(REUTERS[0]), FindInPage("services", FT[0]), Search("apple shares")]
    fake_openai.script(TextReply(APPLE_SENTENCES, chunk_chars=7, annotation_lag=4, actions=actions))
    stream = WebSearchStream("How did Apple do last quarter?", model="gpt-5-mini")

    text = await collect(stream)

    assert text == (
        "Apple's revenue rose 6% to $94.9 billion in fiscal Q4 2025. [1] "
        "Services revenue reached a record $27.4 billion. [2] [1] "
        "Shares rose 2% after hours. [3]"
    )
    assert [(s.n, s.title, s.url) for s in stream.result.sources] == [
        (1, REUTERS[1], REUTERS[0]),
        (2, FT[1], FT[0]),
        (3, CNBC[1], CNBC[0]),
    ]
    assert stream.result.usage.web_search_calls == 4


async def test_several_links_and_their_annotations_in_one_long_delta_each_resolve(fake_openai):
    fake_openai.script(TextReply(APPLE_SENTENCES, chunk_chars=200))

    text = await collect(WebSearchStream("q"))

    assert MARKER.findall(text) == ["1", "2", "1", "3"]


async def test_a_source_whose_late_annotation_never_came_keeps_the_links_label(fake_openai):
    raw, _ = render_cited_text(APPLE_SENTENCES)
    cut = raw.index("Services")
    fake_openai.script(TextReply(APPLE_SENTENCES, chunk_chars=cut, annotation_lag=2, interrupt="drop", after_deltas=1))
    stream = WebSearchStream("q")

    with pytest.raises(StreamInterrupted):
        await collect(stream)

    assert stream.result.sources == [Source(n=1, title="reuters.com", url=REUTERS[0], kind="web")]


# --- failures ---------------------------------------------------------------------------------------------


async def test_rate_limit_raises_upstream_rate_limited_after_the_retries(fake_openai, research_env):
    research_env(RESEARCH_MAX_RETRIES="2")
    fake_openai.script(ErrorReply(429), times=3)
    ledger = UsageLedger()

    with pytest.raises(UpstreamRateLimited):
        await collect(WebSearchStream("q", ledger=ledger))

    assert len(fake_openai.requests) == 3
    assert ledger.calls == 1


async def test_server_error_raises_upstream_error(fake_openai, research_env):
    research_env(RESEARCH_MAX_RETRIES="1")
    fake_openai.set_default(ErrorReply(500))

    with pytest.raises(UpstreamError):
        await collect(WebSearchStream("q"))

    assert len(fake_openai.requests) == 2


async def test_slow_first_byte_raises_upstream_timeout(fake_openai, research_env):
    research_env(RESEARCH_REQUEST_TIMEOUT="0.2", RESEARCH_MAX_RETRIES="0")
    fake_openai.script(TextReply(first_byte_delay=2))

    with pytest.raises(UpstreamTimeout):
        await collect(WebSearchStream("q"))


async def test_a_stream_that_goes_quiet_mid_answer_raises_upstream_timeout_with_the_partial_text(
    fake_openai, research_env
):
    research_env(RESEARCH_REQUEST_TIMEOUT="0.3", RESEARCH_MAX_RETRIES="0")
    fake_openai.script(TextReply(["Apple's revenue rose 6%."], chunk_chars=5, delta_delay=1.0))
    stream = WebSearchStream("q")
    shown: list[str] = []

    with pytest.raises(UpstreamTimeout):
        async for delta in stream:
            shown.append(delta.text)

    assert shown == ["Apple"]
    assert stream.result.text == "Apple" and not stream.result.complete


async def test_broken_stream_raises_stream_interrupted_and_keeps_the_partial_answer(fake_openai):
    raw, _ = render_cited_text(APPLE_SENTENCES)
    cut = raw.index("Services") + len("Services rev")
    fake_openai.script(TextReply(APPLE_SENTENCES, chunk_chars=cut, interrupt="drop", after_deltas=1))
    stream = WebSearchStream("q")
    shown: list[str] = []

    with pytest.raises(StreamInterrupted):
        async for delta in stream:
            shown.append(delta.text)

    partial = stream.result
    assert not partial.complete
    assert partial.text == "".join(shown)
    assert partial.text == "Apple's revenue rose 6% to $94.9 billion in fiscal Q4 2025. [1] Services rev"
    assert partial.sources == [Source(n=1, title=REUTERS[1], url=REUTERS[0], kind="web")]


async def test_stream_cut_inside_a_link_shows_the_held_text_before_failing(fake_openai):
    raw, _ = render_cited_text(APPLE_SENTENCES)
    cut = raw.index("([reuters.com]") + 10
    fake_openai.script(TextReply(APPLE_SENTENCES, chunk_chars=cut, interrupt="drop", after_deltas=1))
    stream = WebSearchStream("q")

    with pytest.raises(StreamInterrupted):
        await collect(stream)

    assert stream.result.text == raw[:cut]


@pytest.mark.parametrize(
    ("interrupt", "code", "error"),
    [
        ("incomplete", "", StreamInterrupted),
        ("error", "server_error", UpstreamError),
        ("failed", "server_error", UpstreamError),
        ("error", "insufficient_quota", ProviderQuotaExceeded),
        ("failed", "insufficient_quota", ProviderQuotaExceeded),
        ("error", "rate_limit_exceeded", UpstreamRateLimited),
        ("error", "invalid_api_key", ProviderAuthFailed),
        ("error", "model_not_found", ModelUnavailable),
    ],
)
async def test_a_failure_inside_the_stream_raises_the_named_error_of_its_code_with_the_partial_text(
    fake_openai, interrupt, code, error
):
    fake_openai.script(
        TextReply(["Apple's revenue rose 6%."], chunk_chars=5, interrupt=interrupt, after_deltas=2, error_code=code)
    )
    stream = WebSearchStream("q")

    with pytest.raises(error) as raised:
        await collect(stream)

    assert stream.result.text == "Apple's re"
    assert not stream.result.complete
    if error is ModelUnavailable:
        assert "'gpt-5.4'" in raised.value.message and "RESEARCH_MODEL" in raised.value.message


async def test_an_account_without_credit_fails_inside_the_stream_once_and_leaves_the_breaker_closed(
    fake_openai, research_env
):
    research_env(RESEARCH_MAX_RETRIES="2")
    fake_openai.set_default(NO_CREDIT)  # HTTP 200, then `error` (insufficient_quota) and `response.failed`
    ledger = UsageLedger()

    with pytest.raises(ProviderQuotaExceeded) as raised:
        await collect(WebSearchStream("q", ledger=ledger))

    assert raised.value.code == "provider_quota_exceeded"
    assert len(fake_openai.requests) == 1 and ledger.calls == 1
    fake_openai.set_default(None)
    assert (await collect(WebSearchStream("q"))).startswith("This is the fake"), "the next search is not refused"


async def test_a_retired_research_model_is_refused_with_a_400_that_names_the_model_and_its_setting(
    fake_openai, research_env
):
    research_env(RESEARCH_MODEL="gpt-5.2-chat-latest", RESEARCH_MAX_RETRIES="2")
    fake_openai.today = date(2026, 11, 26)

    with pytest.raises(ModelUnavailable) as raised:
        await collect(WebSearchStream("q"))

    assert fake_openai.requests[0].status == 400  # as the real Responses API answers it, streamed or not
    assert raised.value.message == (
        "The model 'gpt-5.2-chat-latest' is not available from the model provider (it may have been shut down): "
        "set RESEARCH_MODEL to a current model."
    )
    assert len(fake_openai.requests) == 1


async def test_an_event_that_is_not_json_raises_stream_interrupted_with_the_partial_text(monkeypatch):
    # The fake server only speaks valid JSON: a transport of our own sends the broken frame.
    frames = [
        {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress"}},
        {"type": "response.output_text.delta", "sequence_number": 1, "delta": "Apple grew 8%."},
    ]
    body = b"".join(f"event: {f['type']}\ndata: {json.dumps(f)}\n\n".encode() for f in frames)
    body += b"event: response.output_text.delta\ndata: {not json\n\n"

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = openai.AsyncOpenAI(
        api_key="test", base_url="http://openai.test/v1", max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(answer)),
    )
    monkeypatch.setattr("datascraper.providers.openai.provider.get_openai_client", lambda: client)
    stream = WebSearchStream("q")

    with pytest.raises(StreamInterrupted):
        await collect(stream)

    assert stream.result.text == "Apple grew 8%."
    assert not stream.result.complete


async def test_missing_key_raises_provider_not_configured_without_calling(fake_openai, monkeypatch, research_env):
    monkeypatch.delenv("OPENAI_API_KEY")
    research_env()
    ledger = UsageLedger()

    with pytest.raises(ProviderNotConfigured):
        await collect(WebSearchStream("q", ledger=ledger))

    assert fake_openai.requests == [] and ledger.calls == 0
