"""Fiscal periods: a company's fiscal calendar, read from the period ends of its statements, decides what
"Q3 FY2025" and "fiscal 2024" mean; calendar wording stays calendar; labels name both.

The period ends below are the companies' real ones. NVIDIA's fiscal year ends on the last Sunday of January
(FY2025 ended 2025-01-26), Apple's on the last Saturday of September (FY2024 ended 2024-09-28), Microsoft's
on June 30. The research-path tests plan and answer sub-questions as a run does, and one runs the whole
pipeline against the fake Responses server; they use the real market data client (`fetch_market_data`, which
cuts the statements to the periods asked) over a session that serves statements with these period ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

import pytest
from mcp_types import CallToolResult, TextContent

from datascraper.filings.tools import FILING_TOOL_NAMES
from datascraper.market_data.finding_schemas import MarketDataRequest
from datascraper.market_data.statement_schemas import FinancialStatement, StatementLine
from datascraper.models_config import get_research_config
from datascraper.plan_schemas import SubQuestion
from datascraper.research_engine.charts import charts_for
from datascraper.research_engine.data.market_data_client import set_market_data_client
from datascraper.research_engine.executor import SubQuestionAttempt, answer_sub_question
from datascraper.research_engine.facts import compute_facts
from datascraper.research_engine.periods.as_of import period_label
from datascraper.research_engine.periods.fiscal_calendar import FiscalPeriodRef, infer_calendar
from datascraper.research_engine.periods.fiscal_fetch import fetch_by_fiscal_period
from datascraper.research_engine.periods.request import fiscal_ask, market_data_request, resolve_fiscal
from datascraper.research_engine.periods.wording import read_fiscal_wording, read_wording
from datascraper.research_engine.state import Finding, plan_steps
from datascraper.schemas import Source, UsageLedger
from tests.datascraper.research_support import (
    is_synthesis,
    of_type,
    requests_of,
    run,
    script_analysis,
    script_synthesis,
    summary_of,
)

D = date.fromisoformat
TODAY = D("2025-11-30")

NVDA_YEARS = [D("2025-01-26"), D("2024-01-28"), D("2023-01-29"), D("2022-01-30")]
NVDA_QUARTERS = [
    D("2025-10-26"), D("2025-07-27"), D("2025-04-27"), D("2025-01-26"), D("2024-10-27"), D("2024-07-28"),
    D("2024-04-28"), D("2024-01-28"), D("2023-10-29"),
]  # fmt: skip
AAPL_YEARS = [D("2025-09-27"), D("2024-09-28"), D("2023-09-30"), D("2022-09-24")]
AAPL_QUARTERS = [
    D("2025-09-27"), D("2025-06-28"), D("2025-03-29"), D("2024-12-28"), D("2024-09-28"), D("2024-06-29"),
    D("2024-03-30"),
]  # fmt: skip
MSFT_YEARS = [D("2025-06-30"), D("2024-06-30"), D("2023-06-30"), D("2022-06-30")]
MSFT_QUARTERS = [D("2025-09-30"), D("2025-06-30"), D("2025-03-31"), D("2024-12-31"), D("2024-09-30"), D("2024-06-30")]
# A retailer-style 52/53-week year ending on the Saturday nearest December 31: FY2021 ended on 2022-01-01.
NEAREST_SATURDAY_YEARS = [D("2022-12-31"), D("2022-01-01"), D("2021-01-02")]


def q(year: int, quarter: int | None = None) -> FiscalPeriodRef:
    return FiscalPeriodRef(year=year, quarter=quarter)


# --- the calendar --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("years", "quarters", "year_end_month", "named"),
    [
        # NVIDIA: Q3 FY2025 is August to October 2024 and ended 2024-10-27
        (NVDA_YEARS, NVDA_QUARTERS, 1, {D("2024-10-27"): "Q3 FY2025 (Aug–Oct 2024)", D("2025-07-27"): "Q2 FY2026 (May–Jul 2025)"}),
        # Apple: 2024-12-28 closed Q1 FY2025; 2025-09-27 closed Q4, not Q3
        (AAPL_YEARS, AAPL_QUARTERS, 9, {D("2024-12-28"): "Q1 FY2025 (Oct–Dec 2024)", D("2025-06-28"): "Q3 FY2025 (Apr–Jun 2025)", D("2025-09-27"): "Q4 FY2025 (Jul–Sep 2025)"}),
        # Microsoft: FY2026 began in July 2025
        (MSFT_YEARS, MSFT_QUARTERS, 6, {D("2025-09-30"): "Q1 FY2026 (Jul–Sep 2025)", D("2025-06-30"): "Q4 FY2025 (Apr–Jun 2025)"}),
        # a calendar-year company: its fiscal quarters are the calendar's
        ([D("2024-12-31"), D("2023-12-31")], [D("2025-09-30")], 12, {D("2025-09-30"): "Q3 FY2025 (Jul–Sep 2025)"}),
        # a year ending a day into January closes December: Q1 FY2022 ended 2022-04-02
        (NEAREST_SATURDAY_YEARS, [D("2022-04-02"), D("2022-01-01")], 12, {D("2022-04-02"): "Q1 FY2022 (Jan–Mar 2022)", D("2022-01-01"): "Q4 FY2021 (Oct–Dec 2021)"}),
    ],
)  # fmt: skip
def test_the_calendar_is_read_from_the_fiscal_year_ends_and_names_each_quarter(years, quarters, year_end_month, named):
    calendar = infer_calendar(years, quarters)

    assert calendar is not None and calendar.year_end_month == year_end_month
    assert {end: calendar.period_ending(end, quarterly=True).label for end in named} == named


def test_a_fiscal_year_is_named_by_the_calendar_year_it_ends_in():
    nvidia, apple, microsoft = infer_calendar(NVDA_YEARS), infer_calendar(AAPL_YEARS), infer_calendar(MSFT_YEARS)
    nearest_saturday = infer_calendar(NEAREST_SATURDAY_YEARS)

    assert nvidia.period_ending(D("2025-01-26"), quarterly=False).label == "FY2025 (Feb 2024–Jan 2025)"
    assert apple.period_ending(D("2024-09-28"), quarterly=False).label == "FY2024 (Oct 2023–Sep 2024)"
    assert microsoft.period_ending(D("2025-06-30"), quarterly=False).label == "FY2025 (Jul 2024–Jun 2025)"
    assert nearest_saturday.period_ending(D("2022-01-01"), quarterly=False).label == "FY2021 (Jan–Dec 2021)"


def test_a_fiscal_period_is_matched_by_its_end_within_a_week_of_the_month_end():
    nvidia = infer_calendar(NVDA_YEARS)

    third = nvidia.period(q(2025, 3))

    assert third.window == (D("2024-10-08"), D("2024-11-07"))
    assert third.window[0] <= D("2024-10-27") <= third.window[1]
    assert nvidia.period(q(2025)).window[0] <= D("2025-01-26") <= nvidia.period(q(2025)).window[1]


@pytest.mark.parametrize(
    ("years", "quarters"),
    [
        ([D("2024-09-28")], []),  # one year end: the month could be a coincidence
        ([], AAPL_QUARTERS),  # quarters alone do not say which of them closes the year
        ([D("2024-09-28"), D("2023-06-30")], []),  # the year end moved: no one calendar
        (AAPL_YEARS, [D("2025-08-15")]),  # a quarter that closes no quarter of the calendar
    ],
)
def test_without_dates_that_agree_there_is_no_calendar(years, quarters):
    assert infer_calendar(years, quarters) is None


# --- the wording ---------------------------------------------------------------------------------------------

FISCAL_WORDING = [
    ("NVIDIA revenue in Q3 fiscal 2025", "Q3 FY2025"),
    ("NVIDIA revenue in Q3 FY2025", "Q3 FY2025"),
    ("NVIDIA revenue in Q3 FY25", "Q3 FY2025"),
    ("Apple's revenue in FY2025 Q3", "Q3 FY2025"),
    ("Apple's revenue in fiscal Q3 2025", "Q3 FY2025"),
    ("Apple's revenue in the fiscal third quarter of 2025", "Q3 FY2025"),
    ("Apple's revenue in the third fiscal quarter of 2025", "Q3 FY2025"),
    ("Apple's revenue in the third quarter of fiscal 2025", "Q3 FY2025"),
    ("Apple's revenue in fiscal 2025's third quarter", "Q3 FY2025"),
    ("Apple's revenue in the FY2025 third quarter", "Q3 FY2025"),
    ("Apple's revenue in fiscal 2024", "FY2024"),
    ("Apple's revenue in fiscal year 2024", "FY2024"),
    ("Apple's revenue in FY2022-FY2024", "FY2022 to FY2024"),
    ("Apple's revenue in Q3 FY2024 and Q3 FY2025", "Q3 FY2024 to Q3 FY2025"),
]


@pytest.mark.parametrize(("question", "named"), FISCAL_WORDING)
def test_fiscal_wording_names_fiscal_periods(question, named):
    ask = read_fiscal_wording(question)

    assert ask is not None and ask.name == named


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Apple's revenue in Q3 2025", {"frequency": "quarterly", "start": D("2025-07-01"), "end": D("2025-09-30")}),
        ("Apple's revenue in calendar 2024", {"start": D("2024-01-01"), "end": D("2024-12-31")}),
        ("Apple's revenue in the quarter ending September 2025", {"frequency": "quarterly", "start": D("2025-09-01"), "end": D("2025-09-30")}),
    ],
)  # fmt: skip
def test_calendar_wording_stays_calendar(question, expected):
    assert read_fiscal_wording(question) is None
    assert read_wording(question, data="income_statement", today=TODAY).model_dump(exclude_defaults=True) == expected


def revenue_question(question: str, ticker: str = "NVDA", **fields: Any) -> SubQuestion:
    return SubQuestion(question=question, type="numerical", tickers=[ticker], data="income_statement", **fields)


def test_fy2025_q3_is_one_quarter_not_four():
    sub_question = revenue_question("Apple's revenue in FY2025 Q3", "AAPL")

    ask = fiscal_ask(sub_question)
    request = market_data_request(sub_question, today=TODAY)

    assert ask is not None and ask.first == ask.last == q(2025, 3)
    assert (request.frequency, request.start, request.end) == ("quarterly", None, None)


def test_the_fiscal_reading_wins_over_calendar_dates_the_analyzer_set():
    sub_question = revenue_question(
        "NVIDIA revenue in Q3 fiscal 2025", frequency="quarterly", start=D("2025-07-01"), end=D("2025-09-30")
    )

    assert fiscal_ask(sub_question).name == "Q3 FY2025"
    assert market_data_request(sub_question, today=TODAY).start is None


def test_the_analyzers_fiscal_period_is_read_when_the_question_does_not_say_it():
    sub_question = revenue_question(
        "NVIDIA's revenue in the quarter it reported in November 2024", fiscal_period="Q3 FY2025"
    )

    assert fiscal_ask(sub_question).name == "Q3 FY2025"


def test_an_analyzer_output_without_the_fiscal_field_still_parses():
    sub_question = SubQuestion.model_validate(
        {"question": "Apple's revenue in Q3 2025", "type": "numerical", "tickers": ["AAPL"], "data": "income_statement"}
    )

    assert sub_question.fiscal_period is None and fiscal_ask(sub_question) is None


# --- placing fiscal periods on a calendar --------------------------------------------------------------------


def placed(question: str, calendar, *, data: str = "income_statement", symbol: str = "NVDA") -> MarketDataRequest:
    sub_question = SubQuestion(question=question, type="numerical", tickers=[symbol], data=data)
    request = market_data_request(sub_question, today=TODAY)
    return resolve_fiscal(request, fiscal_ask(sub_question), calendar, data=data, symbol=symbol, today=TODAY)


def test_nvidias_q3_fiscal_2025_is_the_quarter_that_ended_in_october_2024():
    request = placed("NVIDIA revenue in Q3 fiscal 2025", infer_calendar(NVDA_YEARS))

    assert request.frequency == "quarterly"
    assert request.start <= D("2024-10-27") <= request.end
    assert not request.start <= D("2025-07-27") <= request.end
    assert request.corrections == []


def test_apples_fiscal_2022_to_2024_are_its_three_years_to_september_2024():
    request = placed("Apple's revenue in FY2022-FY2024", infer_calendar(AAPL_YEARS), symbol="AAPL")

    inside = [end for end in AAPL_YEARS if request.start <= end <= request.end]
    assert request.frequency == "annual" and inside == [D("2024-09-28"), D("2023-09-30"), D("2022-09-24")]


def test_the_quarters_of_a_fiscal_year_are_the_four_that_close_in_it():
    request = placed("NVIDIA's quarterly revenue in fiscal 2025", infer_calendar(NVDA_YEARS))

    inside = [end for end in NVDA_QUARTERS if request.start <= end <= request.end]
    assert request.frequency == "quarterly"
    assert inside == [D("2025-01-26"), D("2024-10-27"), D("2024-07-28"), D("2024-04-28")]


def test_without_a_calendar_the_period_is_read_as_calendar_months_and_says_so():
    request = placed("NVIDIA revenue in Q3 fiscal 2025", None)

    assert request.start <= D("2025-09-30") <= request.end
    assert request.corrections == [
        "NVDA's fiscal calendar could not be read from its statements; Q3 FY2025 is read as calendar months "
        "(Jul–Sep 2025)."
    ]


def test_an_earnings_report_is_looked_for_after_the_fiscal_quarter_closes():
    request = placed("NVIDIA's EPS in Q3 fiscal 2025", infer_calendar(NVDA_YEARS), data="earnings")

    assert request.start <= D("2024-11-20") <= request.end  # NVIDIA reported Q3 FY2025 on 2024-11-20
    assert not request.start <= D("2024-08-28") <= request.end  # its Q2 report


def test_the_earnings_of_a_fiscal_year_are_its_four_quarterly_reports():
    request = placed("NVIDIA's EPS in fiscal 2025", infer_calendar(NVDA_YEARS), data="earnings")

    reports = [D("2024-05-22"), D("2024-08-28"), D("2024-11-20"), D("2025-02-26"), D("2025-05-28")]
    assert [day for day in reports if request.start <= day <= request.end] == reports[:4]


# --- labels --------------------------------------------------------------------------------------------------


def test_statement_periods_are_labelled_with_their_fiscal_name_and_months():
    nvidia = infer_calendar(NVDA_YEARS)

    assert period_label(D("2024-10-27"), "quarterly", nvidia) == "Q3 FY2025 (Aug–Oct 2024)"
    assert period_label(D("2024-09-28"), "annual", infer_calendar(AAPL_YEARS)) == "FY2024 (Oct 2023–Sep 2024)"
    # without a calendar: the calendar quarter
    assert period_label(D("2024-10-27"), "quarterly") == "2024-Q4"


# --- through the research path -------------------------------------------------------------------------------

STATEMENTS = {
    ("NVDA", "annual"): NVDA_YEARS,
    ("NVDA", "quarterly"): NVDA_QUARTERS,
    ("AAPL", "annual"): AAPL_YEARS,
    ("AAPL", "quarterly"): AAPL_QUARTERS,
    ("MSFT", "annual"): MSFT_YEARS,
    ("MSFT", "quarterly"): MSFT_QUARTERS,
}


def revenue(symbol: str, end: date) -> float:
    """A figure that names its period: 1000 x the year + the day of the year, in millions."""
    return (end.year * 1000 + end.timetuple().tm_yday) * 1e6


class StatementSession:
    """The market data session, serving income statements with the companies' real period ends (the
    tool returns every period; `fetch_market_data` cuts them to the periods asked)."""

    def __init__(self, statements: dict[tuple[str, str], list[date]]) -> None:
        self.statements = statements
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, timeout_s: float | None = None
    ) -> CallToolResult:
        if name in FILING_TOOL_NAMES:  # as our server answers them without SEC_USER_AGENT
            text = "not_configured: The SEC filing tools need SEC_USER_AGENT."
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        self.calls.append((name, arguments))
        symbol, frequency = arguments["symbol"], arguments.get("frequency", "annual")
        ends = self.statements[(symbol, frequency)]
        statement = FinancialStatement(
            symbol=symbol,
            currency="USD",
            as_of=datetime.combine(ends[0], datetime.min.time(), UTC),
            retrieved_at=datetime(2025, 11, 30, tzinfo=UTC),
            url=f"https://finance.yahoo.com/quote/{symbol}/financials",
            statement="income",
            frequency=frequency,
            periods=ends,
            lines=[StatementLine(name="TotalRevenue", values=[revenue(symbol, end) for end in ends])],
        )
        return CallToolResult(content=[], structured_content=statement.model_dump(mode="json"))


@pytest.fixture
def session() -> Iterator[StatementSession]:
    fake = StatementSession(STATEMENTS)
    previous = set_market_data_client(fake)  # type: ignore[arg-type]
    yield fake
    set_market_data_client(previous)


async def answered(question: str, tickers: list[str], **fields: Any) -> Finding:
    """One numerical sub-question planned and answered as a research round does it."""
    sub_question = SubQuestion(question=question, type="numerical", tickers=tickers, data="income_statement", **fields)
    [step] = plan_steps([sub_question], first_number=1, today=TODAY)
    return await answer_sub_question(
        step,
        lambda event: None,
        0.0,
        SubQuestionAttempt(route="market_data"),
        config=get_research_config(),
        ledger=UsageLedger(),
        today=TODAY,
    )


def asked_ends(finding: Finding) -> dict[str, list[str]]:
    return {
        result.symbol: [end.isoformat() for end in result.result().asked_periods]
        for result in finding.market_data.results
    }


async def test_nvidias_q3_fiscal_2025_revenue_is_the_quarter_ending_2024_10_27(session):
    finding = await answered("What was NVIDIA's revenue in Q3 fiscal 2025?", ["NVDA"])

    assert asked_ends(finding) == {"NVDA": ["2024-10-27"]}
    [result] = finding.market_data.results
    assert result.title.endswith("; Q3 FY2025 (Aug–Oct 2024)")
    # the calendar came from the annual statement, the quarter from the quarterly one
    assert [arguments["frequency"] for _, arguments in session.calls] == ["annual", "quarterly"]


async def test_apples_fiscal_q3_2025_is_the_june_quarter_not_the_september_one(session):
    finding = await answered("What was Apple's revenue in fiscal Q3 2025?", ["AAPL"])

    assert asked_ends(finding) == {"AAPL": ["2025-06-28"]}


async def test_a_comparison_places_the_fiscal_year_on_each_companys_own_calendar(session):
    finding = await answered("Compare Apple's and Microsoft's revenue in fiscal 2024", ["AAPL", "MSFT"])

    assert asked_ends(finding) == {"AAPL": ["2024-09-28"], "MSFT": ["2024-06-30"]}
    titles = {result.symbol: result.title for result in finding.market_data.results}
    assert titles["AAPL"].endswith("; FY2024 (Oct 2023–Sep 2024)")
    assert titles["MSFT"].endswith("; FY2024 (Jul 2023–Jun 2024)")


async def test_facts_and_charts_name_fiscal_quarters_with_their_months(session):
    finding = await answered("NVIDIA's revenue growth in each of the last 2 quarters", ["NVDA"])

    facts = compute_facts([finding.market_data], finding.fiscal_calendars)
    [result] = finding.market_data.results
    [chart] = charts_for([finding], [Source(n=1, title=result.title, url=result.url, kind="market_data")])

    growth = next(fact for fact in facts if fact.kind == "growth")
    assert growth.label == (
        "NVDA Total Revenue growth, Q3 FY2026 (Aug–Oct 2025, ended 2025-10-26) vs Q2 FY2026 (May–Jul 2025, "
        "ended 2025-07-27)"
    )
    assert [x for x, _ in chart.series[0].points] == ["Q2 FY2026 (May–Jul 2025)", "Q3 FY2026 (Aug–Oct 2025)"]
    assert result.title.endswith("; Q2 FY2026 (May–Jul 2025) to Q3 FY2026 (Aug–Oct 2025)")


async def test_a_company_whose_calendar_cannot_be_read_gets_calendar_months_and_a_note(session):
    session.statements = {**STATEMENTS, ("NVDA", "annual"): NVDA_YEARS[:1]}

    finding = await fetch_by_fiscal_period(
        ["NVDA"],
        "income_statement",
        question="NVIDIA revenue in Q3 fiscal 2025",
        request=MarketDataRequest(frequency="quarterly"),
        ask=read_fiscal_wording("Q3 fiscal 2025"),
        today=TODAY,
    )

    [result] = finding.finding.results
    assert [end.isoformat() for end in result.result().asked_periods] == ["2025-07-27"]
    assert result.result().notes == [
        "NVDA's fiscal calendar could not be read from its statements; Q3 FY2025 is read as calendar months "
        "(Jul–Sep 2025)."
    ]
    assert finding.calendars == {}


async def test_a_run_answers_with_nvidias_fiscal_quarter_and_names_it_in_sources_charts_and_facts(
    fake_openai, research_env, session
):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    # The analyzer read the fiscal quarter as calendar months: the company's calendar wins.
    asked = SubQuestion(
        question="What was NVIDIA's revenue in Q3 fiscal 2025?",
        type="numerical",
        tickers=["NVDA"],
        data="income_statement",
        frequency="quarterly",
        start=D("2025-07-01"),
        end=D("2025-09-30"),
    )
    script_analysis(fake_openai, asked, SubQuestion(question="How did it grow?", type="analytical"))
    script_synthesis(fake_openai, "NVIDIA's revenue in Q3 FY2025 is given [1].")

    events = await run("What was NVIDIA's revenue in Q3 fiscal 2025?", mode="research")

    [source] = of_type(events, "sources")[-1].sources
    assert (source.title, source.as_of) == (
        "Yahoo Finance — NVDA income statement (quarterly), period ending 2024-10-27, with 4 earlier for growth; "
        "Q3 FY2025 (Aug–Oct 2024)",
        "2024-10-27",
    )
    [chart] = of_type(events, "chart")
    assert chart.series[0].points == [("Q3 FY2025 (Aug–Oct 2024)", revenue("NVDA", D("2024-10-27")))]
    labels = {fact.kind: fact.label for fact in summary_of(events).facts if fact.kind in ("growth", "yoy_growth")}
    assert labels == {
        "growth": "NVDA Total Revenue growth, Q3 FY2025 (Aug–Oct 2024, ended 2024-10-27) vs Q2 FY2025 (May–Jul "
        "2024, ended 2024-07-28)",
        "yoy_growth": "NVDA Total Revenue year over year, Q3 FY2025 (Aug–Oct 2024, ended 2024-10-27) vs Q3 FY2024 "
        "(Aug–Oct 2023, ended 2023-10-29)",
    }
    [synthesis] = requests_of(fake_openai, is_synthesis)
    assert "Q3 FY2025 (Aug–Oct 2024, ended 2024-10-27)" in synthesis.input_text


# --- against the fake Yahoo at yfinance's HTTP boundary ---------------------------------------------------------
# Its NVIDIA and Apple statements carry the real period ends and revenues; its data ends on 2025-06-13.

FAKE_YAHOO_TODAY = D("2025-06-13")


@pytest.mark.parametrize(
    ("question", "ticker", "period_end", "revenue_reported", "named"),
    [
        # calendar Q3 2025 had not ended: the old reading gave the latest quarter, Q1 FY2026 (2025-04-27)
        ("What was NVIDIA's revenue in Q3 fiscal 2025?", "NVDA", "2024-10-27", 35_082e6, "Q3 FY2025 (Aug–Oct 2024)"),
        # calendar Q1 2025 is Apple's fiscal Q2 (2025-03-29)
        ("What was Apple's revenue in fiscal Q1 2025?", "AAPL", "2024-12-28", 124_300e6, "Q1 FY2025 (Oct–Dec 2024)"),
    ],
)  # fmt: skip
async def test_the_fake_yahoos_statements_give_the_fiscal_quarter_asked(
    market_data, question, ticker, period_end, revenue_reported, named
):
    sub_question = revenue_question(question, ticker)
    [step] = plan_steps([sub_question], first_number=1, today=FAKE_YAHOO_TODAY)

    fetched = await fetch_by_fiscal_period(
        step.tickers, step.data, question=question, request=step.request, ask=step.fiscal, today=FAKE_YAHOO_TODAY
    )

    [result] = fetched.finding.results
    statement = result.result()
    assert [end.isoformat() for end in statement.asked_periods] == [period_end]
    [total_revenue] = [line.values[0] for line in statement.lines if line.name == "TotalRevenue"]
    assert total_revenue == revenue_reported
    assert result.title.endswith(f"; {named}")


async def test_the_earnings_report_of_a_fiscal_quarter_is_the_one_after_it_closed(market_data):
    question = "What EPS did Apple report for fiscal Q1 2025?"
    sub_question = SubQuestion(question=question, type="numerical", tickers=["AAPL"], data="earnings")
    [step] = plan_steps([sub_question], first_number=1, today=FAKE_YAHOO_TODAY)

    fetched = await fetch_by_fiscal_period(
        step.tickers, step.data, question=question, request=step.request, ask=step.fiscal, today=FAKE_YAHOO_TODAY
    )

    [result] = fetched.finding.results
    assert [event.date.date().isoformat() for event in result.result().asked_reported] == ["2025-01-30"]
    assert result.title.endswith("; Q1 FY2025 (Oct–Dec 2024)")


async def test_quarters_that_do_not_fit_the_year_ends_leave_the_periods_named_by_their_dates(session):
    # Year ends in September, but quarters closing in August, November...: a fiscal year that changed.
    shifted = [D("2025-08-31"), D("2025-05-31"), D("2025-02-28"), D("2024-11-30"), D("2024-08-31")]
    session.statements = {**STATEMENTS, ("AAPL", "quarterly"): shifted}

    finding = await answered("Apple's revenue in each of the last 2 quarters", ["AAPL"])

    [result] = finding.market_data.results
    assert finding.fiscal_calendars == {}
    assert result.title.endswith("2 periods ending 2025-05-31 to 2025-08-31, with 3 earlier for growth")
