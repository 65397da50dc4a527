"""Prices quoted in a hundredth of a currency (London's pence, Johannesburg's cents, Tel Aviv's agorot) travel
in the main unit, so that amounts compare, and are written as the exchange's readers read them, the
sub-unit first: 72.50p (£0.7250) (issue 27). The real yfinance runs against the fake Yahoo.
"""

from __future__ import annotations

from datetime import date

import pytest

from datascraper.market_data.schemas import in_sub_unit
from datascraper.market_data.yahoo import YahooFinanceAdapter
from datascraper.query_analyzer import FastPathMatch
from datascraper.research_engine.bypass import compose_quote_answer

# symbol, Yahoo's quote currency, main currency, the price as shown
LISTINGS = [
    ("VOD.L", "GBp", "GBP", "72.50p (£0.7250)"),
    ("SBK.JO", "ZAc", "ZAR", "23,045.00c (R230.4500)"),
    ("TEVA.TA", "ILA", "ILS", "6,012.00 agorot (₪60.1200)"),
]


@pytest.mark.parametrize(("symbol", "quoted", "main", "shown"), LISTINGS)
async def test_a_quote_in_a_sub_unit_is_in_the_main_unit_and_written_with_the_sub_unit_first(
    adapter: YahooFinanceAdapter, symbol: str, quoted: str, main: str, shown: str
) -> None:
    quote = await adapter.quote(symbol)

    assert quote.currency == main and quote.sub_unit is not None and quote.sub_unit.code == quoted
    assert quote.price_text(quote.price) == shown
    assert f"price {shown}; previous close " in quote.summary_text()
    assert quote.currency_text() == f"{main}; prices quoted in {quote.sub_unit.name} ({quoted})"


async def test_a_london_price_history_and_price_targets_are_written_in_pence_beside_pounds(
    adapter: YahooFinanceAdapter,
) -> None:
    history = await adapter.price_history("VOD.L", start=date(2025, 6, 9), end=date(2025, 6, 12))
    ratings = await adapter.analyst_ratings("VOD.L")

    bar = history.bars[-1]
    assert bar.close is not None and bar.close < 1  # pounds: 0.72, not 72
    pence = f"{bar.close * 100:,.2f}p (£{bar.close:,.4f})"
    assert f"{bar.date.date()}: close {pence}; dividend-adjusted " in history.summary_text()
    assert "Yahoo Finance quotes VOD.L in pence (GBp); prices here are in GBP" in " ".join(history.notes)
    assert ratings.price_target is not None and ratings.price_target.mean is not None
    mean = ratings.price_target.mean
    assert f"price target mean {mean * 100:,.2f}p (£{mean:,.4f})" in ratings.summary_text()


async def test_a_quote_in_dollars_is_written_as_before(adapter: YahooFinanceAdapter) -> None:
    quote = await adapter.quote("AAPL")

    assert quote.sub_unit is None and quote.currency_text() == "USD"
    assert quote.summary_text().startswith("  price 196.45; previous close ")


@pytest.mark.parametrize(("symbol", "quoted", "main", "shown"), LISTINGS)
async def test_the_quote_fast_path_answers_in_the_sub_unit_beside_the_main_unit(
    adapter: YahooFinanceAdapter, symbol: str, quoted: str, main: str, shown: str
) -> None:
    quote = await adapter.quote(symbol)

    answer = compose_quote_answer(FastPathMatch(ticker=symbol, fact="price"), quote)

    assert answer is not None and answer.startswith(f"{symbol} last traded at {shown}, ")
    assert quote.previous_close is not None
    assert f"from the previous close of {quote.price_text(quote.previous_close)}, as of " in answer


async def test_a_payload_in_a_sub_unit_offers_its_prices_in_that_unit_for_the_figure_checks(
    adapter: YahooFinanceAdapter,
) -> None:
    quote = (await adapter.quote("VOD.L")).model_dump(mode="json")
    history = (await adapter.price_history("VOD.L", period="5d")).model_dump(mode="json")

    in_pence = in_sub_unit(quote)
    bars = in_sub_unit(history)

    assert in_pence is not None and bars is not None
    assert in_pence["price"] == pytest.approx(72.5) and in_pence["currency"] == "GBp"
    assert (in_pence["volume"], in_pence["market_cap"]) == (quote["volume"], quote["market_cap"])
    assert bars["bars"][-1]["close"] == pytest.approx(history["bars"][-1]["close"] * 100)
    assert in_sub_unit((await adapter.quote("AAPL")).model_dump(mode="json")) is None
