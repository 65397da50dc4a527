"""The `anthropic` provider through the real anthropic SDK against the strict fake Messages API: structured
answers, streamed answers whose cited text blocks become `[n]` markers and numbered sources, usage as billed,
and each failure as its named error (the SDK's exception as its cause, never the body in the message)."""

from __future__ import annotations

from datetime import date

import anthropic
import pytest

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
    UpstreamTimeout,
)
from datascraper.models_config import get_research_config
from datascraper.plan_schemas import GapReport, QueryAnalysis, SubQuestion
from datascraper.providers.anthropic.client import reset_anthropic_client
from datascraper.providers.anthropic.structured import output_format
from datascraper.providers.lifecycle import check_models
from datascraper.providers.registry import provider_for
from datascraper.providers.structured import parse_structured
from datascraper.schemas import ChatTurn, ModelUsage, UsageLedger
from datascraper.web_search import WebSearchStream
from tests.fakes.anthropic_models import FakeClaude
from tests.fakes.anthropic_server import schema_is
from tests.fakes.anthropic_wire import NO_CREDIT, ErrorAnswer, JsonAnswer, TextAnswer, Usage
from tests.fakes.openai_replies import Sentence

PLANNER = "anthropic:claude-haiku-4-5"
RESEARCHER = "anthropic:claude-sonnet-4-6"
REUTERS = ("https://www.reuters.com/markets/apple-results", "Apple results - Reuters")
FT = ("https://www.ft.com/content/apple-margins", "Apple margins - FT")
CITED = [
    Sentence("Apple reported revenue of $391.04 billion for fiscal 2024.", cites=[REUTERS]),
    "Analysts had expected less.",
    Sentence("Gross margin rose to 46.2%.", cites=[FT, REUTERS]),
]


@pytest.fixture
def anthropic_models(fake_anthropic, monkeypatch):
    """Both models on Anthropic, and no OpenAI key at all."""
    monkeypatch.setenv("RESEARCH_PLANNER_MODEL", PLANNER)
    monkeypatch.setenv("RESEARCH_MODEL", RESEARCHER)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("RESEARCH_MAX_RETRIES", "2")
    get_research_config.cache_clear()
    reset_anthropic_client()
    return fake_anthropic


async def search(question: str = "How did Apple do in fiscal 2024?", **options) -> tuple[list[str], WebSearchStream]:
    stream = WebSearchStream(question, model=RESEARCHER, **options)
    return [delta.text async for delta in stream], stream


async def plan(ledger: UsageLedger | None = None, **options) -> QueryAnalysis:
    return await parse_structured(
        PLANNER, "Plan the research.", "How did Apple do?", QueryAnalysis, ledger or UsageLedger(), **options
    )


# --- structured answers ----------------------------------------------------------------------------------


async def test_a_structured_answer_is_asked_with_the_schema_as_a_strict_output_format(anthropic_models):
    wanted = QueryAnalysis(
        needs_decomposition=True,
        sub_questions=[
            SubQuestion(question="Apple revenue?", type="numerical", tickers=["AAPL"], data="income_statement")
        ],
    )
    anthropic_models.script(
        JsonAnswer(
            wanted,
            usage=Usage(input_tokens=50, cache_read_input_tokens=200, cache_creation_input_tokens=10, output_tokens=30),
        ),
        when=schema_is("QueryAnalysis"),
    )
    ledger = UsageLedger()

    assert await plan(ledger) == wanted

    [request] = anthropic_models.requests
    assert (request.model, request.instructions, request.stream) == ("claude-haiku-4-5", "Plan the research.", False)
    assert request.body["output_config"]["format"]["type"] == "json_schema"
    assert request.output_schema["additionalProperties"] is False
    assert request.body["max_tokens"] == 8192 and "tools" not in request.body
    # Input is counted whole, the cached part inside it, as the product counts every provider's.
    assert ledger.by_model == {PLANNER: ModelUsage(calls=1, input_tokens=260, cached_tokens=200, output_tokens=30)}


async def test_a_refused_structured_answer_is_a_refusal(anthropic_models):
    anthropic_models.script(JsonAnswer(raw="", stop_reason="refusal"))

    with pytest.raises(ModelRefused):
        await plan()


async def test_a_structured_answer_cut_by_max_tokens_is_invalid_not_parsed(anthropic_models):
    anthropic_models.script(JsonAnswer(raw='{"needs_decomposition": tr', stop_reason="max_tokens"))

    with pytest.raises(StructuredOutputInvalid, match="stopped before finishing"):
        await plan()


async def test_a_hung_planner_call_is_bounded_by_its_timeout(anthropic_models):
    anthropic_models.delay_s = 5

    with pytest.raises(UpstreamTimeout):
        await plan(timeout_s=0.3)


