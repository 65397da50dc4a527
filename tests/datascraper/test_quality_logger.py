"""Quality signals: what they count, the citation and number checks, and the one JSON log line per run."""

from __future__ import annotations

import json
import logging

import pytest

from datascraper.errors import UpstreamError
from datascraper.quality_logger import (
    RunRecord,
    SubQuestionOutcome,
    check_numbers,
    citation_integrity,
    compute_signals,
    log_signals,
    market_values,
)
from datascraper.schemas import ModelUsage, Source, UsageLedger
from tests.datascraper.research_support import (
    CORROBORATING,
    gaps,
    is_gap_report,
    run,
    script_analysis,
    script_gaps,
    script_synthesis,
    searched,
    sub,
    summary_of,
)
from tests.fakes.openai_server import ErrorReply, JsonReply, Sentence, TextReply

YAHOO = Source(n=1, title="Yahoo Finance — AAPL quote", url="https://finance.yahoo.com/quote/AAPL", kind="market_data")
REUTERS = Source(n=2, title="Reuters", url="https://www.reuters.com/a", kind="web")
WWW_REUTERS = Source(n=3, title="Reuters again", url="https://reuters.com/b", kind="web")
QUOTE = {"price": 196.45, "change": -3.0278, "change_percent": -1.5179, "market_cap": 2927105000000.0, "volume": 51234567}


def test_citation_integrity_counts_resolving_markers_dropped_ones_and_uncited_sources():
    answer = "Price [1]. Fact [1][4]."

    assert citation_integrity(answer, [YAHOO, REUTERS, WWW_REUTERS], dropped=2) == {
        "markers": 5,
        "resolved": 2,
        "unresolved": 3,
        "uncited_sources": [2, 3],
    }


def test_market_values_are_every_finite_number_of_the_payloads_by_absolute_value():
    values = market_values([{"a": -1.5, "b": [2, {"c": 3.0}], "flag": True, "name": "x", "nan": float("nan")}])

    assert values == [1.5, 2.0, 3.0]


@pytest.mark.parametrize(
    ("sentence", "checked", "unmatched"),
    [
        ("AAPL trades at $196.45 [1].", 1, []),
        ("AAPL is down 3.03 USD (-1.52%) [1].", 2, []),
        ("Its market cap is $2.93 trillion [1].", 1, []),
        ("Its market cap is 2,927,105 million dollars [1].", 1, []),
        ("Volume was 51,234,567 shares [1].", 1, []),
        ("AAPL trades at $197.10 [1].", 1, ["$197.10"]),
        ("It rose 4.2% this year [1].", 1, ["4.2%"]),
        ("As of 2025-06-13 20:00 UTC, 3 analysts in 2025 say buy [1].", 0, []),
        ("AAPL trades at $197.10 [2].", 0, []),  # cites the web, not market data: not checked
        ("Toyota (7203.T) and Tencent (0700.HK) trade at $196.45 [1].", 1, []),  # tickers are not figures
    ],
)
def test_numbers_citing_market_data_must_match_a_market_data_value(sentence, checked, unmatched):
    result = check_numbers(sentence, [YAHOO, REUTERS], market_values([QUOTE])).signal()

    assert result == {
        "checked": checked,
        "computed": 0,
        "unmatched": len(unmatched),
        "unmatched_values": [{"value": value, "sources": [1]} for value in unmatched],
    }


@pytest.mark.parametrize(
    ("sentence", "computed"),
    [
        ("Revenue grew 2.02% [1].", 1),  # as computed: 2.021994...
        ("Revenue grew 2.0% [1].", 1),  # rounded to one decimal: within 0.1 of it
        ("Revenue grew 2% [1].", 1),
        ("Revenue fell 4.01% [1].", 1),  # a negative figure, written as a fall
        ("Revenue grew 2.1% [1].", 1),  # one unit of the last digit: rounded again from a shown 2.05 say
        ("Revenue grew 2.2% [1].", 0),  # more than one unit off
        ("Revenue grew 2.04% [1].", 0),
    ],
)
def test_a_number_matching_a_computed_figure_within_the_precision_written_counts_as_computed(sentence, computed):
    check = check_numbers(sentence, [YAHOO], market_values([{"price": 196.45}]), computed=[2.021994, -4.0141])

    assert (check.checked, check.computed, len(check.untraced)) == (1, computed, 1 - computed)


def test_untraced_numbers_are_listed_with_their_markers_in_a_note():
    answer = "AAPL trades at $197.10 [1]. It grew 12.3% [1][2]. Reuters says 40% [2]. Again $197.10 [1]."

    check = check_numbers(answer, [YAHOO, REUTERS], market_values([QUOTE]))

    assert check.signal()["unmatched_values"] == [
        {"value": "$197.10", "sources": [1]},
        {"value": "12.3%", "sources": [1]},
        {"value": "$197.10", "sources": [1]},
    ]
    assert check.note() == (
        "\n\nNote: $197.10 [1], 12.3% [1] could not be traced to the market data cited; check them against the sources."
    )


def test_an_answer_whose_numbers_all_trace_has_no_note():
    check = check_numbers("AAPL trades at $196.45 [1].", [YAHOO], market_values([QUOTE]))

    assert check.note() == "" and check.signal()["unmatched"] == 0


