"""Fixtures for the research pipeline: the process-wide market data client on the fake yfinance.

The real MCP client talks to the real server in memory; only yfinance is fake.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from datascraper.cache import TTLCache
from datascraper.filings.client import SecClient
from datascraper.filings.config import FilingsConfig
from datascraper.filings.service import FilingsService
from datascraper.market_data.yahoo import YahooFinanceAdapter
from datascraper.mcp_server import build_server
from datascraper.research_engine.data.market_data_client import set_market_data_client
from datascraper.research_engine.data.session import MarketDataClient
from tests.fakes.sec_server import FakeSecServer
from tests.fakes.yfinance import FakeYahoo

# The fake's data is anchored at 2025-06-13.
MARKET_NOW = datetime(2025, 6, 13, 20, 0, tzinfo=UTC)
SEC_USER_AGENT = "Finance Research Tests ops@example.com"


@pytest.fixture
def market_data() -> Iterator[FakeYahoo]:
    """The process-wide market data client, on the in-memory server over the fake yfinance."""
    yahoo = FakeYahoo(hang_s=5)
    adapter = YahooFinanceAdapter(yahoo.ticker, cache=TTLCache(), timeout_s=2, now=lambda: MARKET_NOW)
    client = MarketDataClient(build_server(adapter), call_timeout_s=5)
    previous = set_market_data_client(client)
    yield yahoo
    set_market_data_client(previous)
    yahoo.release.set()
    client.close()


@pytest.fixture
def market_data_down() -> Iterator[None]:
    """A process-wide market data client that cannot be reached (it is closed)."""
    client = MarketDataClient(build_server(YahooFinanceAdapter(FakeYahoo().ticker, cache=TTLCache())))
    client.close()
    previous = set_market_data_client(client)
    yield
    set_market_data_client(previous)


@pytest.fixture(scope="module")
def sec_server() -> Iterator[FakeSecServer]:
    with FakeSecServer() as fake:
        yield fake


def install_market_data(sec: FakeSecServer, *, user_agent: str, yahoo: FakeYahoo | None = None) -> Iterator[None]:
    """The process-wide market data client with the filing tools pointed at the fake SEC (as configured
    with `user_agent`: empty is SEC_USER_AGENT unset)."""
    sec.reset()
    config = FilingsConfig(user_agent=user_agent, data_url=sec.data_url, www_url=sec.www_url)
    filings = FilingsService(SecClient(config, cache=TTLCache()))
    adapter = YahooFinanceAdapter((yahoo or FakeYahoo()).ticker, cache=TTLCache(), now=lambda: MARKET_NOW)
    client = MarketDataClient(build_server(adapter, filings), call_timeout_s=10)
    previous = set_market_data_client(client)
    yield
    set_market_data_client(previous)
    client.close()


@pytest.fixture
def filed(sec_server: FakeSecServer) -> Iterator[FakeSecServer]:
    """Market data and the filing tools on one server, the filing tools pointed at the fake SEC."""
    for _ in install_market_data(sec_server, user_agent=SEC_USER_AGENT):
        yield sec_server
