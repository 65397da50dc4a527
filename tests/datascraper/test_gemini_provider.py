"""The `google` provider through the real google-genai SDK against the fake Gemini API at its wire: structured
answers, streamed answers whose grounding metadata becomes `[n]` markers and sources, usage as billed, the
model list, and each failure as its named error."""

from __future__ import annotations

import pytest
from google.genai import errors as genai_errors

from datascraper.errors import (
    ModelRefused,
    ModelUnavailable,
    ProviderAuthFailed,
    ProviderNotConfigured,
    ProviderQuotaExceeded,
    StreamInterrupted,
    StructuredOutputInvalid,
    UpstreamError,
    UpstreamRateLimited,
)
from datascraper.plan_schemas import QueryAnalysis
from datascraper.providers.lifecycle import check_models
from datascraper.providers.registry import provider_for
from datascraper.providers.structured import parse_structured
from datascraper.schemas import ModelUsage, Source, UsageLedger
from datascraper.web_search import WebSearchStream
from tests.datascraper.research_support import sub
from tests.fakes.gemini_fixtures import PLANNER, RESEARCHER, fake_gemini  # noqa: F401 (a fixture)
from tests.fakes.gemini_server import TEST_GEMINI_KEY, FakeGemini, wants_schema
from tests.fakes.gemini_wire import (
    Cited,
    GeminiBlocked,
    GeminiJson,
    GeminiText,
    Usage,
    overloaded,
    resource_exhausted,
)

REUTERS = ("https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZIYQreuters", "reuters.com")
FT = ("https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZIYQft", "ft.com")


async def plan(ledger: UsageLedger | None = None) -> QueryAnalysis:
    return await parse_structured(
        PLANNER, "Plan the research.", "Apple's revenue?", QueryAnalysis, ledger or UsageLedger()
    )


async def search(question: str = "Apple's revenue?", **options: object) -> WebSearchStream:
    """A web search by the configured research model (RESEARCH_MODEL)."""
    stream = WebSearchStream(question, **options)
    async for _ in stream:
        pass
    return stream


# --- structured answers ------------------------------------------------------------------------------------


async def test_a_structured_answer_sends_the_schema_as_json_schema_and_counts_usage_as_billed(fake_gemini):
    analysis = QueryAnalysis(needs_decomposition=True, sub_questions=[sub("What did Apple earn?")])
    fake_gemini.script(
        GeminiJson(analysis, usage=Usage(prompt=300, candidates=40, thoughts=25, cached=100)),
        when=wants_schema("QueryAnalysis"),
    )
    ledger = UsageLedger()

    assert await plan(ledger) == analysis

    [request] = fake_gemini.requests
    assert request.path == "/v1beta/models/gemini-2.5-flash-lite:generateContent"
    assert request.generation["responseMimeType"] == "application/json"
    assert request.generation["responseJsonSchema"]["title"] == "QueryAnalysis"
    assert request.body["systemInstruction"]["parts"] == [{"text": "Plan the research."}]
    assert request.body["contents"] == [{"role": "user", "parts": [{"text": "Apple's revenue?"}]}]
    assert ledger.by_model == {
        PLANNER: ModelUsage(calls=1, input_tokens=300, cached_tokens=100, output_tokens=65, reasoning_tokens=25)
    }


async def test_a_blocked_prompt_is_a_refusal_and_a_cut_structured_answer_is_invalid(fake_gemini):
    fake_gemini.script(GeminiBlocked("PROHIBITED_CONTENT"))
    with pytest.raises(ModelRefused, match="PROHIBITED_CONTENT"):
        await plan()

    fake_gemini.script(GeminiJson({"needs_decomposition": False}, finish_reason="MAX_TOKENS"))
    with pytest.raises(StructuredOutputInvalid, match="stopped before finishing"):
        await plan()


# --- streamed answers and their grounding --------------------------------------------------------------------


async def test_grounding_becomes_markers_at_the_segments_byte_offsets_and_numbered_sources(fake_gemini):
    fake_gemini.script(
        GeminiText(
            (
                Cited("Apple's revenue was €358 billion, a record.", (REUTERS,)),
                "Nothing cites this sentence.",
                Cited("Services grew 13% — the fastest.", (FT, REUTERS)),
            ),
            queries=("apple revenue 2024", "", "apple services growth"),
            usage=Usage(prompt=50, candidates=80, tool_use=400),
        )
    )

    stream = await search(source_offset=2)

    assert stream.result.text == (
        "Apple's revenue was €358 billion, a record. [3] Nothing cites this sentence. "
        "Services grew 13% — the fastest. [4][3]"
    )
    assert stream.result.sources == [
        Source(n=3, title="reuters.com", url=REUTERS[0], kind="web", site="reuters.com"),
        Source(n=4, title="ft.com", url=FT[0], kind="web", site="ft.com"),
    ]
    # The search results fed to the model count as input; each non-empty search query is a billed search.
    assert stream.result.usage == ModelUsage(calls=1, input_tokens=450, output_tokens=80, web_search_calls=2)
    assert stream.result.complete
    [request] = fake_gemini.requests
    assert request.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    assert request.body["tools"] == [{"googleSearch": {}}]


async def test_without_the_search_tool_the_answer_streams_as_it_is_written(fake_gemini):
    sentences = tuple(f"Sentence {n} of the written answer, long enough to come in pieces." for n in range(4))
    fake_gemini.script(GeminiText(sentences))
    stream = WebSearchStream("Write it.", model=RESEARCHER, web_search=False)

    deltas = [event.text async for event in stream]

    assert len(deltas) > 1 and "".join(deltas) == " ".join(sentences)
    assert stream.result.sources == [] and stream.result.usage.web_search_calls == 0
    [request] = fake_gemini.requests
    assert "tools" not in request.body


