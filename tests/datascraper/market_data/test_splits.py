"""Yahoo's closes are split-adjusted: a price history says so, and gives the price as traded where a split came
after a bar (issue 27). The real yfinance runs against the fake Yahoo (tests/fakes/yfinance.py), whose AAPL
split 4:1 on 2020-08-31 and NVDA 10:1 on 2024-06-10, as they did.
"""

from __future__ import annotations

from datetime import date

import pandas as pd
import pytest

from datascraper.cache import MemoryCacheStore, TTLCache
from datascraper.market_data.history import splits_in
from datascraper.market_data.schemas import StockSplit
from datascraper.market_data.yahoo import FUNDAMENTALS_TTL_S, HISTORY_TTL_S, YahooFinanceAdapter
from tests.datascraper.market_data.conftest import NOW
from tests.datascraper.market_data.test_cache import Clock
from tests.fakes.yahoo_listings import listing
from tests.fakes.yfinance import FakeYahoo

APPLE_SPLIT = StockSplit(day=date(2020, 8, 31), ratio="4:1", factor=4.0)
NVIDIA_SPLIT = StockSplit(day=date(2024, 6, 10), ratio="10:1", factor=10.0)


def on(*days: str) -> pd.DatetimeIndex:
    return pd.DatetimeIndex([pd.Timestamp(day) for day in days])


def history_requests(fake_yahoo: FakeYahoo, symbol: str) -> list[dict[str, str]]:
    """The chart requests of `symbol` for bars and events (yfinance also asks `range=1d` for the timezone)."""
    return [
        query
        for called, endpoint, query in fake_yahoo.queries
        if called == symbol and endpoint == "chart" and "events" in query
    ]


def first_days(fake_yahoo: FakeYahoo, symbol: str) -> list[date]:
    """The first day each dated history request of `symbol` asked for."""
    return [
        pd.Timestamp(int(query["period1"]), unit="s").date()
        for query in history_requests(fake_yahoo, symbol)
        if "period1" in query
    ]


async def test_a_close_before_a_later_split_is_yahoos_with_the_price_as_traded_beside_it(
    adapter: YahooFinanceAdapter, fake_yahoo: FakeYahoo
) -> None:
    day = date(2020, 1, 2)
    yahoos, traded = listing("AAPL").closes(on("2020-01-02"))[0], listing("AAPL").traded_closes(on("2020-01-02"))[0]

    history = await adapter.price_history("AAPL", start=day, end=day)

    [bar] = history.bars
    assert bar.close == pytest.approx(yahoos, abs=1e-3)
    assert bar.traded_close == pytest.approx(traded, abs=1e-3) == pytest.approx(4 * yahoos, abs=1e-3)
    assert bar.adj_close is not None and bar.adj_close < bar.close  # dividends since lower it further
    assert history.splits == [APPLE_SPLIT]
    summary = history.summary_text()
    assert f"close {bar.close:,.2f} split-adjusted, {traded:,.2f} as traded (before the 4:1 split of 2020-08-31)" in (
        summary
    )
    assert "4:1 on 2020-08-31 (after this range)" in summary
    # the splits since were asked for once, from the day after the range
    assert first_days(fake_yahoo, "AAPL") == [day, date(2020, 1, 3)]


async def test_a_split_within_the_range_gives_the_traded_price_before_it_and_no_fall_in_the_change(
    adapter: YahooFinanceAdapter,
) -> None:
    history = await adapter.price_history("NVDA", start=date(2024, 6, 5), end=date(2024, 6, 12))

    days = [bar.date.date().isoformat() for bar in history.bars]
    assert days == ["2024-06-05", "2024-06-06", "2024-06-07", "2024-06-10", "2024-06-11", "2024-06-12"]
    traded = listing("NVDA").traded_closes(on(*days))
    assert [bar.traded_close for bar in history.bars[:3]] == pytest.approx(list(traded[:3]), abs=1e-3)
    assert [bar.traded_close for bar in history.bars[3:]] == [None, None, None]
    assert history.splits == [NVIDIA_SPLIT]
    # the change runs on Yahoo's closes, level through the split, not -90%
    closes = listing("NVDA").closes(on(days[0], days[-1]))
    assert history.change_percent == pytest.approx((closes[1] / closes[0] - 1) * 100, rel=1e-4)
    assert "NVDA's prices are split-adjusted" in " ".join(history.notes)


