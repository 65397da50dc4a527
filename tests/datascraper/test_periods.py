"""Periods from the question: the analyzer's period fields (or, where it left them unset, the question's
wording) become validated MCP arguments, and statements come back cut to the periods asked for.

The resolver tables run against a fixed "today". The MCP tables run the real client against the market
data server in memory over the fake yfinance, whose data ends on 2025-06-13, with that day as "today". The
router test runs the whole pipeline against the fake Responses server.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from datascraper.market_data.finding_schemas import MarketDataRequest
from datascraper.plan_schemas import QueryAnalysis, SubQuestion
from datascraper.research_engine import run_research
from datascraper.research_engine.data.market_data import fetch_market_data
from datascraper.research_engine.data.market_data_client import get_market_data_client
from datascraper.research_engine.periods.request import market_data_request
from datascraper.research_engine.state import PlannedStep, ResearchCheckpoint, plan_steps
from datascraper.schemas import ResearchQuery
from tests.datascraper.research_support import (
    is_synthesis,
    of_type,
    requests_of,
    run,
    script_analysis,
    script_synthesis,
    sub,
    summary_of,
)
from tests.fakes.yfinance import TODAY as MARKET_TODAY

ASKER_TODAY = date(2026, 11, 24)  # a Tuesday
APPLE = ["AAPL"]


def resolved(question: str, data: str, today: date = ASKER_TODAY, **fields: Any) -> MarketDataRequest:
    return market_data_request(sub(question, "numerical", APPLE, data, **fields), today=today)


def asked(request: MarketDataRequest) -> dict[str, Any]:
    """The request's periods, without its corrections."""
    return request.model_dump(exclude_defaults=True, exclude={"corrections"})


# --- the resolver: analyzer fields, else wording, validated ------------------------------------------------

D = date.fromisoformat

STATEMENT_CASES = [
    # (question, analyzer fields, the request)
    ("Apple's revenue in each of the last 3 quarters", {"frequency": "quarterly", "periods": 3}, {"frequency": "quarterly", "periods": 3}),
    ("Apple's revenue in each of the last 3 quarters", {}, {"frequency": "quarterly", "periods": 3}),
    ("Apple's revenue in the last quarter", {}, {"frequency": "quarterly", "periods": 1}),
    ("Apple's revenue growth QoQ", {}, {"frequency": "quarterly"}),
    ("Apple's TTM revenue", {}, {"frequency": "ttm"}),
    ("Apple's revenue over the trailing twelve months", {}, {"frequency": "ttm"}),
    ("Apple's revenue over the last 5 years", {}, {"frequency": "annual", "periods": 5}),
    ("Apple's annual revenue", {}, {"frequency": "annual"}),
    # fiscal periods: their dates come from the company's calendar once its statements are fetched
    ("Apple's revenue in fiscal 2024", {}, {"frequency": "annual"}),
    ("Apple's revenue in FY2021-FY2024", {}, {"frequency": "annual"}),
    ("Apple's revenue in Q3 2025", {}, {"frequency": "quarterly", "start": D("2025-07-01"), "end": D("2025-09-30")}),
    ("Apple's revenue in the third quarter of 2025", {}, {"frequency": "quarterly", "start": D("2025-07-01"), "end": D("2025-09-30")}),
    ("Apple's Q3 revenue", {}, {"frequency": "quarterly", "start": D("2026-07-01"), "end": D("2026-09-30")}),
    ("Apple's revenue YTD", {}, {"frequency": "quarterly", "start": D("2026-01-01")}),
    ("Apple's revenue since March", {}, {"frequency": "quarterly", "start": D("2026-03-01")}),
    ("Apple's revenue in 2023", {}, {"frequency": "annual", "start": D("2023-01-01"), "end": D("2023-12-31")}),
    ("Apple's revenue", {}, {"frequency": "annual"}),
    # the analyzer's fields win; the wording's count only fills a count of the same kind of period
    ("Apple's revenue in each of the last 3 quarters", {"frequency": "annual"}, {"frequency": "annual"}),
    ("Apple's revenue in Q3 2025", {"start": "2025-04-01", "end": "2025-06-30"}, {"frequency": "quarterly", "start": D("2025-04-01"), "end": D("2025-06-30")}),
]  # fmt: skip


