"""Exact market data: each figure is the one Yahoo reports for what was asked (issue 19).

Every test runs the real yfinance against canned Yahoo replies (tests/fakes/yfinance.py); each one failed
on the adapter that read `fast_info`, adjusted closes and hidden yfinance errors.
"""

from __future__ import annotations

from datetime import date, timedelta

import pandas as pd
import pytest

from datascraper.cache import MemoryCacheStore, TTLCache
from datascraper.market_data.errors import MarketDataRateLimited, MarketDataUpstreamError
from datascraper.market_data.values import main_unit
from datascraper.market_data.yahoo import FUNDAMENTALS_TTL_S, YahooFinanceAdapter
from datascraper.query_analyzer import match_fast_path
from tests.fakes import yahoo_replies
from tests.fakes.yahoo_listings import listing
from tests.fakes.yfinance import FakeYahoo


async def test_a_quotes_change_is_measured_from_the_official_close_not_after_hours(
    adapter: YahooFinanceAdapter, fake_yahoo: FakeYahoo
) -> None:
    official = yahoo_replies.quote_fields(listing("AAPL"))["regularMarketPreviousClose"]
    after_hours = fake_yahoo.ticker("AAPL").fast_info.previous_close  # the last trade, post-market included

    quote = await adapter.quote("AAPL")

    assert after_hours != pytest.approx(official, rel=1e-3)
    assert quote.previous_close == pytest.approx(official)
    assert quote.change == pytest.approx(196.45 - official)
    assert "regularMarketPreviousClose" in (quote.previous_close_basis or "")


async def test_a_past_close_is_the_traded_price_and_the_adjusted_one_is_labelled_apart(
    adapter: YahooFinanceAdapter,
) -> None:
    day = date(2024, 3, 15)
    traded = listing("AAPL").closes(pd.DatetimeIndex([pd.Timestamp(day)]))[0]

    history = await adapter.price_history("AAPL", start=day, end=day)

    [bar] = history.bars
    assert bar.close == pytest.approx(traded, abs=1e-3)
    assert bar.adj_close is not None and bar.adj_close < bar.close  # dividends paid since lower it


async def test_an_empty_upgrade_history_leaves_the_trend_and_targets(adapter: YahooFinanceAdapter) -> None:
    ratings = await adapter.analyst_ratings("NORATE")

    assert ratings.trend and ratings.trend[0].buy == 21
    assert ratings.price_target is not None and ratings.price_target.mean is not None
    assert ratings.recent_changes == []
    assert ratings.notes == ["Yahoo Finance has no upgrade and downgrade history for NORATE."]


async def test_a_429_on_statements_is_rate_limited_not_no_data(adapter: YahooFinanceAdapter) -> None:
    with pytest.raises(MarketDataRateLimited):
        await adapter.financial_statement("LIMIT", "income")


async def test_a_broken_connection_on_statements_is_an_upstream_error_not_no_data(
    adapter: YahooFinanceAdapter,
) -> None:
    with pytest.raises(MarketDataUpstreamError):
        await adapter.financial_statement("BOOM", "balance")


async def test_yfinances_own_cache_does_not_answer_after_ours_expires(fake_yahoo: FakeYahoo) -> None:
    clock = Clock()
    adapter = YahooFinanceAdapter(fake_yahoo.ticker, cache=TTLCache(MemoryCacheStore(clock=clock)), timeout_s=5)

    await adapter.financial_statement("AAPL", "income")
    clock.now += FUNDAMENTALS_TTL_S
    await adapter.financial_statement("AAPL", "income")

    assert fake_yahoo.upstream_calls("AAPL", "income:yearly") == 2


