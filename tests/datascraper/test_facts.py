"""Figures computed from market data: growth, changes, CAGR, margins, ratios and comparisons, each with its
inputs; zero and negative bases; what a sub-question asks for; and the bound.

Expected values are computed by hand from the inputs (the arithmetic is in the comments), not by the code
under test.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from datascraper.market_data.finding_schemas import MarketDataFinding, ToolResult
from datascraper.market_data.schemas import PriceBar, PriceHistory
from datascraper.market_data.statement_schemas import Earnings, EarningsEvent, FinancialStatement, StatementLine
from datascraper.research_engine.facts import MAX_FACTS, compute_facts, shown
from datascraper.schemas import Fact
from tests.datascraper.research_support import (
    answer_text,
    gaps,
    is_synthesis,
    of_type,
    requests_of,
    run,
    script_analysis,
    script_gaps,
    script_synthesis,
    sub,
    summary_of,
)

FETCHED = datetime(2025, 6, 13, 20, 0, tzinfo=UTC)
YEARS = ("2024-09-30", "2023-09-30", "2022-09-30", "2021-09-30")
B = 1e9


def statement(
    lines: dict[str, list[float | None]],
    *,
    periods: tuple[str, ...] = YEARS,
    frequency: str = "annual",
    kind: str = "income",
    symbol: str = "AAPL",
    currency: str | None = "USD",
) -> ToolResult:
    data = FinancialStatement(
        symbol=symbol,
        currency=currency,
        as_of=datetime.fromisoformat(periods[0]).replace(tzinfo=UTC),
        retrieved_at=FETCHED,
        url=f"https://finance.yahoo.com/quote/{symbol}/financials?{kind}-{frequency}",
        statement=kind,
        frequency=frequency,
        periods=[date.fromisoformat(p) for p in periods],
        lines=[StatementLine(name=name, values=values) for name, values in lines.items()],
    )
    return ToolResult(
        symbol=symbol,
        tool="get_financial_statement",
        data=data.model_dump(mode="json"),
        url=data.url,
        title=f"Yahoo Finance — {symbol} {kind} ({frequency})",
    )


def facts_for(question: str, *results: ToolResult) -> list[Fact]:
    return compute_facts([MarketDataFinding(tickers=[r.symbol for r in results], data="income_statement",
                                            question=question, results=list(results))])


def one(facts: list[Fact], label_part: str) -> Fact:
    [fact] = [fact for fact in facts if label_part in fact.label]
    return fact


# --- growth, change and CAGR -------------------------------------------------------------------------


def test_an_annual_line_gives_growth_per_year_the_newest_change_and_the_cagr_by_hand():
    revenue = [391_035e6, 383_285e6, 394_328e6, 365_817e6]
    result = statement({"TotalRevenue": revenue, "NetIncome": [93_736e6, 96_995e6, 99_803e6, 94_680e6]})

    facts = facts_for("What was Apple's revenue in fiscal 2021-2024?", result)

    assert [(f.id, f.kind) for f in facts] == [
        ("F1", "growth"), ("F2", "change"), ("F3", "growth"), ("F4", "growth"), ("F5", "cagr"),
    ]  # revenue only: the question names no other line
    growth = facts[0]
    assert growth.value == pytest.approx(2.021994, abs=1e-6)  # (391,035 - 383,285) / 383,285 x 100
    assert growth.unit == "percent"
    assert growth.label == "AAPL Total Revenue growth, FY ending 2024-09-30 vs FY ending 2023-09-30"
    assert [(i.symbol, i.line, i.period, i.value) for i in growth.inputs] == [
        ("AAPL", "TotalRevenue", "2024-09-30", 391_035e6),
        ("AAPL", "TotalRevenue", "2023-09-30", 383_285e6),
    ]
    assert {(i.source.title, i.source.url) for i in growth.inputs} == {(result.title, result.url)}
    assert "391.04B - 383.29B" in growth.formula
    assert (facts[1].value, facts[1].unit) == (7_750e6, "USD")  # 391,035 - 383,285 million
    assert facts[2].value == pytest.approx(-2.800461, abs=1e-6)  # (383,285 - 394,328) / 394,328 x 100
    assert facts[3].value == pytest.approx(7.793788, abs=1e-6)  # (394,328 - 365,817) / 365,817 x 100
    assert facts[4].value == pytest.approx(2.247002, abs=1e-6)  # ((391,035 / 365,817) ^ (1/3) - 1) x 100
    assert "over 3 years" in facts[4].formula
    assert [shown(f) for f in facts[:2]] == ["+2.02%", "+7.75B USD"]


def test_growth_from_a_negative_base_is_not_a_percentage_but_the_change_in_amount_is_given():
    result = statement({"NetIncome": [30e6, -50e6]}, periods=YEARS[:2])

    facts = facts_for("Apple net income?", result)

    growth, change = facts
    assert growth.value is None and "negative" in growth.note
    assert shown(growth) == "not meaningful"
    assert change.value == 80e6  # 30 - (-50) million


def test_a_loss_that_narrows_is_a_change_not_a_growth_rate():
    growth, change = facts_for("net income", statement({"NetIncome": [-5e6, -10e6]}, periods=YEARS[:2]))

    assert growth.value is None and "negative" in growth.note
    assert change.value == 5e6


def test_growth_into_a_loss_from_a_positive_base_is_reported():
    growth, _ = facts_for("net income", statement({"NetIncome": [-10e6, 5e6]}, periods=YEARS[:2]))

    assert growth.value == pytest.approx(-300.0)  # (-10 - 5) / 5 x 100


def test_a_zero_base_gives_no_growth_figure_and_says_why():
    facts = facts_for("revenue", statement({"TotalRevenue": [100e6, 0.0, 0.0]}, periods=YEARS[:3]))

    growth, change, older, cagr = facts
    assert growth.value is None and growth.note == "no growth figure: the base is zero"
    assert change.value == 100e6
    assert older.value is None  # 0 -> 0
    assert cagr.value is None and "positive" in cagr.note


def test_missing_values_are_skipped_not_guessed():
    facts = facts_for("revenue", statement({"TotalRevenue": [100e6, None, 80e6]}, periods=YEARS[:3]))

    [cagr] = facts  # no pair of adjacent years has both values; the span does
    assert cagr.kind == "cagr"
    assert cagr.value == pytest.approx(11.803399, abs=1e-6)  # ((100 / 80) ^ (1/2) - 1) x 100


def test_a_quarterly_statement_gives_quarter_over_quarter_and_year_over_year_growth():
    # Apple's fiscal quarters end on the last Saturday of the quarter: a year earlier is not the same day.
    quarters = ("2025-03-29", "2024-12-28", "2024-09-28", "2024-06-29", "2024-03-30")
    result = statement({"TotalRevenue": [95_359e6, 124_300e6, 94_930e6, 85_777e6, 90_753e6]},
                       periods=quarters, frequency="quarterly")

    facts = facts_for("Apple revenue growth over the last quarters", result)

    assert [f.kind for f in facts] == ["growth", "change", "yoy_growth", "growth", "growth", "growth"]
    yoy = facts[2]
    assert yoy.value == pytest.approx(5.075314, abs=1e-6)  # (95,359 - 90,753) / 90,753 x 100
    assert [i.period for i in yoy.inputs] == ["2025-03-29", "2024-03-30"]
    assert facts[0].label == "AAPL Total Revenue growth, quarter ending 2025-03-29 vs quarter ending 2024-12-28"
    assert all(f.kind != "cagr" for f in facts)


# --- the periods asked, and the bases of their growth ---------------------------------------------------------

# Apple's fiscal quarters, newest first (USD million): seven of them, as a long Yahoo table might hold.
APPLE_QUARTERS = {
    "2025-03-29": 95_359, "2024-12-28": 124_300, "2024-09-28": 94_930, "2024-06-29": 85_777,
    "2024-03-30": 90_753, "2023-12-30": 119_575, "2023-09-30": 89_498, "2023-07-01": 81_797,
}  # fmt: skip


def fetched_statement(periods: dict[str, float], *, frequency: str, asked: int, **lines: list[float]) -> ToolResult:
    """A statement of every period in `periods`, cut as the router cuts it to the newest `asked`."""
    full = statement({"TotalRevenue": [v * 1e6 for v in periods.values()], **lines}, periods=tuple(periods),
                     frequency=frequency).result()
    cut = full.covering(count=asked, start=None, end=None)
    return ToolResult(symbol="AAPL", tool="get_financial_statement", data=cut.model_dump(mode="json"), url=cut.url,
                      title="Yahoo Finance — AAPL income statement")


def test_three_quarters_asked_keep_the_bases_of_their_growth_up_to_a_year_before_the_oldest():
    cut = fetched_statement(APPLE_QUARTERS, frequency="quarterly", asked=3).result()

    assert cut.asked == 3
    assert [p.isoformat() for p in cut.asked_periods] == ["2025-03-29", "2024-12-28", "2024-09-28"]
    # 2023-09-30 ends 364 days before 2024-09-28 (the same quarter a year earlier); 2023-07-01, 455 days
    assert [p.isoformat() for p in cut.periods[3:]] == ["2024-06-29", "2024-03-30", "2023-12-30", "2023-09-30"]
    assert cut.as_of == datetime(2025, 3, 29, tzinfo=UTC)
    assert "periods ending 2025-03-29, 2024-12-28, 2024-09-28; then, not asked for and given only as growth " \
           "bases, 2024-06-29, 2024-03-30, 2023-12-30, 2023-09-30" in cut.summary_text()


def test_each_quarter_asked_gets_its_quarter_over_quarter_and_year_over_year_growth():
    facts = facts_for("Apple revenue growth over the last 3 quarters",
                      fetched_statement(APPLE_QUARTERS, frequency="quarterly", asked=3))

    growth = {(f.kind, tuple(i.period for i in f.inputs)): f.value for f in facts if f.kind != "change"}
    assert growth == {
        ("growth", ("2025-03-29", "2024-12-28")): pytest.approx(-23.283186, abs=1e-6),  # (95,359 - 124,300) / 124,300
        ("yoy_growth", ("2025-03-29", "2024-03-30")): pytest.approx(5.075314, abs=1e-6),  # (95,359 - 90,753) / 90,753
        ("growth", ("2024-12-28", "2024-09-28")): pytest.approx(30.938586, abs=1e-6),  # (124,300 - 94,930) / 94,930
        ("yoy_growth", ("2024-12-28", "2023-12-30")): pytest.approx(3.951495, abs=1e-6),  # (124,300 - 119,575) / 119,575
        ("growth", ("2024-09-28", "2024-06-29")): pytest.approx(10.670693, abs=1e-6),  # (94,930 - 85,777) / 85,777
        ("yoy_growth", ("2024-09-28", "2023-09-30")): pytest.approx(6.069409, abs=1e-6),  # (94,930 - 89,498) / 89,498
    }  # and nothing for a base period: 2024-06-29 is not asked for
    [change] = [f for f in facts if f.kind == "change"]
    assert change.value == -28_941e6  # 95,359 - 124,300 million: the newest quarter only
    assert one(facts, "vs quarter ending 2023-12-30").label == (
        "AAPL Total Revenue year over year, quarter ending 2024-12-28 vs quarter ending 2023-12-30"
    )


def test_a_year_earlier_quarter_the_table_does_not_reach_gives_no_year_over_year_figure():
    # Five quarters, as Yahoo often gives: the newest quarter has its year-earlier base, the next does not.
    five = dict(list(APPLE_QUARTERS.items())[:5])

    facts = facts_for("revenue", fetched_statement(five, frequency="quarterly", asked=3))

    assert [tuple(i.period for i in f.inputs) for f in facts if f.kind == "yoy_growth"] == [("2025-03-29", "2024-03-30")]
    assert len([f for f in facts if f.kind == "growth"]) == 3


def test_a_quarter_missing_from_the_table_is_no_base_for_the_one_after_it():
    result = statement({"TotalRevenue": [95_359e6, 94_930e6]}, periods=("2025-03-29", "2024-09-28"),
                       frequency="quarterly")

    assert facts_for("revenue", result) == []  # six months apart: not quarter over quarter


def test_years_asked_get_a_growth_each_and_a_cagr_from_the_year_before_the_oldest():
    four_years = {"2024-09-30": 391_035, "2023-09-30": 383_285, "2022-09-30": 394_328, "2021-09-30": 365_817}

    facts = facts_for("Apple revenue over the last 2 years", fetched_statement(four_years, frequency="annual", asked=2))

    assert [(f.kind, [i.period for i in f.inputs]) for f in facts] == [
        ("growth", ["2024-09-30", "2023-09-30"]),
        ("change", ["2024-09-30", "2023-09-30"]),
        ("growth", ["2023-09-30", "2022-09-30"]),  # FY2022 is kept as FY2023's base, not asked for
        ("cagr", ["2024-09-30", "2022-09-30"]),
    ]
    assert facts[2].value == pytest.approx(-2.800461, abs=1e-6)  # (383,285 - 394,328) / 394,328 x 100
    assert facts[3].value == pytest.approx(-0.418421, abs=1e-6)  # ((391,035 / 394,328) ^ (1/2) - 1) x 100
    assert "over 2 years" in facts[3].formula


def test_margins_are_computed_for_the_periods_asked_only():
    quarters = dict(list(APPLE_QUARTERS.items())[:2])
    result = fetched_statement(quarters, frequency="quarterly", asked=1, NetIncome=[24_780e6, 36_330e6])

    margins = [f for f in facts_for("Apple's net margin", result) if f.kind == "margin"]

    assert [(f.label, f.value) for f in margins] == [
        ("AAPL net margin, quarter ending 2025-03-29", pytest.approx(25.986011, abs=1e-6)),  # 24,780 / 95,359 x 100
    ]


# --- margins, ratios, outflows ------------------------------------------------------------------------------


def test_margins_are_computed_when_asked_and_only_those_named():
    lines = {
        "TotalRevenue": [391_035e6, 383_285e6],
        "GrossProfit": [180_683e6, 169_148e6],
        "OperatingIncome": [123_216e6, 114_301e6],
        "NetIncome": [93_736e6, 96_995e6],
    }

    every = [f for f in facts_for("Apple's margins", statement(lines, periods=YEARS[:2])) if f.kind == "margin"]
    gross_only = [
        f for f in facts_for("Apple's gross margin", statement(lines, periods=YEARS[:2])) if f.kind == "margin"
    ]

    newest = {f.label: f.value for f in every if "2024" in f.label}
    assert newest == {
        "AAPL gross margin, FY ending 2024-09-30": pytest.approx(46.206350, abs=1e-6),  # 180,683 / 391,035
        "AAPL operating margin, FY ending 2024-09-30": pytest.approx(31.510223, abs=1e-6),  # 123,216 / 391,035
        "AAPL net margin, FY ending 2024-09-30": pytest.approx(23.971256, abs=1e-6),  # 93,736 / 391,035
    }
    assert {f.label.split(",")[0] for f in gross_only} == {"AAPL gross margin"}
    assert shown(every[0]) == "46.21%"


def test_a_margin_on_zero_revenue_is_not_meaningful():
    [margin] = [f for f in facts_for("net margin", statement({"TotalRevenue": [0.0], "NetIncome": [-5e6]},
                                                             periods=YEARS[:1])) if f.kind == "margin"]

    assert margin.value is None and "revenue is zero" in margin.note


def test_balance_sheet_ratios_and_negative_equity():
    result = statement({"TotalDebt": [106_629e6, 111_088e6], "StockholdersEquity": [56_950e6, -1e9]},
                       periods=YEARS[:2], kind="balance")

    ratios = [f for f in facts_for("How leveraged is Apple?", result) if f.kind == "ratio"]

    newest, older = ratios
    assert newest.value == pytest.approx(1.872327, abs=1e-6)  # 106,629 / 56,950
    assert (newest.unit, shown(newest)) == ("ratio", "1.87x")
    assert older.value is None and "negative" in older.note


def test_cash_outflows_are_compared_as_amounts_spent():
    result = statement({"CapitalExpenditure": [-9_447e6, -10_959e6]}, periods=YEARS[:2], kind="cash_flow")

    growth, change = facts_for("Apple capex", result)

    assert growth.value == pytest.approx(-13.796879, abs=1e-6)  # (9,447 - 10,959) / 10,959 x 100
    assert change.value == -1_512e6
    assert [i.value for i in growth.inputs] == [-9_447e6, -10_959e6]  # as the statement gives them
    assert "amount spent" in growth.label


# --- across symbols ----------------------------------------------------------------------------------------


def test_two_companies_are_compared_in_percentage_points_and_in_amounts_of_one_currency():
    apple = statement({"TotalRevenue": [391_035e6, 383_285e6]}, periods=YEARS[:2])
    microsoft = statement({"TotalRevenue": [245_122e6, 211_915e6]}, periods=("2024-06-30", "2023-06-30"), symbol="MSFT")
    toyota = statement({"TotalRevenue": [48_036e9, 45_095e9]}, periods=("2025-03-31", "2024-03-31"),
                       symbol="7203.T", currency="JPY")
    findings = [
        MarketDataFinding(tickers=[r.symbol], data="income_statement", question="revenue", results=[r])
        for r in (apple, microsoft, toyota)
    ]

    facts = compute_facts(findings)

    growth_gap = one(facts, "AAPL minus MSFT: Total Revenue growth")
    # 2.021994 - (245,122 - 211,915) / 211,915 x 100 = 2.021994 - 15.669962
    assert growth_gap.value == pytest.approx(-13.647968, abs=1e-5)
    assert growth_gap.unit == "percentage points"
    assert [(i.symbol, i.period) for i in growth_gap.inputs] == [
        ("AAPL", "2024-09-30"), ("AAPL", "2023-09-30"), ("MSFT", "2024-06-30"), ("MSFT", "2023-06-30"),
    ]
    amount_gap = one(facts, "AAPL minus MSFT: Total Revenue, latest")
    assert (amount_gap.value, amount_gap.unit) == (145_913e6, "USD")  # 391,035 - 245,122 million
    assert one(facts, "AAPL minus 7203.T: Total Revenue growth").unit == "percentage points"
    assert not [f for f in facts if "7203.T: Total Revenue, latest" in f.label]  # USD and JPY: no difference


def test_amounts_of_unknown_currency_are_labelled_so_and_never_compared():
    apple = statement({"TotalRevenue": [391_035e6, 383_285e6]}, periods=YEARS[:2])
    toyota = statement({"TotalRevenue": [48_036e9, 45_095e9]}, periods=("2025-03-31", "2024-03-31"),
                       symbol="7203.T", currency=None)
    vodafone = statement({"TotalRevenue": [37_448e6, 36_717e6]}, periods=("2025-03-31", "2024-03-31"),
                         symbol="VOD.L", currency=None)
    findings = [
        MarketDataFinding(tickers=[r.symbol], data="income_statement", question="revenue", results=[r])
        for r in (apple, toyota, vodafone)
    ]

    facts = compute_facts(findings)

    assert one(facts, "7203.T Total Revenue change").unit == "currency unknown"
    assert one(facts, "AAPL minus 7203.T: Total Revenue growth").unit == "percentage points"
    # Yen and pounds, both unknown: their difference would mean nothing.
    assert not [f for f in facts if "minus" in f.label and "Total Revenue, latest" in f.label]


# --- earnings and prices ------------------------------------------------------------------------------------


def test_earnings_give_the_surprise_and_eps_a_year_earlier():
    def report(day: str, reported: float, estimate: float) -> EarningsEvent:
        return EarningsEvent(date=datetime.fromisoformat(day).replace(tzinfo=UTC), eps_reported=reported,
                             eps_estimate=estimate)

    data = Earnings(
        symbol="AAPL", currency="USD", retrieved_at=FETCHED, url="https://finance.yahoo.com/quote/AAPL/analysis",
        upcoming=[],
        reported=[report("2025-05-01", 1.65, 1.63), report("2025-01-30", 2.40, 2.35), report("2024-10-31", 1.64, 1.60),
                  report("2024-08-01", 1.40, 1.35), report("2024-05-02", 1.53, 1.50)],
    )
    result = ToolResult(symbol="AAPL", tool="get_earnings", data=data.model_dump(mode="json"), url=data.url,
                        title="Yahoo Finance — AAPL earnings")

    facts = compute_facts([MarketDataFinding(tickers=["AAPL"], data="earnings", results=[result])])

    surprise, yoy = facts[:2]
    assert (surprise.kind, surprise.value, surprise.unit) == ("difference", 0.02, "USD")  # 1.65 - 1.63
    assert yoy.value == pytest.approx(7.843137, abs=1e-6)  # (1.65 - 1.53) / 1.53 x 100
    assert [i.period for i in yoy.inputs] == ["2025-05-01", "2024-05-02"]
    # every report asked has its surprise; only the newest has a report a year earlier in the data
    assert [(f.kind, f.inputs[0].period) for f in facts[2:]] == [
        ("difference", "2025-01-30"), ("difference", "2024-10-31"), ("difference", "2024-08-01"),
    ]


def test_two_reports_asked_keep_the_reports_a_year_earlier_for_their_growth():
    def report(day: str, reported: float, estimate: float) -> EarningsEvent:
        return EarningsEvent(date=datetime.fromisoformat(day).replace(tzinfo=UTC), eps_reported=reported,
                             eps_estimate=estimate)

    full = Earnings(
        symbol="AAPL", currency="USD", retrieved_at=FETCHED, url="https://finance.yahoo.com/quote/AAPL/analysis",
        upcoming=[],
        reported=[report("2025-05-01", 1.65, 1.63), report("2025-01-30", 2.40, 2.35), report("2024-10-31", 1.64, 1.60),
                  report("2024-08-01", 1.40, 1.35), report("2024-05-02", 1.53, 1.50), report("2024-02-01", 2.18, 2.10),
                  report("2023-11-02", 1.46, 1.39)],
    )
    cut = full.covering(count=2, start=None, end=None)
    result = ToolResult(symbol="AAPL", tool="get_earnings", data=cut.model_dump(mode="json"), url=cut.url,
                        title="Yahoo Finance — AAPL earnings")

    facts = compute_facts([MarketDataFinding(tickers=["AAPL"], data="earnings", results=[result])])

    # 2024-02-01 is 364 days before 2025-01-30, the oldest report asked; 2023-11-02, 455 days
    assert (cut.asked, [e.date.date().isoformat() for e in cut.reported][-1]) == (2, "2024-02-01")
    assert [(f.kind, [i.period for i in f.inputs], f.value) for f in facts] == [
        ("difference", ["2025-05-01", "2025-05-01"], 0.02),  # 1.65 - 1.63
        ("yoy_growth", ["2025-05-01", "2024-05-02"], pytest.approx(7.843137, abs=1e-6)),  # (1.65 - 1.53) / 1.53
        ("difference", ["2025-01-30", "2025-01-30"], 0.05),  # 2.40 - 2.35
        ("yoy_growth", ["2025-01-30", "2024-02-01"], pytest.approx(10.091743, abs=1e-6)),  # (2.40 - 2.18) / 2.18
    ]
    assert "reported 2024-10-31 (not asked for; a growth base)" in cut.summary_text()


def test_a_price_history_gives_the_change_over_its_range():
    bars = [PriceBar(date=datetime(2025, 5, day, tzinfo=UTC), close=close)
            for day, close in ((14, 190.0), (15, None), (16, 196.45))]
    data = PriceHistory(symbol="AAPL", currency="USD", retrieved_at=FETCHED, interval="1d", bars=bars, total_bars=3,
                        url="https://finance.yahoo.com/quote/AAPL/history")
    result = ToolResult(symbol="AAPL", tool="get_price_history", data=data.model_dump(mode="json"), url=data.url,
                        title="Yahoo Finance — AAPL price history")

    [change] = compute_facts([MarketDataFinding(tickers=["AAPL"], data="price_history", results=[result])])

    assert change.value == pytest.approx(3.394737, abs=1e-6)  # (196.45 - 190) / 190 x 100
    assert change.label == "AAPL closing price change, 2025-05-14 to 2025-05-16"


# --- bounded and relevant -----------------------------------------------------------------------------------


def test_the_same_data_fetched_twice_gives_its_facts_once():
    result = statement({"TotalRevenue": [391_035e6, 383_285e6]}, periods=YEARS[:2])
    finding = MarketDataFinding(tickers=["AAPL"], data="income_statement", question="revenue", results=[result])

    assert len(compute_facts([finding, finding])) == 2


def test_a_run_keeps_at_most_max_facts_the_comparisons_and_newest_growth_first():
    names = ("TotalRevenue", "NetIncome", "GrossProfit", "OperatingIncome")
    lines = {name: [5e9, 4e9, 3e9, 2e9, 1e9] for name in names}
    periods = ("2024-12-31", "2023-12-31", "2022-12-31", "2021-12-31", "2020-12-31")
    findings = [
        MarketDataFinding(tickers=[symbol], data="income_statement", question="revenue, net income and margins",
                          results=[statement(lines, periods=periods, symbol=symbol)])
        for symbol in ("AAPL", "MSFT", "GOOGL", "AMZN", "META", "NVDA")
    ]

    facts = compute_facts(findings)

    assert len(facts) == MAX_FACTS
    assert [f.id for f in facts] == [f"F{n}" for n in range(1, MAX_FACTS + 1)]
    assert any(f.label.startswith("AAPL minus MSFT: Total Revenue growth") for f in facts)
    assert {f.label for f in facts if "growth, FY ending 2024-12-31" in f.label} >= {
        f"{symbol} Total Revenue growth, FY ending 2024-12-31 vs FY ending 2023-12-31" for symbol in ("AAPL", "NVDA")
    }
    assert not [f for f in facts if "2021-12-31 vs" in f.label]  # older years are the first to go


# --- in a run: the facts reach the answer, the number check and the summary -------------------------------

APPLE_REVENUE = sub("What was Apple's annual revenue in fiscal 2021-2024?", "numerical", ["AAPL"], "income_statement")
MICROSOFT_REVENUE = sub(
    "What was Microsoft's annual revenue in fiscal 2021-2024?", "numerical", ["MSFT"], "income_statement"
)
# The fiscal years are named on Apple's calendar, which its annual statement shows (years ending in September).
APPLE_GROWTH_LINE = (
    "F1: AAPL Total Revenue growth, FY2024 (Oct 2023–Sep 2024, ended 2024-09-28) vs FY2023 (Oct 2022–Sep 2023, "
    "ended 2023-09-30) = +2.02% "
    "((current - base) / base x 100 = (391.04B - 383.29B) / 383.29B x 100) [1]"
)


def script_revenue_research(fake_openai, research_env, *answer: str) -> None:
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, APPLE_REVENUE, MICROSOFT_REVENUE, sub("Which grew faster?", "analytical"))
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, *answer)


async def test_a_growth_rate_the_answer_quotes_from_the_facts_counts_as_matched_and_keeps_its_inputs(
    fake_openai, market_data, research_env
):
    script_revenue_research(
        fake_openai, research_env, "Apple's revenue grew 2.0% in fiscal 2024, to $391.04 billion [1]."
    )

    events = await run("Compare Apple and Microsoft revenue growth", mode="research")

    [synthesis] = requests_of(fake_openai, is_synthesis)
    assert "### Computed figures" in synthesis.input_text
    assert APPLE_GROWTH_LINE in synthesis.input_text
    assert "AAPL minus MSFT: Total Revenue growth, latest annual period" in synthesis.input_text
    assert "Computed figures" in synthesis.instructions
    summary = summary_of(events)
    assert summary.signals["numbers"] == {"checked": 2, "computed": 1, "unmatched": 0, "unmatched_values": []}
    growth = next(f for f in summary.facts if f.id == "F1")
    assert growth.value == pytest.approx(2.021994, abs=1e-6)  # (391,035 - 383,285) / 383,285 x 100
    assert [(i.symbol, i.line, i.period, i.value, i.source.n) for i in growth.inputs] == [
        ("AAPL", "TotalRevenue", "2024-09-28", 391_035e6, 1),
        ("AAPL", "TotalRevenue", "2023-09-30", 383_285e6, 1),
    ]
    [source] = [s for s in of_type(events, "sources")[-1].sources if s.n == 1]
    assert (source.kind, source.url) == ("market_data", growth.inputs[0].source.url)
    assert "Note:" not in answer_text(events)


async def test_a_number_cited_to_market_data_that_nothing_computed_is_flagged_under_the_answer_and_in_the_signals(
    fake_openai, market_data, research_env
):
    script_revenue_research(fake_openai, research_env, "Apple's revenue grew 12.3% in fiscal 2024 [1].")

    events = await run("Compare Apple and Microsoft revenue growth", mode="research")

    note = "\n\nNote: 12.3% [1] could not be traced to the market data cited; check them against the sources."
    deltas = of_type(events, "delta")
    assert deltas[-1].text == note  # after the answer, before the sources
    assert [e.type for e in events].index("delta") < [e.type for e in events].index("sources")
    assert answer_text(events) == "Apple's revenue grew 12.3% in fiscal 2024 [1]." + note
    summary = summary_of(events)
    assert summary.answer.endswith(note)
    assert summary.signals["numbers"]["unmatched_values"] == [{"value": "12.3%", "sources": [1]}]
    assert summary.signals["citations"]["markers"] == 1  # the note's marker is not counted again


def test_a_payload_that_does_not_fit_its_model_costs_its_own_facts_only(caplog):
    broken = ToolResult(symbol="MSFT", tool="get_financial_statement", data={"symbol": "MSFT"},
                        url="https://finance.yahoo.com/quote/MSFT/financials", title="Yahoo Finance — MSFT income")
    apple = statement({"TotalRevenue": [391_035e6, 383_285e6]}, periods=YEARS[:2])

    facts = facts_for("revenue", broken, apple)

    assert [f.inputs[0].symbol for f in facts] == ["AAPL", "AAPL"]
    assert any("No facts computed from Yahoo Finance — MSFT income" in r.getMessage() for r in caplog.records)