@pytest.mark.parametrize(("question", "fields", "expected"), STATEMENT_CASES)
def test_statement_periods_come_from_the_analyzer_or_else_the_wording(question, fields, expected):
    request = resolved(question, "income_statement", **fields)

    assert asked(request) == expected
    assert request.corrections == []


HISTORY_CASES = [
    ("Apple's share price", {}, {"period": "1mo"}),
    ("Apple's share price YTD", {}, {"period": "ytd"}),
    ("Apple's share price year to date", {}, {"period": "ytd"}),
    ("Apple's share price this year", {"period": "ytd"}, {"period": "ytd"}),
    ("Apple's share price over the past week", {}, {"period": "5d"}),
    ("Apple's share price over the last 3 months", {}, {"period": "3mo"}),
    ("Apple's share price over the last 5 years", {}, {"period": "5y"}),
    ("Apple's share price over the last 2 years", {}, {"start": D("2024-11-24"), "end": ASKER_TODAY}),
    ("Apple's share price since March", {}, {"start": D("2026-03-01"), "end": ASKER_TODAY}),
    ("Apple's share price since December", {}, {"start": D("2025-12-01"), "end": ASKER_TODAY}),
    ("Apple's share price since 2025-08-15", {}, {"start": D("2025-08-15"), "end": ASKER_TODAY}),
    ("Apple's share price in 2024", {}, {"start": D("2024-01-01"), "end": D("2024-12-31")}),
    ("Apple's share price from March 1 to June 6", {}, {"start": D("2026-03-01"), "end": D("2026-06-06")}),
    ("Apple's share price in June 2025", {}, {"start": D("2025-06-01"), "end": D("2025-06-30")}),
    ("Apple's hourly share price over the past week", {}, {"period": "5d", "interval": "1h"}),
    ("Apple's weekly closes over the last 5 years", {}, {"period": "5y", "interval": "1wk"}),
    # the analyzer's explicit dates: inclusive, an open end is today, an open start a month before the end
    ("Apple's share price", {"start": "2026-09-01", "end": "2026-09-30"}, {"start": D("2026-09-01"), "end": D("2026-09-30")}),
    ("Apple's share price", {"start": "2026-09-01"}, {"start": D("2026-09-01"), "end": ASKER_TODAY}),
    ("Apple's share price", {"end": "2026-06-30"}, {"start": D("2026-05-30"), "end": D("2026-06-30")}),
    # a relative range and explicit dates never travel together: the dates are the more precise
    ("Apple's share price", {"period": "1y", "start": "2026-09-01", "end": "2026-09-30"}, {"start": D("2026-09-01"), "end": D("2026-09-30")}),
    ("Apple's share price YTD", {"start": "2026-09-01", "end": "2026-09-30"}, {"start": D("2026-09-01"), "end": D("2026-09-30")}),
]  # fmt: skip


@pytest.mark.parametrize(("question", "fields", "expected"), HISTORY_CASES)
def test_price_history_ranges_come_from_the_analyzer_or_else_the_wording(question, fields, expected):
    request = resolved(question, "price_history", **fields)

    assert asked(request) == expected
    assert request.corrections == []


