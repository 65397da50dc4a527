"""As-of dates on market data sources, and the `chart` events drawn from market data.

The runs go through the real pipeline, the real OpenAI SDK against the fake Responses server and the real
MCP client against the market data server over the fake yfinance. Expected points are read from the tool
payloads the run itself received (its checkpoint), so a chart is checked against the tool output, not
against a second reading of the fake.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from curl_cffi.requests.models import Response
from pydantic import ValidationError

from datascraper import prompts
from datascraper.cache import TTLCache
from datascraper.market_data.finding_schemas import MarketDataFinding, ToolResult
from datascraper.market_data.schemas import PriceBar, PriceHistory
from datascraper.market_data.statement_schemas import FinancialStatement, StatementLine
from datascraper.market_data.yahoo import YahooFinanceAdapter
from datascraper.research_engine.charts import MAX_CHARTS, MAX_POINTS, charts_for, lines_asked
from datascraper.research_engine.periods.as_of import period_label
from datascraper.research_engine.periods.fiscal_calendar import FiscalCalendar, infer_calendar
from datascraper.research_engine.state import Finding, PlannedStep
from datascraper.schemas import Chart, ChartEvent, ChartSeries, Source
from tests.datascraper.conftest import MARKET_NOW
from tests.datascraper.research_support import (
    is_synthesis,
    of_type,
    requests_of,
    run,
    script_analysis,
    script_synthesis,
    searched,
    sub,
    summary_of,
)
from tests.fakes.openai_server import Sentence, TextReply
from tests.fakes.yfinance import FakeYahoo, _reply
from tests.recorded import recorded_bytes, requires_recorded

REUTERS = ("https://www.reuters.com/apple-microsoft-outlook", "Apple and Microsoft outlook - Reuters")
APPLE_MONTH = sub("How did Apple's share price move over the last month?", "numerical", ["AAPL"], "price_history")
REVENUES = sub(
    "What were Apple's and Microsoft's annual revenues in fiscal 2021-2024?", "numerical", ["AAPL", "MSFT"], "income_statement"
)
OUTLOOK = sub("What do analysts expect from Apple and Microsoft in 2025?")


def tool_payloads(events: list, tool: str) -> dict[str, dict]:
    """The payloads of `tool` the run received, by symbol: its last checkpoint holds every finding."""
    findings = of_type(events, "checkpoint")[-1].state["findings"]
    return {
        result["symbol"]: result["data"]
        for finding in findings
        if finding["market_data"] is not None
        for result in finding["market_data"]["results"]
        if result["tool"] == tool
    }


def source_at(events: list, url: str) -> Source:
    return next(s for s in of_type(events, "sources")[-1].sources if s.url == url)


# --- as-of on every kind of market data source -------------------------------------------------------------


async def test_a_quote_source_is_as_of_the_quotes_time_and_sends_no_chart(fake_openai, market_data):
    events = await run("What is AAPL trading at?")

    [source] = of_type(events, "sources")[-1].sources
    assert source.as_of == MARKET_NOW.isoformat() == "2025-06-13T20:00:00+00:00"
    assert summary_of(events).sources[0].as_of == source.as_of
    assert of_type(events, "sources")[-1].payload()["sources"][0]["as_of"] == "2025-06-13T20:00:00+00:00"
    assert of_type(events, "chart") == []


async def test_a_price_history_is_charted_as_a_line_of_the_tools_closes(fake_openai, market_data, research_env):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, APPLE_MONTH)
    script_synthesis(fake_openai, "Apple closed at 196.45 USD on 2025-06-13 [1].")

    events = await run("How has Apple's stock done over the last month?")

    bars = tool_payloads(events, "get_price_history")["AAPL"]["bars"]
    last_day = bars[-1]["date"][:10]
    source = source_at(events, "https://finance.yahoo.com/quote/AAPL/history")
    # as of the last bar, the range named in the title
    assert source.as_of == last_day == "2025-06-13"
    assert f"{bars[0]['date'][:10]} to {last_day}" in source.title
    [chart] = of_type(events, "chart")
    assert (chart.id, chart.kind, chart.unit, chart.as_of, chart.source_n) == ("c1", "line", "USD", last_day, source.n)
    [series] = chart.series
    assert series.name == "AAPL" and series.source_n == source.n
    assert series.points == [(bar["date"][:10], bar["close"]) for bar in bars]
    assert len(series.points) == 21
    assert series.ends == [x for x, _ in series.points], "a price's end is its day"
    # the chart goes out once sources are numbered, before the answer's first delta
    types = [event.type for event in events]
    assert types.index("chart") < types.index("delta")
    # the synthesizer sees the as-of in the source list and is asked to state it
    [synthesis] = requests_of(fake_openai, is_synthesis)
    assert f"[{source.n}] {source.title} — {source.url} (market data, as of 2025-06-13)" in synthesis.input_text
    assert "State the as-of date of the market data you cite" in prompts.SYNTHESIS_INSTRUCTIONS
    assert "State the as-of date of the market data you cite" in synthesis.instructions


async def test_a_statement_comparison_is_charted_as_bars_per_ticker_citing_each_tickers_source(
    fake_openai, market_data, research_env
):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, OUTLOOK, REVENUES)
    fake_openai.script(
        TextReply([Sentence("Analysts expect steady growth at both.", cites=[REUTERS])]), when=searched("expect from Apple")
    )
    script_synthesis(fake_openai, "Apple's revenue was $391.04 billion in fiscal 2024 [2].")

    events = await run("Compare Apple's and Microsoft's revenue and their outlook")

    # the web source is [1]: market data sources follow in plan order
    apple = source_at(events, "https://finance.yahoo.com/quote/AAPL/financials")
    microsoft = source_at(events, "https://finance.yahoo.com/quote/MSFT/financials")
    assert (apple.n, microsoft.n) == (2, 3)
    assert source_at(events, REUTERS[0]).as_of is None
    # statements are as of their newest period end (each company's own fiscal year end), the fiscal years
    # shown named in the title
    assert (apple.as_of, microsoft.as_of) == ("2024-09-28", "2024-06-30")
    assert "2021-09-25 to 2024-09-28" in apple.title
    assert [s.as_of for s in summary_of(events).sources] == [None, "2024-09-28", "2024-06-30"]

    [chart] = of_type(events, "chart")
    assert (chart.kind, chart.unit, chart.as_of, chart.source_n) == ("bars", "USD", "2024-09-28", apple.n)
    assert chart.title == "Total Revenue (annual): AAPL vs MSFT"
    assert [(s.name, s.source_n) for s in chart.series] == [("AAPL", apple.n), ("MSFT", microsoft.n)]
    payloads = tool_payloads(events, "get_financial_statement")
    for series in chart.series:
        payload = payloads[series.name]
        [revenue] = [line["values"] for line in payload["lines"] if line["name"] == "TotalRevenue"]
        expected = [
            (period_label(date.fromisoformat(end), "annual"), value)
            for end, value in zip(payload["periods"], revenue, strict=True)
            if value is not None
        ]
        assert series.points == expected[::-1]  # oldest first
    assert chart.series[0].points[-1] == ("FY2024", 391_035e6)


# --- building charts: bounds, order, choice of lines --------------------------------------------------------


def history_finding(step_n: int, symbol: str, days: int) -> Finding:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    bars = [PriceBar(date=start + timedelta(days=i), close=100.0 + i) for i in range(days)]
    url = f"https://finance.yahoo.com/quote/{symbol}/history"
    history = PriceHistory(
        symbol=symbol, currency="USD", retrieved_at=MARKET_NOW, url=url, interval="1d", bars=bars, total_bars=days
    )
    step = PlannedStep(id=f"q{step_n}", question=f"{symbol} price", type="numerical", route="market_data")
    result = ToolResult(
        symbol=symbol, tool="get_price_history", data=history.model_dump(mode="json"), url=url, title=f"{symbol} history"
    )
    market = MarketDataFinding(tickers=[symbol], data="price_history", results=[result])
    return Finding(step=step, status="answered", route="market_data", market_data=market)


def test_a_long_series_is_bounded_keeping_its_first_and_last_point():
    finding = history_finding(1, "AAPL", 1000)
    sources = [Source(n=1, title="AAPL history", url="https://finance.yahoo.com/quote/AAPL/history", kind="market_data")]

    [chart] = charts_for([finding], sources)

    [series] = chart.series
    assert len(series.points) == MAX_POINTS
    assert series.points[0] == ("2024-01-01", 100.0) and series.points[-1] == ("2026-09-26", 1099.0)


def test_a_run_sends_at_most_a_few_charts_in_the_order_of_their_sources():
    symbols = ["A", "B", "C", "D", "E", "F"]
    findings = [history_finding(n, symbol, 5) for n, symbol in enumerate(symbols, start=1)]
    # numbered in reverse, as if the last sub-question's source came first
    sources = [
        Source(n=n, title=f"{symbol} history", url=f"https://finance.yahoo.com/quote/{symbol}/history", kind="market_data")
        for n, symbol in enumerate(reversed(symbols), start=1)
    ]

    charts = charts_for(findings, sources)

    assert len(charts) == MAX_CHARTS
    assert [(c.id, c.source_n, c.series[0].name) for c in charts] == [("c1", 1, "F"), ("c2", 2, "E"), ("c3", 3, "D"), ("c4", 4, "C")]
    assert all(isinstance(chart, ChartEvent) for chart in charts)


def test_a_payload_that_cannot_be_charted_is_logged_and_the_other_charts_still_go_out(caplog):
    broken = history_finding(1, "AAPL", 5)
    url = "https://finance.yahoo.com/quote/AAPL/history"
    broken.market_data.results[0] = ToolResult(
        symbol="AAPL", tool="get_price_history", data={"symbol": "AAPL", "url": url}, url=url, title="AAPL history"
    )
    sources = [
        Source(n=1, title="AAPL history", url=url, kind="market_data"),
        Source(n=2, title="MSFT history", url="https://finance.yahoo.com/quote/MSFT/history", kind="market_data"),
    ]

    charts = charts_for([broken, history_finding(2, "MSFT", 5)], sources)

    assert [(chart.id, chart.source_n) for chart in charts] == [("c1", 2)]
    [record] = [record for record in caplog.records if record.levelname == "ERROR"]
    assert "q1" in record.getMessage() and record.exc_info is not None


def test_prices_of_unknown_currency_never_share_a_chart():
    findings = [history_finding(1, "7203.T", 5), history_finding(2, "VOD.L", 5)]
    both = findings[0]
    both.market_data.results += findings[1].market_data.results
    for result in both.market_data.results:
        result.data["currency"] = None
    sources = [
        Source(n=n, title=f"{symbol} history", url=f"https://finance.yahoo.com/quote/{symbol}/history", kind="market_data")
        for n, symbol in enumerate(["7203.T", "VOD.L"], start=1)
    ]

    charts = charts_for([both], sources)

    assert [[series.name for series in chart.series] for chart in charts] == [["7203.T"], ["VOD.L"]]


def test_a_result_whose_source_is_not_listed_is_not_charted():
    assert charts_for([history_finding(1, "AAPL", 5)], []) == []


def test_statement_bars_skip_missing_values_and_are_labelled_by_calendar_quarter():
    url = "https://finance.yahoo.com/quote/AAPL/financials"
    statement = FinancialStatement(
        symbol="AAPL",
        currency="USD",
        retrieved_at=MARKET_NOW,
        url=url,
        statement="income",
        frequency="quarterly",
        periods=[date(2025, 3, 29), date(2024, 12, 28), date(2024, 9, 28)],
        lines=[StatementLine(name="NetIncome", values=[24_780e6, None, 14_736e6])],
    )
    result = ToolResult(symbol="AAPL", tool="get_financial_statement", data=statement.model_dump(mode="json"), url=url, title="t")
    step = PlannedStep(id="q1", question="Apple's quarterly net income", type="numerical", route="market_data")
    finding = Finding(
        step=step,
        status="answered",
        route="market_data",
        market_data=MarketDataFinding(tickers=["AAPL"], data="income_statement", results=[result]),
    )

    [chart] = charts_for([finding], [Source(n=1, title="t", url=url, kind="market_data")])

    assert chart.series[0].points == [("2024-Q3", 14_736e6), ("2025-Q1", 24_780e6)]
    assert chart.as_of == "2025-03-29"


def statement_finding(symbol: str, periods: list[date], values: list[float], **finding: object) -> Finding:
    """A sub-question about `symbol`'s quarterly revenue answered with these periods and values."""
    url = f"https://finance.yahoo.com/quote/{symbol}/financials"
    statement = FinancialStatement(
        symbol=symbol,
        currency="USD",
        retrieved_at=MARKET_NOW,
        url=url,
        statement="income",
        frequency="quarterly",
        periods=periods,
        lines=[StatementLine(name="TotalRevenue", values=values)],
    )
    result = ToolResult(symbol=symbol, tool="get_financial_statement", data=statement.model_dump(mode="json"), url=url, title="t")
    step = PlannedStep(id="q1", question=f"{symbol}'s quarterly revenue", type="numerical", route="market_data")
    market = MarketDataFinding(tickers=[symbol], data="income_statement", results=[result])
    return Finding(step=step, status="answered", route="market_data", market_data=market, **finding)