def test_signals_count_routes_fallbacks_rounds_usage_and_sources():
    ledger = UsageLedger()
    ledger.record("gpt-5.4-mini", ModelUsage(calls=2, input_tokens=100, output_tokens=20, reasoning_tokens=8))
    ledger.record("gpt-5.4", ModelUsage(calls=3, input_tokens=300, output_tokens=90))
    answer, sources = "AAPL trades at $196.45 [1]; Reuters agrees [2].", [YAHOO, REUTERS, WWW_REUTERS]
    record = RunRecord(
        requested_mode="auto",
        mode="research",
        outcomes=[
            SubQuestionOutcome(id="q1", type="numerical", planned_route="market_data", route="market_data", status="answered"),
            SubQuestionOutcome(id="q2", type="numerical", planned_route="market_data", route="web_search",
                               status="answered", fallback_reason="no_data"),
            SubQuestionOutcome(id="q3", type="qualitative", planned_route="web_search", route="web_search",
                               status="failed", error="upstream_error"),
            SubQuestionOutcome(id="q4", type="analytical", planned_route="synthesis", route="synthesis", status="deferred"),
        ],
        rounds=2,
        max_rounds=3,
        stop_reason="threshold",
        timings={"total_ms": 1200},
        usage=ledger,
        answer=answer,
        sources=sources,
        numbers=check_numbers(answer, sources, market_values([QUOTE])),
    )

    signals = compute_signals(record)

    assert signals["sub_questions"] == {
        "total": 4,
        "by_type": {"numerical": 2, "qualitative": 1, "analytical": 1},
        "by_route": {"market_data": 2, "web_search": 1, "synthesis": 1},
    }
    assert (signals["market_data_hits"], signals["web_hits"], signals["fallbacks"], signals["failed"]) == (1, 1, 1, 1)
    assert signals["fallback_reasons"] == {"no_data": 1}
    assert (signals["rounds"], signals["stop_reason"], signals["completed_early"]) == (2, "threshold", True)
    assert signals["model_calls"] == 5 and signals["tokens"] == {"input": 400, "output": 110}
    assert signals["by_model"]["gpt-5.4-mini"]["reasoning_tokens"] == 8
    assert (signals["sources"], signals["distinct_domains"]) == (3, 2)
    assert signals["citations"]["uncited_sources"] == [3]
    assert signals["numbers"] == {"checked": 1, "computed": 0, "unmatched": 0, "unmatched_values": []}


def test_signals_are_logged_as_one_json_line(caplog):
    with caplog.at_level(logging.INFO, logger="datascraper.quality"):
        log_signals({"mode": "quick", "fast_path": True})

    [line] = [r for r in caplog.records if r.name == "datascraper.quality"]
    assert json.loads(line.getMessage()) == {"event": "research_run", "mode": "quick", "fast_path": True}


async def test_a_research_run_stores_and_logs_its_signals(fake_openai, market_data, research_env, caplog):
    research_env(RESEARCH_MAX_ITERATIONS="3")
    script_analysis(
        fake_openai,
        sub("Apple's quote?", "numerical", ["AAPL"], "quote"),
        sub("Apple news?"),
        sub("Better or worse?", "analytical"),
    )
    fake_openai.script(
        TextReply([Sentence("Apple launched a phone.", cites=[(REUTERS.url, "Reuters"), *CORROBORATING[1:]])]),
        when=searched("Apple news?"),
    )
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "AAPL trades at 196.45 USD [1], not 250.00 USD [1]. News [2].")

    with caplog.at_level(logging.INFO, logger="datascraper.quality"):
        events = await run("How is Apple doing?")

    signals = summary_of(events).signals
    assert signals["mode"] == "research" and signals["requested_mode"] == "auto"
    assert signals["fast_path"] is False and signals["analysis_fallback"] is None
    assert signals["sub_questions"]["by_route"] == {"market_data": 1, "web_search": 1, "synthesis": 1}
    assert (signals["market_data_hits"], signals["web_hits"], signals["fallbacks"]) == (1, 1, 0)
    assert (signals["rounds"], signals["stop_reason"], signals["completed_early"]) == (1, "complete", True)
    assert signals["model_calls"] == 5  # the web search started with the analyzer, then cancelled, is one
    assert signals["speculative_search"]["outcome"] == "cancelled"
    assert set(signals["by_model"]) == {"gpt-5.4-mini", "gpt-5.4"}
    assert (signals["sources"], signals["distinct_domains"]) == (4, 4)
    assert signals["citations"] == {"markers": 3, "resolved": 3, "unresolved": 0, "uncited_sources": [3, 4]}
    assert signals["confidence"] == summary_of(events).confidence.score
    assert signals["numbers"] == {
        "checked": 2,
        "computed": 0,
        "unmatched": 1,
        "unmatched_values": [{"value": "250.00", "sources": [1]}],
    }
    [line] = [r for r in caplog.records if r.name == "datascraper.quality"]
    assert json.loads(line.getMessage())["stop_reason"] == "complete"


async def test_a_failed_gap_detector_is_a_signal_not_a_crash(fake_openai, research_env):
    script_analysis(fake_openai, sub("Apple news?"))
    fake_openai.script(JsonReply(raw="[]"), when=is_gap_report)

    events = await run("Apple?", mode="research")

    signals = summary_of(events).signals
    assert signals["gap_detector_fallback"] == "invalid_model_output"
    assert signals["completed_early"] is True


async def test_a_failed_run_is_measured_and_logged_too(fake_openai, research_env, caplog):
    research_env(RESEARCH_MAX_RETRIES="0")
    fake_openai.script(ErrorReply(500))

    with caplog.at_level(logging.INFO, logger="datascraper.quality"), pytest.raises(UpstreamError) as raised:
        await run("How did Apple's last quarter go?", mode="quick")

    summary = raised.value.summary
    assert summary is not None and summary.mode == "quick"
    assert summary.signals["error"] == "upstream_error"
    assert summary.usage.by_model["gpt-5.4"].calls == 1
    [line] = [r for r in caplog.records if r.name == "datascraper.quality"]
    assert json.loads(line.getMessage())["error"] == "upstream_error"