CORRECTED_CASES = [
    # (data, analyzer fields, the corrected request, what the correction says)
    ("price_history", {"start": "2026-10-01", "end": "2026-12-31"}, {"start": D("2026-10-01"), "end": ASKER_TODAY}, "cut to today"),
    ("price_history", {"start": "2027-01-01", "end": "2027-01-31"}, {"start": D("2026-10-25"), "end": ASKER_TODAY}, "in the future"),
    ("price_history", {"start": "2027-01-01"}, {"start": D("2026-11-17"), "end": ASKER_TODAY}, "in the future"),
    ("price_history", {"end": "2027-05-01"}, {"start": D("2026-10-25"), "end": ASKER_TODAY}, "in the future"),
    ("price_history", {"start": "2026-06-30", "end": "2026-03-01"}, {"start": D("2026-03-01"), "end": D("2026-06-30")}, "swapped"),
    ("price_history", {"period": "3mo", "interval": "1m"}, {"period": "3mo", "interval": "60m"}, "recent days only"),
    ("price_history", {"period": "max", "interval": "1h"}, {"period": "max", "interval": "1d"}, "recent days only"),
    ("price_history", {"period": "5d", "interval": "1mo"}, {"period": "5d", "interval": "1d"}, "longer than the range"),
    ("income_statement", {"frequency": "quarterly", "periods": 40}, {"frequency": "quarterly", "periods": 12}, "At most 12 quarterly"),
    ("income_statement", {"frequency": "annual", "periods": 25}, {"frequency": "annual", "periods": 10}, "At most 10 annual"),
    ("income_statement", {"start": "2027-01-01", "end": "2027-03-31"}, {"frequency": "quarterly", "periods": 1}, "latest one is given"),
    ("income_statement", {"frequency": "quarterly", "start": "2025-09-30", "end": "2025-07-01"}, {"frequency": "quarterly", "start": D("2025-07-01"), "end": D("2025-09-30")}, "swapped"),
    ("balance_sheet", {"frequency": "ttm"}, {"frequency": "quarterly", "periods": 1}, "no trailing-twelve-month balance sheet"),
    ("earnings", {"periods": 30}, {"periods": 12}, "At most 12 earnings reports"),
    ("news", {"limit": 50}, {"limit": 20}, "At most 20 news items"),
]  # fmt: skip


@pytest.mark.parametrize(("data", "fields", "expected", "said"), CORRECTED_CASES)
def test_an_invalid_request_is_corrected_to_the_nearest_sensible_one_and_says_so(data, fields, expected, said):
    request = resolved("Apple", data, **fields)

    assert asked(request) == expected
    assert len(request.corrections) == 1 and said in request.corrections[0]


@pytest.mark.parametrize(
    ("question", "data", "fields", "expected"),
    [
        ("Apple's EPS in the last 4 quarters", "earnings", {}, {"periods": 4}),
        ("Apple's EPS in the last 4 quarters", "earnings", {"frequency": "annual"}, {}),  # earnings are quarterly
        ("Apple's 5 latest headlines", "news", {}, {"limit": 5}),
        ("Apple's news", "news", {"limit": 0}, {"limit": 1}),
        ("Apple's share price over the last 3 quarters", "quote", {"period": "1y"}, {}),  # a quote has no periods
        ("Apple's revenue in the last quarter", "income_statement", {"periods": -2}, {"frequency": "quarterly", "periods": 1}),
    ],
)  # fmt: skip
def test_other_kinds_keep_only_the_fields_their_tool_takes(question, data, fields, expected):
    assert asked(resolved(question, data, **fields)) == expected


def test_an_unusable_analyzer_field_is_dropped_and_read_from_the_wording_instead():
    reply = {
        "needs_decomposition": True,
        "sub_questions": [
            {
                "question": "Apple's revenue in the last 2 quarters",
                "type": "numerical",
                "tickers": APPLE,
                "data": "income_statement",
                "frequency": " Quarterly",
                "periods": "two",
                "start": "2025-02-30",
                "end": None,
                "period": "3 years",
                "interval": "hourly",
                "limit": None,
            }
        ],
    }

    [sub_question] = QueryAnalysis.model_validate(reply).sub_questions

    assert (sub_question.frequency, sub_question.periods, sub_question.start) == ("quarterly", None, None)
    assert (sub_question.period, sub_question.interval) == (None, None)
    assert asked(market_data_request(sub_question, today=ASKER_TODAY)) == {"frequency": "quarterly", "periods": 2}