def test_fiscal_quarters_across_a_fiscal_year_are_charted_in_period_order_with_their_ends():
    # Microsoft's fiscal year ends in June: Q1 FY2027 is Jul-Sep 2026, after Q4 FY2026, though its label
    # sorts first.
    finding = statement_finding(
        "MSFT",
        [date(2026, 9, 30), date(2026, 6, 30), date(2026, 3, 31)],
        [80e9, 76e9, 70e9],
        fiscal_calendars={"MSFT": FiscalCalendar(year_end_month=6)},
    )
    url = "https://finance.yahoo.com/quote/MSFT/financials"

    [chart] = charts_for([finding], [Source(n=1, title="t", url=url, kind="market_data")])

    [series] = chart.series
    assert series.points == [
        ("Q3 FY2026 (Jan–Mar 2026)", 70e9),
        ("Q4 FY2026 (Apr–Jun 2026)", 76e9),
        ("Q1 FY2027 (Jul–Sep 2026)", 80e9),
    ]
    assert series.ends == ["2026-03-31", "2026-06-30", "2026-09-30"]
    assert chart.payload()["series"][0]["ends"] == series.ends, "the event carries them"


class RecordedIncomeStatements(FakeYahoo):
    """The fake Yahoo, except that AAPL's income statements are the replies Yahoo really sent (recorded by
    node-yahoo-finance2, ../shared/recorded/yahoo), read by the real yfinance."""

    RECORDED = {
        "income:quarterly": "node.fundamentalsTimeSeries-AAPL-financials-quarterly.json",
        "income:yearly": "node.fundamentalsTimeSeries-AAPL-financials-annual.json",
    }

    def _answer(self, url: str, symbol: str, endpoint: str, query: dict[str, str], body: Any) -> Response:
        if symbol == "AAPL" and endpoint in self.RECORDED:
            return _reply(url, 200, recorded_bytes("yahoo", "bodies", self.RECORDED[endpoint]).decode())
        return super()._answer(url, symbol, endpoint, query, body)


