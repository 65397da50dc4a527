"""Symbol validation: Yahoo's spellings pass, junk is rejected before any network call."""

from __future__ import annotations

import pytest

from datascraper.market_data.errors import InvalidSymbol
from datascraper.market_data.symbols import normalize_symbol
from datascraper.market_data.ticker import yahoo_url
from datascraper.market_data.yahoo import YahooFinanceAdapter
from tests.fakes.yfinance import FakeYahoo


@pytest.mark.parametrize(
    ("raw", "symbol"),
    [
        ("AAPL", "AAPL"),
        ("aapl", "AAPL"),
        (" msft ", "MSFT"),
        ("BRK-B", "BRK-B"),
        ("^GSPC", "^GSPC"),
        ("EURUSD=X", "EURUSD=X"),
        ("CL=F", "CL=F"),
        ("7203.T", "7203.T"),
        ("0700.HK", "0700.HK"),
        ("BTC-USD", "BTC-USD"),
        ("VOD.L", "VOD.L"),
    ],
)
def test_yahoo_spellings_are_accepted_in_upper_case(raw: str, symbol: str) -> None:
    assert normalize_symbol(raw) == symbol


@pytest.mark.parametrize(
    ("raw", "symbol"),
    [
        # Exchange suffixes are part of the symbol: London, Tokyo, Hong Kong, Frankfurt (Xetra), Paris, Toronto.
        ("vod.l", "VOD.L"),
        ("7203.T", "7203.T"),
        ("0700.hk", "0700.HK"),
        ("SAP.DE", "SAP.DE"),
        ("MC.PA", "MC.PA"),
        ("RY.TO", "RY.TO"),
        # A share class after a dot is Yahoo's dash.
        ("BRK.B", "BRK-B"),
        ("brk.a", "BRK-A"),
        ("RDS.A", "RDS-A"),
    ],
)
def test_exchange_suffixes_are_kept_and_share_classes_take_a_dash(raw: str, symbol: str) -> None:
    assert normalize_symbol(raw) == symbol


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "XX$",
        "AAPL MSFT",
        "AAPL;DROP TABLE",
        "../etc/passwd",
        "^",
        "=X",
        "AAPL=",
        "AAPL=Y",
        "A.B.C.D",
        "-AAPL",
        "AAPL-",
        "https://finance.yahoo.com/quote/AAPL",
        "A" * 21,
        "Äpple",
        "AA\tPL",
    ],
)
def test_junk_is_rejected_with_a_one_sentence_message(raw: str) -> None:
    with pytest.raises(InvalidSymbol) as caught:
        normalize_symbol(raw)
    assert caught.value.code == "invalid_symbol"
    assert caught.value.message.endswith("is not a valid ticker symbol.")


async def test_an_invalid_symbol_never_reaches_yahoo() -> None:
    yahoo = FakeYahoo()
    adapter = YahooFinanceAdapter(yahoo.ticker)
    with pytest.raises(InvalidSymbol):
        await adapter.quote("XX$")
    assert yahoo.calls == []


@pytest.mark.parametrize(
    ("symbol", "page", "url"),
    [
        ("AAPL", "", "https://finance.yahoo.com/quote/AAPL"),
        ("^GSPC", "history", "https://finance.yahoo.com/quote/%5EGSPC/history"),
        ("EURUSD=X", "", "https://finance.yahoo.com/quote/EURUSD%3DX"),
    ],
)
def test_page_urls_are_escaped(symbol: str, page: str, url: str) -> None:
    assert yahoo_url(symbol, page) == url