def test_market_data_steps_are_planned_with_their_request_and_others_without():
    steps = plan_steps(
        [
            sub("Apple's revenue in the last 3 quarters", "numerical", APPLE, "income_statement"),
            sub("What did Apple guide for next quarter?"),
            sub("Apple's revenue in the last 3 quarters", "numerical", [], "income_statement"),  # no ticker: web
        ],
        first_number=1,
        today=ASKER_TODAY,
    )

    assert [(step.route, step.request) for step in steps] == [
        ("market_data", MarketDataRequest(frequency="quarterly", periods=3)),
        ("web_search", None),
        ("web_search", None),
    ]


# --- the MCP arguments, against the fake yfinance ----------------------------------------------------------


@pytest.fixture
def tool_calls(market_data, monkeypatch) -> list[tuple[str, dict[str, Any]]]:
    """Every tool call the process-wide client sends to the server, as (tool, arguments)."""
    client = get_market_data_client()
    calls: list[tuple[str, dict[str, Any]]] = []
    send = client.call_tool

    async def recording(name: str, arguments: dict[str, Any], **options: Any):
        calls.append((name, arguments))
        return await send(name, arguments, **options)

    monkeypatch.setattr(client, "call_tool", recording)
    return calls


async def fetched(question: str, data: str, **fields: Any):
    sub_question = sub(question, "numerical", APPLE, data, **fields)
    request = market_data_request(sub_question, today=MARKET_TODAY)
    return await fetch_market_data(APPLE, data, question=question, request=request)


# The fake's quarterly income statement has five quarters with figures, 2024-03-30 to 2025-03-29; its annual
# one four years, fiscal 2021 to 2024. Past the periods asked, those ending up to a year before the oldest one
# asked are kept as the bases of their growth (the previous period; the same quarter a year earlier).
STATEMENT_CALLS = [
    # (question, analyzer fields, arguments sent, period ends asked, bases kept, the title's periods)
    ("Apple's revenue in each of the last 3 quarters", {}, "quarterly",
     ["2025-03-29", "2024-12-28", "2024-09-28"], ["2024-06-29", "2024-03-30"],
     "(quarterly), 3 periods ending 2024-09-28 to 2025-03-29, with 2 earlier for growth"),
    ("Apple's recent quarterly revenue", {"frequency": "quarterly", "periods": 2}, "quarterly",
     ["2025-03-29", "2024-12-28"], ["2024-09-28", "2024-06-29", "2024-03-30"],
     "(quarterly), 2 periods ending 2024-12-28 to 2025-03-29, with 3 earlier for growth"),
    ("Apple's revenue in Q3 2024", {}, "quarterly", ["2024-09-28"], ["2024-06-29", "2024-03-30"],
     "(quarterly), period ending 2024-09-28, with 2 earlier for growth"),
    ("Apple's revenue in the second half of 2024", {"frequency": "quarterly", "start": "2024-07-01", "end": "2024-12-31"},
     "quarterly", ["2024-12-28", "2024-09-28"], ["2024-06-29", "2024-03-30"],
     "(quarterly), 2 periods ending 2024-09-28 to 2024-12-28, with 2 earlier for growth"),
    ("Apple's revenue YTD", {}, "quarterly", ["2025-03-29"], ["2024-12-28", "2024-09-28", "2024-06-29", "2024-03-30"],
     "(quarterly), period ending 2025-03-29, with 4 earlier for growth"),
    ("Apple's revenue since last September", {"start": "2024-09-01"}, "quarterly",
     ["2025-03-29", "2024-12-28", "2024-09-28"], ["2024-06-29", "2024-03-30"],
     "(quarterly), 3 periods ending 2024-09-28 to 2025-03-29, with 2 earlier for growth"),
    ("Apple's trailing twelve months revenue", {}, "ttm", ["2025-03-29"], [], "(ttm), twelve months to 2025-03-29"),
    ("Apple's annual revenue in 2022-2024", {}, "annual", ["2024-09-28", "2023-09-30", "2022-09-24"], ["2021-09-25"],
     "(annual), 3 periods ending 2022-09-24 to 2024-09-28, with 1 earlier for growth"),
    ("Apple's revenue", {}, "annual", ["2024-09-28", "2023-09-30", "2022-09-24", "2021-09-25"], [],
     "(annual), 4 periods ending 2021-09-25 to 2024-09-28"),
]  # fmt: skip