async def test_the_history_goes_as_user_and_model_turns(fake_gemini):
    from datascraper.schemas import ChatTurn

    await search(
        "And its margin?",
        history=[ChatTurn(role="user", content="Apple's revenue?"), ChatTurn(role="assistant", content="$391B.")],
    )

    assert [(c["role"], c["parts"][0]["text"]) for c in fake_gemini.requests[0].body["contents"]] == [
        ("user", "Apple's revenue?"),
        ("model", "$391B."),
        ("user", "And its margin?"),
    ]


async def test_a_stream_that_ends_without_its_finish_is_interrupted_after_the_text_it_had(fake_gemini):
    fake_gemini.script(GeminiText(tuple(f"Sentence {n} of a long answer that is cut." for n in range(4)), cut_after=2))
    stream = WebSearchStream("q", model=RESEARCHER, web_search=False)
    shown: list[str] = []

    with pytest.raises(StreamInterrupted):
        async for event in stream:
            shown.append(event.text)

    assert shown and not stream.result.complete and stream.result.usage.output_tokens > 0


async def test_a_blocked_web_search_is_a_refusal_with_nothing_shown(fake_gemini):
    fake_gemini.script(GeminiBlocked("SAFETY"))
    stream = WebSearchStream("q", model=RESEARCHER)

    with pytest.raises(ModelRefused, match="SAFETY"):
        async for _ in stream:
            pass

    assert stream.result.text == "" and not stream.result.complete and stream.result.usage.input_tokens == 8


# --- failures ------------------------------------------------------------------------------------------------


async def test_a_wrong_key_is_auth_failed_naming_the_gemini_key_after_one_request(fake_gemini, research_env):
    fake_gemini.keys = {"placeholder-key-other"}

    with pytest.raises(ProviderAuthFailed) as raised:
        await plan()

    assert raised.value.code == "provider_auth_failed" and "GEMINI_API_KEY" in raised.value.message
    assert TEST_GEMINI_KEY not in raised.value.message and "API key not valid" not in raised.value.message
    assert isinstance(raised.value.__cause__, genai_errors.ClientError) and raised.value.__cause__.code == 400
    with pytest.raises(ProviderAuthFailed):
        await search()


async def test_an_unknown_model_is_model_unavailable_naming_its_setting(fake_gemini, research_env):
    research_env(RESEARCH_MODEL="google:gemini-1.0-pro")

    with pytest.raises(ModelUnavailable) as raised:
        await search()

    assert raised.value.code == "model_unavailable"
    assert "google:gemini-1.0-pro" in raised.value.message and "RESEARCH_MODEL" in raised.value.message
    assert len(fake_gemini.requests) == 1


async def test_a_used_up_daily_quota_is_quota_exceeded_and_not_retried(fake_gemini):
    fake_gemini.script(resource_exhausted(per_day=True), times=None)

    with pytest.raises(ProviderQuotaExceeded) as raised:
        await plan()

    assert raised.value.code == "provider_quota_exceeded" and "GEMINI_API_KEY" in raised.value.message
    assert len(fake_gemini.requests) == 1


async def test_a_rate_limit_is_retried_and_then_rate_limited(fake_gemini, research_env):
    research_env(RESEARCH_MAX_RETRIES="1")
    fake_gemini.script(resource_exhausted(per_day=False))
    await plan()
    assert len(fake_gemini.requests) == 2  # the 429, then the answer

    fake_gemini.script(resource_exhausted(per_day=False), times=None)
    with pytest.raises(UpstreamRateLimited):
        await search()
    assert len(fake_gemini.requests) == 4


async def test_an_overloaded_server_is_retried_then_an_upstream_error_naming_its_status(fake_gemini, research_env):
    research_env(RESEARCH_MAX_RETRIES="1")
    fake_gemini.script(overloaded(), times=None)

    with pytest.raises(UpstreamError, match=r"HTTP 503, UNAVAILABLE"):
        await plan()
    assert len(fake_gemini.requests) == 2


async def test_without_a_gemini_key_nothing_is_sent_and_the_key_is_named(fake_gemini, monkeypatch, research_env):
    monkeypatch.delenv("GEMINI_API_KEY")
    research_env()
    ledger = UsageLedger()

    with pytest.raises(ProviderNotConfigured, match="GEMINI_API_KEY"):
        await plan(ledger)

    assert fake_gemini.requests == [] and ledger.calls == 0


# --- the model list ------------------------------------------------------------------------------------------


async def test_the_model_list_reads_every_page_and_names_models_without_their_prefix(fake_gemini: FakeGemini):
    provider, _ = provider_for(RESEARCHER)

    listing = await provider.list_models(timeout_s=5)

    assert listing == dict.fromkeys(sorted(fake_gemini.models))  # two per page: two pages read


async def test_the_model_list_with_a_wrong_key_is_auth_failed(fake_gemini: FakeGemini):
    fake_gemini.keys = set()
    provider, _ = provider_for(RESEARCHER)

    with pytest.raises(ProviderAuthFailed):
        await provider.list_models(timeout_s=5)


async def test_the_lifecycle_check_judges_gemini_models_against_gemini_s_list(fake_gemini: FakeGemini, research_env):
    research_env(RESEARCH_MODEL="google:gemini-1.5-pro")

    report = await check_models()

    assert report.error_code is None
    assert [(check.setting, check.level) for check in report.checks] == [
        ("RESEARCH_PLANNER_MODEL", "ok"),
        ("RESEARCH_MODEL", "error"),
    ]
    assert "google:gemini-1.5-pro" in report.checks[1].message and "RESEARCH_MODEL" in report.checks[1].message