# --- streamed answers with the hosted web search ---------------------------------------------------------


@pytest.mark.parametrize("citations_last", [False, True])
async def test_cited_text_blocks_become_markers_after_their_claims_and_the_narration_before_searches_is_left_out(
    anthropic_models, citations_last
):
    usage = Usage(input_tokens=900, cache_read_input_tokens=8000, output_tokens=120)
    anthropic_models.script(TextAnswer(CITED, usage=usage, searches=2, citations_last=citations_last))

    deltas, stream = await search()

    assert "".join(deltas) == (
        "Apple reported revenue of $391.04 billion for fiscal 2024 [1]. Analysts had expected less. "
        "Gross margin rose to 46.2% [2][1]."
    )
    result = stream.result
    assert [(s.n, s.url, s.title) for s in result.sources] == [(1, *REUTERS), (2, *FT)]
    assert result.complete and result.model == RESEARCHER
    assert result.usage == ModelUsage(
        calls=1, input_tokens=8900, cached_tokens=8000, output_tokens=120, web_search_calls=2
    )
    [request] = anthropic_models.requests
    assert request.stream and request.body["tools"] == [
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
    ]


async def test_sources_are_numbered_after_the_offset_and_the_written_answer_sends_no_tool(anthropic_models):
    anthropic_models.script(TextAnswer(CITED))

    deltas, stream = await search(web_search=False, source_offset=4)

    assert "[5]" in "".join(deltas) and "[6][5]" in "".join(deltas)
    assert [s.n for s in stream.result.sources] == [5, 6]
    [request] = anthropic_models.requests
    assert "tools" not in request.body
    assert stream.result.usage.web_search_calls == 0


async def test_an_overloaded_error_part_way_keeps_the_text_shown_and_ends_as_an_upstream_error(anthropic_models):
    anthropic_models.script(TextAnswer(CITED, error_after_deltas=18))

    deltas: list[str] = []
    stream = WebSearchStream("How did Apple do?", model=RESEARCHER)
    with pytest.raises(UpstreamError, match=r"overloaded_error") as raised:
        async for delta in stream:
            deltas.append(delta.text)

    assert raised.value.code == "upstream_error"
    assert "".join(deltas).startswith("Apple reported revenue of $391.04 billion for fiscal 2024 [1].")
    assert stream.result.text == "".join(deltas) and not stream.result.complete
    assert stream.result.usage.input_tokens > 0  # message_start's usage still counts
    assert len(anthropic_models.requests) == 1


async def test_a_connection_that_breaks_mid_answer_is_an_interrupted_stream(anthropic_models):
    anthropic_models.script(TextAnswer(CITED, drop_after_deltas=4))

    with pytest.raises(StreamInterrupted):
        await search()


@pytest.mark.parametrize(("stop_reason", "error"), [("max_tokens", StreamInterrupted), ("refusal", ModelRefused)])
async def test_an_answer_that_stops_short_ends_with_the_stop_reasons_error(anthropic_models, stop_reason, error):
    anthropic_models.script(TextAnswer(["Partial."], stop_reason=stop_reason))

    with pytest.raises(error) as raised:
        await search()

    if stop_reason == "max_tokens":
        assert "max_tokens" in raised.value.message


async def test_the_conversation_goes_before_the_question_without_empty_turns(anthropic_models):
    history = [ChatTurn(role="user", content="And Microsoft?"), ChatTurn(role="assistant", content="")]

    await search("How did Apple do?", history=history)

    [request] = anthropic_models.requests
    assert request.body["messages"] == [
        {"role": "user", "content": "And Microsoft?"},
        {"role": "user", "content": "How did Apple do?"},
    ]


# --- failures --------------------------------------------------------------------------------------------


async def test_a_rejected_key_is_an_auth_failure_naming_the_setting_after_one_request(anthropic_models, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "placeholder-key-revoked")
    get_research_config.cache_clear()
    reset_anthropic_client()

    with pytest.raises(ProviderAuthFailed) as raised:
        await plan()

    assert raised.value.message == "The model provider rejected the configured API key: check ANTHROPIC_API_KEY."
    assert isinstance(raised.value.__cause__, anthropic.AuthenticationError)
    assert len(anthropic_models.requests) == 1