@pytest.mark.parametrize(("question", "fields", "frequency", "asked", "bases", "named"), STATEMENT_CALLS)
async def test_statements_are_fetched_at_the_frequency_asked_and_cut_to_the_periods_asked_and_their_bases(
    tool_calls, market_data, question, fields, frequency, asked, bases, named
):
    finding = await fetched(question, "income_statement", **fields)

    assert tool_calls == [
        ("get_financial_statement", {"symbol": "AAPL", "statement": "income", "frequency": frequency})
    ]
    yahoo_frequency = {"annual": "yearly", "quarterly": "quarterly", "ttm": "trailing"}[frequency]
    assert ("AAPL", f"income:{yahoo_frequency}") in market_data.calls
    [result] = finding.results
    statement = result.result()
    assert [period.isoformat() for period in statement.asked_periods] == asked
    assert [period.isoformat() for period in statement.periods] == asked + bases
    assert all(len(line.values) == len(asked + bases) for line in statement.lines)
    assert result.as_of.date().isoformat() == asked[0]
    assert result.title == f"Yahoo Finance — AAPL income statement {named}"
    header = f"{frequency} income statement, periods ending {', '.join(asked)}"
    if bases:
        header += f"; then, not asked for and given only as growth bases, {', '.join(bases)}"
    assert header + "\n" in finding.summary_text()


async def test_a_quarter_not_yet_reported_gives_the_latest_one_and_says_so(tool_calls):
    finding = await fetched("Apple's revenue in Q3 2025", "income_statement")

    assert tool_calls[0][1]["frequency"] == "quarterly"
    [result] = finding.results
    assert [period.isoformat() for period in result.result().asked_periods] == ["2025-03-29"]
    assert result.data["notes"] == [
        "No period starting 2025-07-01 has been reported yet; the latest one is given instead."
    ]
    assert "note: No period starting 2025-07-01 has been reported yet" in finding.summary_text()


async def test_a_quarter_running_or_not_yet_reported_gives_the_latest_one_and_says_so(tool_calls):
    # Q2 2025 has begun but not ended on 2025-06-13: no quarter of it is reported yet.
    finding = await fetched("Apple's revenue in Q2 2025", "income_statement")

    [result] = finding.results
    assert [period.isoformat() for period in result.result().asked_periods] == ["2025-03-29"]
    assert result.data["notes"] == [
        "No quarterly period from 2025-04-01 to 2025-06-13 has been reported yet; the latest one (ending "
        "2025-03-29) is given instead."
    ]


async def test_a_range_older_than_the_data_is_no_data_for_that_ticker(tool_calls):
    finding = await fetched("Apple's revenue in 2015", "income_statement")

    assert not finding.ok
    assert [(error.symbol, error.code, error.message) for error in finding.errors] == [
        ("AAPL", "no_data", "Yahoo Finance has no annual income statement for AAPL between 2015-01-01 and 2015-12-31.")
    ]


async def test_a_ttm_balance_sheet_is_asked_as_the_latest_quarter(tool_calls):
    finding = await fetched("Apple's balance sheet TTM", "balance_sheet")

    assert tool_calls == [
        ("get_financial_statement", {"symbol": "AAPL", "statement": "balance", "frequency": "quarterly"})
    ]
    [result] = finding.results
    assert [period.isoformat() for period in result.result().asked_periods] == ["2025-03-29"]
    assert "no trailing-twelve-month balance sheet" in result.data["notes"][0]