async def test_a_history_without_a_later_split_has_no_traded_price_and_says_nothing_of_splits(
    adapter: YahooFinanceAdapter,
) -> None:
    history = await adapter.price_history("AAPL", start=date(2024, 3, 15), end=date(2024, 3, 15))

    assert history.splits == []
    assert [bar.traded_close for bar in history.bars] == [None]
    assert not any("split" in note for note in history.notes)


async def test_a_range_that_ends_today_costs_one_request_as_its_own_reply_names_its_splits(
    adapter: YahooFinanceAdapter, fake_yahoo: FakeYahoo
) -> None:
    history = await adapter.price_history("NVDA", period="2y")

    assert history.splits == [NVIDIA_SPLIT]
    assert [bar.traded_close is not None for bar in history.bars] == [
        bar.date.date() < NVIDIA_SPLIT.day for bar in history.bars
    ]
    assert [query["range"] for query in history_requests(fake_yahoo, "NVDA")] == ["2y"]


async def test_a_past_range_and_its_splits_are_fetched_once_a_day(fake_yahoo: FakeYahoo) -> None:
    clock = Clock()
    adapter = YahooFinanceAdapter(
        fake_yahoo.ticker, cache=TTLCache(MemoryCacheStore(clock=clock)), timeout_s=5, now=lambda: NOW
    )

    await adapter.price_history("AAPL", start=date(2020, 1, 2), end=date(2020, 1, 2))
    clock.now += HISTORY_TTL_S + 1
    await adapter.price_history("AAPL", start=date(2020, 1, 2), end=date(2020, 1, 2))
    assert len(history_requests(fake_yahoo, "AAPL")) == 2  # the range, and the splits since
    clock.now += FUNDAMENTALS_TTL_S
    await adapter.price_history("AAPL", start=date(2020, 1, 2), end=date(2020, 1, 2))

    assert len(history_requests(fake_yahoo, "AAPL")) == 4


async def test_splits_that_cannot_be_looked_up_are_said_and_the_closes_still_come(
    adapter: YahooFinanceAdapter, fake_yahoo: FakeYahoo
) -> None:
    def rate_limit_the_days_since(symbol: str, endpoint: str, query: dict[str, str]) -> int | None:
        later = "period1" in query and pd.Timestamp(int(query["period1"]), unit="s").date() > date(2020, 1, 2)
        return 429 if endpoint == "chart" and later else None

    fake_yahoo.refuse = rate_limit_the_days_since

    history = await adapter.price_history("AAPL", start=date(2020, 1, 2), end=date(2020, 1, 2))

    assert history.bars[0].close == pytest.approx(listing("AAPL").closes(on("2020-01-02"))[0], abs=1e-3)
    assert history.splits == [] and history.bars[0].traded_close is None
    [note] = [note for note in history.notes if "split" in note]
    assert note.startswith("Stock splits after 2020-01-02 could not be looked up (Yahoo Finance is rate limiting")


def test_a_split_is_named_by_its_ratio_a_reverse_one_too() -> None:
    days = pd.DatetimeIndex(["2024-06-07", "2024-06-10", "2024-06-11", "2024-06-12"], tz="America/New_York")
    frame = pd.DataFrame({"Stock Splits": [0.0, 10.0, 0.0, 0.1]}, index=days)

    assert [(split.day, split.ratio) for split in splits_in(frame)] == [
        (date(2024, 6, 10), "10:1"),
        (date(2024, 6, 12), "1:10"),
    ]