async def test_an_unknown_model_is_unavailable_naming_its_setting_streamed_or_not(anthropic_models, monkeypatch):
    monkeypatch.setenv("RESEARCH_MODEL", "anthropic:claude-3-5-haiku-latest")  # retired
    get_research_config.cache_clear()

    with pytest.raises(ModelUnavailable) as raised:
        async for _ in WebSearchStream("q"):
            pass

    assert raised.value.setting == "RESEARCH_MODEL" and raised.value.model == "anthropic:claude-3-5-haiku-latest"
    assert "RESEARCH_MODEL" in raised.value.message and "not_found" not in raised.value.message
    assert isinstance(raised.value.__cause__, anthropic.NotFoundError)
    assert [r.status for r in anthropic_models.requests] == [404]


@pytest.mark.parametrize("call", ["structured", "stream"])
async def test_an_account_without_credit_is_a_quota_failure_after_one_request(anthropic_models, call):
    anthropic_models.set_default(NO_CREDIT)

    with pytest.raises(ProviderQuotaExceeded) as raised:
        if call == "structured":
            await plan()
        else:
            await search()

    assert "ANTHROPIC_API_KEY" in raised.value.message and "credit balance" not in raised.value.message
    assert len(anthropic_models.requests) == 1


async def test_an_account_over_its_spend_limit_is_a_quota_failure_not_retried(anthropic_models):
    over = "You have reached your monthly API usage limit (fake)."
    anthropic_models.set_default(ErrorAnswer(429, "rate_limit_error", over, error_code="enforced_spend_limit_reached"))

    with pytest.raises(ProviderQuotaExceeded) as raised:
        await search()

    assert isinstance(raised.value.__cause__, anthropic.RateLimitError)
    assert len(anthropic_models.requests) == 1


async def test_a_rate_limit_is_retried_then_named(anthropic_models):
    anthropic_models.set_default(ErrorAnswer(429))

    with pytest.raises(UpstreamRateLimited):
        await plan()

    assert len(anthropic_models.requests) == 3  # RESEARCH_MAX_RETRIES=2


async def test_an_overloaded_api_is_retried_and_answers_on_a_later_try(anthropic_models):
    anthropic_models.script(ErrorAnswer(529), times=2)

    await plan()

    assert [r.status for r in anthropic_models.requests] == [529, 529, 200]


async def test_an_api_overloaded_on_every_try_is_an_upstream_error(anthropic_models):
    anthropic_models.set_default(ErrorAnswer(529))

    with pytest.raises(UpstreamError, match=r"HTTP 529, overloaded_error"):
        await search()


async def test_without_a_key_nothing_is_sent(anthropic_models, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    get_research_config.cache_clear()

    with pytest.raises(ProviderNotConfigured, match="ANTHROPIC_API_KEY"):
        await plan()

    assert anthropic_models.requests == []


# --- the model list --------------------------------------------------------------------------------------


async def test_the_model_list_is_read_page_by_page_with_retirement_dates_and_aliases_resolved(anthropic_models):
    for i in range(120):
        anthropic_models.catalogue[f"claude-test-{i}"] = FakeClaude(
            f"claude-test-{i}", f"claude-t{i}", "Test", date(2024, 1, 1), 8192
        )
    provider, _ = provider_for(PLANNER)

    listed = await provider.list_models(timeout_s=5)

    assert listed["claude-sonnet-4-5-20250929"] == date(2026, 11, 30)
    assert listed["claude-sonnet-4-6"] is None and "claude-test-119" in listed
    assert "claude-3-5-haiku-20241022" not in listed  # retired
    assert listed["claude-haiku-4-5"] is None  # the configured alias, looked up
    paths = [(r.path, r.query) for r in anthropic_models.requests]
    assert [path for path, _ in paths[:2]] == ["/v1/models", "/v1/models"]
    assert "limit=100" in paths[0][1] and "after_id=claude-test-94" in paths[1][1]  # the first page's last
    assert paths[2:] == [("/v1/models/claude-haiku-4-5", "")]


async def test_the_lifecycle_check_judges_anthropic_models_by_their_own_names(anthropic_models, monkeypatch):
    monkeypatch.setenv("RESEARCH_PLANNER_MODEL", "anthropic:claude-sonnet-4-5")
    monkeypatch.setenv("RESEARCH_MODEL", "anthropic:claude-3-5-haiku-latest")
    get_research_config.cache_clear()

    report = await check_models(today=date(2026, 11, 27))

    assert [(c.setting, c.level, c.shutdown_date) for c in report.checks] == [
        ("RESEARCH_PLANNER_MODEL", "warning", date(2026, 11, 30)),
        ("RESEARCH_MODEL", "error", None),
    ]


async def test_warm_up_builds_the_planners_formats_and_sends_nothing(anthropic_models):
    provider, _ = provider_for(PLANNER)

    await provider.warm_up((QueryAnalysis, GapReport))

    assert output_format(GapReport)["format"]["schema"]["additionalProperties"] is False
    assert anthropic_models.requests == []