HISTORY_CALLS = [
    # (question, analyzer fields, arguments sent besides the symbol, first and last bar)
    ("Apple's share price", {}, {"period": "1mo"}, "2025-05-16", "2025-06-13"),
    ("Apple's share price YTD", {}, {"period": "ytd"}, "2025-01-01", "2025-06-13"),
    ("Apple's share price since March", {}, {"start": "2025-03-01", "end": "2025-06-13"}, "2025-03-03", "2025-06-13"),
    # `end` is inclusive: Friday 2025-06-06 is the last bar
    ("Apple's share price", {"start": "2025-05-05", "end": "2025-06-06"}, {"start": "2025-05-05", "end": "2025-06-06"},
     "2025-05-05", "2025-06-06"),
    ("Apple's share price from May 5 to June 6", {}, {"start": "2025-05-05", "end": "2025-06-06"}, "2025-05-05", "2025-06-06"),
    # start after end: swapped
    ("Apple's share price", {"start": "2025-06-06", "end": "2025-05-05"}, {"start": "2025-05-05", "end": "2025-06-06"},
     "2025-05-05", "2025-06-06"),
    # a future end: cut to today
    ("Apple's share price", {"start": "2025-05-05", "end": "2025-12-31"}, {"start": "2025-05-05", "end": "2025-06-13"},
     "2025-05-05", "2025-06-13"),
    # a relative range and dates: the dates
    ("Apple's share price", {"period": "1y", "start": "2025-04-01", "end": "2025-04-30"},
     {"start": "2025-04-01", "end": "2025-04-30"}, "2025-04-01", "2025-04-30"),
    # an interval Yahoo does not keep that far back: the nearest coarser one
    ("Apple's share price", {"period": "3mo", "interval": "1m"}, {"period": "3mo", "interval": "60m"}, "2025-03-19", "2025-06-13"),
]  # fmt: skip


@pytest.mark.parametrize(("question", "fields", "arguments", "first", "last"), HISTORY_CALLS)
async def test_price_history_is_fetched_for_the_range_asked_with_an_inclusive_end(
    tool_calls, question, fields, arguments, first, last
):
    finding = await fetched(question, "price_history", **fields)

    assert tool_calls == [("get_price_history", {"symbol": "AAPL", **arguments})]
    [result] = finding.results
    bars = result.result().bars
    assert (bars[0].date.date().isoformat(), bars[-1].date.date().isoformat()) == (first, last)
    assert f"{arguments.get('start', first)} to {arguments.get('end', last)}" in result.title


async def test_a_corrected_range_says_so_in_the_data_the_answer_is_written_from(tool_calls):
    finding = await fetched("Apple's share price", "price_history", start="2025-05-05", end="2025-12-31")

    [result] = finding.results
    assert result.data["notes"] == ["The range asked for ends 2025-12-31, after today; it is cut to today (2025-06-13)."]
    assert "note: The range asked for ends 2025-12-31" in finding.summary_text()


async def test_earnings_are_cut_to_the_reports_asked_for(tool_calls):
    finding = await fetched("Apple's EPS in the last 2 quarters", "earnings")

    assert tool_calls == [("get_earnings", {"symbol": "AAPL"})]
    [result] = finding.results
    earnings = result.result()
    assert [event.date.date().isoformat() for event in earnings.asked_reported] == ["2025-05-01", "2025-01-30"]
    # and the reports up to a year before the oldest one asked, the bases of year-over-year growth
    assert [event.date.date().isoformat() for event in earnings.reported[2:]] == [
        "2024-10-31", "2024-08-01", "2024-05-02", "2024-02-01",
    ]
    assert [event.date.date().isoformat() for event in earnings.upcoming] == ["2025-07-31", "2025-10-30"]
    assert result.title == "Yahoo Finance — AAPL earnings (2 reports, 2025-01-30 to 2025-05-01, with 4 earlier for growth)"


@pytest.mark.parametrize(("question", "fields", "limit"), [("Apple's 5 latest headlines", {}, 5), ("Apple news", {"limit": 50}, 20)])
async def test_news_is_fetched_with_the_bounded_limit(tool_calls, question, fields, limit):
    finding = await fetched(question, "news", **fields)

    assert tool_calls == [("get_news", {"symbol": "AAPL", "limit": limit})]
    assert len(finding.results[0].result().items) == limit