@requires_recorded
async def test_apples_recorded_quarters_across_its_fiscal_year_are_charted_oldest_first():
    adapter = YahooFinanceAdapter(RecordedIncomeStatements().ticker, cache=TTLCache(), now=lambda: MARKET_NOW)
    quarterly = await adapter.financial_statement("AAPL", "income", "quarterly")
    annual = await adapter.financial_statement("AAPL", "income", "annual")
    calendar = infer_calendar(annual.periods, quarterly.periods)
    assert calendar is not None and calendar.year_end_month == 9
    url = quarterly.url
    result = ToolResult(
        symbol="AAPL", tool="get_financial_statement", data=quarterly.model_dump(mode="json"), url=url, title="t"
    )
    step = PlannedStep(id="q1", question="Apple's quarterly revenue", type="numerical", route="market_data")
    market = MarketDataFinding(tickers=["AAPL"], data="income_statement", results=[result])
    finding = Finding(
        step=step, status="answered", route="market_data", market_data=market, fiscal_calendars={"AAPL": calendar}
    )

    [chart] = charts_for([finding], [Source(n=1, title="t", url=url, kind="market_data")])

    # Q1 FY2025 (Oct-Dec 2024) is Apple's newest quarter here, and its label sorts before the others.
    [series] = chart.series
    assert series.points == [
        ("Q2 FY2024 (Jan–Mar 2024)", 90_753e6),
        ("Q3 FY2024 (Apr–Jun 2024)", 85_777e6),
        ("Q4 FY2024 (Jul–Sep 2024)", 94_930e6),
        ("Q1 FY2025 (Oct–Dec 2024)", 124_300e6),
    ]
    assert series.ends == ["2024-03-31", "2024-06-30", "2024-09-30", "2024-12-31"]


