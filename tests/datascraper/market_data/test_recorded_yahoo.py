"""Yahoo's real replies, recorded (`../shared/recorded/yahoo/`), through the real yfinance and our adapter
(issue 27). The fake Yahoo serves them at the wire (tests/fakes/yahoo_recorded.py says how it picks them);
skipped, with the reason, where the recordings are absent.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from datascraper.cache import TTLCache
from datascraper.market_data.schemas import StockSplit
from datascraper.market_data.yahoo import YahooFinanceAdapter
from datascraper.query_analyzer import FastPathMatch
from datascraper.research_engine.bypass import compose_quote_answer
from tests.fakes.yahoo_recorded import RecordedYahoo
from tests.fakes.yfinance import FakeYahoo
from tests.recorded import requires_recorded

pytestmark = requires_recorded

# The day the chart recordings were made.
RECORDED_ON = datetime(2025, 2, 20, 21, 0, tzinfo=UTC)
JAN_2 = date(2020, 1, 2)


@pytest.fixture
def recorded() -> RecordedYahoo:
    return RecordedYahoo()


@pytest.fixture
def adapter(recorded: RecordedYahoo) -> YahooFinanceAdapter:
    yahoo = FakeYahoo(recorded=recorded)
    return YahooFinanceAdapter(yahoo.ticker, cache=TTLCache(), timeout_s=5, now=lambda: RECORDED_ON)


async def test_apples_close_of_2020_01_02_is_yahoos_split_adjusted_75_09_and_300_35_as_traded(
    adapter: YahooFinanceAdapter, recorded: RecordedYahoo
) -> None:
    history = await adapter.price_history("AAPL", start=JAN_2, end=JAN_2)

    [bar] = history.bars
    assert bar.date.date() == JAN_2 and history.currency == "USD"
    assert bar.close == pytest.approx(75.0875, abs=1e-4)  # as Yahoo recorded it, after the split
    assert bar.adj_close == pytest.approx(72.7161, abs=1e-4)  # dividends since taken out too
    assert bar.traded_close == pytest.approx(300.35, abs=1e-3)  # the price that day
    assert history.splits == [StockSplit(day=date(2020, 8, 31), ratio="4:1", factor=4.0)]
    assert "2020-01-02: close 75.09 split-adjusted, 300.35 as traded (before the 4:1 split of 2020-08-31)" in (
        history.summary_text()
    )
    # the split came from Yahoo's recorded reply with the split event in it, asked from the day after
    splits_reply = recorded.served[-1]
    assert splits_reply[0] == "chart" and "node.chart-AAPL-2020-08-31-to-2020-11-07" in splits_reply[1]


async def test_a_london_close_recorded_in_pence_is_in_pounds_written_pence_first(
    adapter: YahooFinanceAdapter,
) -> None:
    history = await adapter.price_history("OCDO.L", start=JAN_2, end=JAN_2)

    [bar] = history.bars
    assert (history.currency, history.sub_unit and history.sub_unit.code) == ("GBP", "GBp")
    assert bar.close == pytest.approx(12.595)  # 1259.5 GBp
    assert history.splits == [] and bar.traded_close is None
    assert "2020-01-02: close 1,259.50p (£12.5950)" in history.summary_text()


async def test_a_london_quote_recorded_in_pence_answers_in_pence_beside_pounds_and_no_100x_market_cap(
    adapter: YahooFinanceAdapter,
) -> None:
    quote = await adapter.quote("OCDO.L")

    assert quote.price == pytest.approx(3.088) and quote.previous_close == pytest.approx(3.152)
    assert "price 308.80p (£3.0880); previous close 315.20p (£3.1520) (official close); change -6.40p (-£0.0640)" in (
        quote.summary_text()
    )
    # shares times the price in pounds: Yahoo's own marketCap (GBP) agrees
    assert quote.market_cap == pytest.approx(2_554_603_520, rel=0.01)
    answer = compose_quote_answer(FastPathMatch(ticker="OCDO.L", fact="change", name="Ocado"), quote)
    assert answer is not None
    assert answer.startswith(
        "Ocado (OCDO.L) last traded down 6.40p (£0.0640) (-2.03%) from the previous close of 315.20p (£3.1520), "
        "at 308.80p (£3.0880), as of 2025-02-17 "
    )