# --- the router, end to end --------------------------------------------------------------------------------

QUARTERLY_COMPARISON = "Compare AAPL and MSFT revenue growth over the last 3 quarters"
AAPL_QUARTERS = sub(
    "What was Apple's quarterly revenue over the last 3 quarters?", "numerical", ["AAPL"], "income_statement",
    frequency="quarterly", periods=3,
)  # fmt: skip
# The analyzer left this one's fields unset: its wording says quarters.
MSFT_QUARTERS = sub("What was Microsoft's revenue over the last 3 quarters?", "numerical", ["MSFT"], "income_statement")
WHICH_GREW_FASTER = sub("Which company's quarterly revenue grew faster?", "analytical")


async def test_a_quarterly_comparison_fetches_quarterly_statements_cut_to_three_quarters_and_their_bases(
    fake_openai, market_data, research_env
):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, AAPL_QUARTERS, MSFT_QUARTERS, WHICH_GREW_FASTER)
    script_synthesis(fake_openai, "Apple's quarterly revenue was steady [1]; Microsoft's too [2].")

    events = await run(QUARTERLY_COMPARISON)

    # quarterly statements were asked for, and annual ones only for the fiscal calendar that names the quarters
    assert {call for call in market_data.calls if call[1].startswith("income")} == {
        ("AAPL", "income:quarterly"),
        ("MSFT", "income:quarterly"),
        ("AAPL", "income:yearly"),
        ("MSFT", "income:yearly"),
    }
    # the sources read quarterly, name the three quarters (by their end, and as each company's fiscal quarters)
    # and count the earlier ones kept for growth; Apple's 52/53-week quarters end on Saturdays
    sources = of_type(events, "sources")[-1].sources
    assert [(s.n, s.kind, s.title, s.as_of) for s in sources] == [
        (1, "market_data", "Yahoo Finance — AAPL income statement (quarterly), 3 periods ending 2024-09-28 to "
         "2025-03-29, with 2 earlier for growth; Q4 FY2024 (Jul–Sep 2024) to Q2 FY2025 (Jan–Mar 2025)", "2025-03-29"),
        (2, "market_data", "Yahoo Finance — MSFT income statement (quarterly), 3 periods ending 2024-09-30 to "
         "2025-03-31, with 2 earlier for growth; Q1 FY2025 (Jul–Sep 2024) to Q3 FY2025 (Jan–Mar 2025)", "2025-03-31"),
    ]  # fmt: skip
    assert summary_of(events).sources == sources
    # the synthesizer got those three quarters, and the two before them marked as bases only
    [synthesis] = requests_of(fake_openai, is_synthesis)
    assert (
        "quarterly income statement, periods ending 2025-03-29, 2024-12-28, 2024-09-28; then, not asked for and "
        "given only as growth bases, 2024-06-29, 2024-03-30\n"
    ) in synthesis.input_text
    assert (
        "quarterly income statement, periods ending 2025-03-31, 2024-12-31, 2024-09-30; then, not asked for and "
        "given only as growth bases, 2024-06-30, 2024-03-31\n"
    ) in synthesis.input_text
    # the charts (one a sub-question) draw the quarters asked, oldest first, named as the company names them
    charts = of_type(events, "chart")
    assert [[(one.name, [x for x, _ in one.points]) for one in chart.series] for chart in charts] == [
        [("AAPL", ["Q4 FY2024 (Jul–Sep 2024)", "Q1 FY2025 (Oct–Dec 2024)", "Q2 FY2025 (Jan–Mar 2025)"])],
        [("MSFT", ["Q1 FY2025 (Jul–Sep 2024)", "Q2 FY2025 (Oct–Dec 2024)", "Q3 FY2025 (Jan–Mar 2025)"])],
    ]
    # each quarter asked has its growth over the quarter before; the newest, over the same quarter a year
    # earlier (the fake's quarterly table reaches back a year, so only the newest has that base)
    growth = {
        (f.inputs[0].symbol, f.kind, f.inputs[0].period, f.inputs[1].period): f.value
        for f in summary_of(events).facts
        if f.kind in ("growth", "yoy_growth")
    }
    rates = [  # (kind, Apple's periods, Microsoft's periods, the rate)
        ("growth", ("2025-03-29", "2024-12-28"), ("2025-03-31", "2024-12-31"), -23.283186),  # (95,359 - 124,300) / 124,300
        ("yoy_growth", ("2025-03-29", "2024-03-30"), ("2025-03-31", "2024-03-31"), 5.075314),  # (95,359 - 90,753) / 90,753
        ("growth", ("2024-12-28", "2024-09-28"), ("2024-12-31", "2024-09-30"), 30.938586),  # (124,300 - 94,930) / 94,930
        ("growth", ("2024-09-28", "2024-06-29"), ("2024-09-30", "2024-06-30"), 10.670693),  # (94,930 - 85,777) / 85,777
    ]  # fmt: skip  # Microsoft is the fake's Apple scaled: the same rates
    assert growth == {
        (symbol, kind, *periods): pytest.approx(rate, abs=1e-6)
        for kind, apple, microsoft, rate in rates
        for symbol, periods in (("AAPL", apple), ("MSFT", microsoft))
    }
    # the plan's steps carry their validated request, so a resumed run asks for the same periods
    steps = [PlannedStep.model_validate(step) for step in of_type(events, "checkpoint")[0].state["next_steps"]]
    assert [(step.id, step.request) for step in steps] == [
        ("q1", MarketDataRequest(frequency="quarterly", periods=3)),
        ("q2", MarketDataRequest(frequency="quarterly", periods=3)),
        ("q3", None),
    ]