def test_a_statements_periods_in_any_order_are_charted_oldest_first():
    finding = statement_finding("AAPL", [date(2024, 12, 28), date(2025, 3, 29), date(2024, 9, 28)], [124e9, 95e9, 94e9])
    url = "https://finance.yahoo.com/quote/AAPL/financials"

    [chart] = charts_for([finding], [Source(n=1, title="t", url=url, kind="market_data")])

    assert chart.series[0].points == [("2024-Q3", 94e9), ("2024-Q4", 124e9), ("2025-Q1", 95e9)]
    assert chart.series[0].ends == ["2024-09-28", "2024-12-28", "2025-03-29"]


def test_a_chart_stored_before_ends_were_sent_reads_back_as_it_was_stored():
    stored = {
        "id": "c1", "title": "t", "kind": "bars", "unit": "USD", "as_of": "2025-03-29", "source_n": 1,
        "series": [{"name": "AAPL", "source_n": 1, "points": [["2024-Q4", 1.0], ["2025-Q1", 2.0]]}],
    }  # fmt: skip

    chart = Chart.model_validate(stored)

    assert chart.series[0].ends is None
    assert chart.model_dump(mode="json") == stored


def test_a_series_needs_one_end_per_point():
    with pytest.raises(ValidationError, match="1 ends for 2 points"):
        ChartSeries(name="AAPL", source_n=1, points=[("2024-Q4", 1.0), ("2025-Q1", 2.0)], ends=["2024-12-28"])