async def test_a_london_price_in_pence_is_given_in_pounds_and_its_market_cap_is_not_100x(
    adapter: YahooFinanceAdapter,
) -> None:
    quote = await adapter.quote("VOD.L")
    history = await adapter.price_history("VOD.L", period="5d")
    profile = await adapter.company_profile("VOD.L")

    assert quote.currency == "GBP" and quote.price == pytest.approx(0.725)
    assert quote.market_cap == pytest.approx(0.725 * 25.2e9)
    assert (profile.currency, profile.market_cap) == ("GBP", pytest.approx(0.725 * 25.2e9))
    assert history.currency == "GBP" and history.last_close == pytest.approx(0.725, rel=1e-4)
    assert any("GBP" in note for note in quote.notes + history.notes)


@pytest.mark.parametrize(
    ("quoted", "main"), [("GBp", ("GBP", 100.0)), ("ZAc", ("ZAR", 100.0)), ("ILA", ("ILS", 100.0)), ("USD", ("USD", 1.0))]
)
def test_sub_unit_currencies_are_hundredths_of_their_main_unit(quoted: str, main: tuple[str, float]) -> None:
    assert main_unit(quoted) == main


async def test_a_tokyo_listing_keeps_its_yen_and_its_trading_days(adapter: YahooFinanceAdapter) -> None:
    quote = await adapter.quote("7203.T")
    history = await adapter.price_history("7203.T", period="5d")

    assert quote.currency == "JPY" and quote.price == pytest.approx(2_650.5)
    assert history.currency == "JPY"
    assert history.bars[-1].date.date() == date(2025, 6, 13)
    assert history.bars[-1].date.utcoffset() == timedelta(hours=9)  # Tokyo's trading day, not New York's


async def test_a_long_balance_sheet_keeps_the_lines_the_ratios_need(adapter: YahooFinanceAdapter) -> None:
    sheet = await adapter.financial_statement("MSFT", "balance")

    names = [line.name for line in sheet.lines]
    assert len(names) == 80
    for needed in ("TotalDebt", "StockholdersEquity", "CashAndCashEquivalents", "CurrentAssets", "CurrentLiabilities"):
        assert needed in names
    assert any("key lines" in note for note in sheet.notes)


async def test_statement_columns_are_fiscal_period_ends(adapter: YahooFinanceAdapter) -> None:
    nvda = await adapter.financial_statement("NVDA", "income", "quarterly")
    msft = await adapter.financial_statement("MSFT", "income")

    assert date(2024, 10, 27) in nvda.periods  # Q3 of NVIDIA's fiscal 2025
    revenue = next(line for line in nvda.lines if line.name == "TotalRevenue")
    assert revenue.values[nvda.periods.index(date(2024, 10, 27))] == pytest.approx(35_082e6)
    assert msft.periods[0] == date(2024, 6, 30)


async def test_earnings_are_cut_to_the_rows_asked_for(adapter: YahooFinanceAdapter) -> None:
    earnings = await adapter.earnings("AAPL")

    assert len(earnings.upcoming) + len(earnings.reported) == 12  # Yahoo's page has 25


async def test_fewer_periods_than_asked_is_said_in_the_result(adapter: YahooFinanceAdapter) -> None:
    statement = await adapter.financial_statement("AAPL", "income", "quarterly")

    covered = statement.covering(count=8, start=None, end=None)

    assert covered.periods == statement.periods
    assert "8 periods were asked for; Yahoo Finance has 5 of them." in covered.notes
    assert "8 periods were asked for" in covered.summary_text()


@pytest.mark.parametrize(
    ("question", "ticker"),
    [
        ("What is the VOD.L stock price?", "VOD.L"),
        ("What is the SAP.DE stock price?", "SAP.DE"),
        ("What is the MC.PA stock price?", "MC.PA"),
        ("What is the RY.TO stock price?", "RY.TO"),
        ("What is the BRK.B stock price?", "BRK-B"),
    ],
)
def test_the_quote_fast_path_asks_yahoo_in_its_spelling(question: str, ticker: str) -> None:
    match = match_fast_path(question)

    assert match is not None and match.ticker == ticker


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now