async def test_a_checkpoint_written_before_periods_were_planned_resumes_with_periods_from_the_wording(
    fake_openai, market_data, research_env
):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, AAPL_QUARTERS, MSFT_QUARTERS)
    old = (await first_checkpoint(QUARTERLY_COMPARISON)).model_dump(mode="json")
    for step in old["next_steps"]:
        del step["request"]  # the shape of a checkpoint stored before this change
    script_synthesis(fake_openai, "Apple's quarterly revenue was steady [1].")
    market_data.calls.clear()

    query = ResearchQuery(question=QUARTERLY_COMPARISON)
    events = [event async for event in run_research(query, resume_from=old)]

    assert ResearchCheckpoint.model_validate(old).next_steps[0].request is None
    assert {call for call in market_data.calls if call[1].startswith("income")} == {
        ("AAPL", "income:quarterly"),
        ("MSFT", "income:quarterly"),
        ("AAPL", "income:yearly"),
        ("MSFT", "income:yearly"),
    }
    titles = [source.title for source in of_type(events, "sources")[-1].sources]
    assert len(titles) == 2
    assert "(quarterly), 3 periods ending 2024-09-28 to 2025-03-29" in titles[0]
    assert "(quarterly), 3 periods ending 2024-09-30 to 2025-03-31" in titles[1]


async def first_checkpoint(question: str) -> ResearchCheckpoint:
    """The checkpoint a run stores right after its plan, with all its research still to run."""
    research = run_research(ResearchQuery(question=question))
    try:
        async for event in research:
            if event.type == "checkpoint":
                return ResearchCheckpoint.model_validate(event.state)
    finally:
        await research.aclose()
    raise AssertionError("the run stored no checkpoint")


def test_a_sub_question_without_period_fields_still_validates():
    # The analyzer's contract without the period fields, as every plan stored before them reads.
    sub_question = SubQuestion.model_validate(
        {"question": "Apple's revenue", "type": "numerical", "tickers": ["AAPL"], "data": "income_statement"}
    )

    assert (sub_question.frequency, sub_question.periods, sub_question.start, sub_question.limit) == (None,) * 4