def test_period_labels_name_fiscal_years_and_calendar_quarters():
    assert period_label(date(2024, 9, 28), "annual") == "FY2024"
    assert period_label(date(2025, 1, 26), "annual") == "FY2025"  # NVIDIA's fiscal 2025
    assert period_label(date(2025, 1, 3), "annual") == "FY2024"  # a 53-week year ending in early January
    assert period_label(date(2025, 1, 3), "quarterly") == "2024-Q4"
    assert period_label(date(2025, 6, 30), "quarterly") == "2025-Q2"
    assert period_label(date(2025, 3, 31), "ttm") == "TTM 2025-03-31"


def test_the_lines_charted_are_those_the_sub_question_names_or_else_the_headline():
    income = {"TotalRevenue", "GrossProfit", "NetIncome", "DilutedEPS"}
    assert lines_asked("Apple's revenue and net income in 2024", "income", income) == ["NetIncome", "TotalRevenue"]
    assert lines_asked("Apple's gross profit", "income", income) == ["GrossProfit"]
    assert lines_asked("Apple's earnings per share", "income", income) == ["DilutedEPS"]
    assert lines_asked("How is Apple doing?", "income", income) == ["TotalRevenue"]
    assert lines_asked("Apple's free cash flow", "cash_flow", {"FreeCashFlow", "OperatingCashFlow"}) == ["FreeCashFlow"]
    assert lines_asked("Apple's EBITDA", "income", income) == ["TotalRevenue"]  # not in the statement: the headline
