"""Fixtures: the fake yfinance, the server over it, and clients in memory and over stdio."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from datascraper.cache import TTLCache
from datascraper.market_data.yahoo import YahooFinanceAdapter
from datascraper.mcp_server import MarketDataServer, build_server
from datascraper.research_engine.data.session import MarketDataClient
from tests.datascraper.market_data.support import InMemoryMCP, launcher_parameters
from tests.fakes.yfinance import FakeYahoo

# The fake's data is anchored at 2025-06-13; "now" is the Monday after, so some earnings are upcoming.
NOW = datetime(2025, 6, 16, 14, 0, tzinfo=UTC)


@pytest.fixture
def fake_yahoo() -> Iterator[FakeYahoo]:
    yahoo = FakeYahoo(hang_s=10)
    yield yahoo
    # Let abandoned worker threads (HANG, a closed gate) finish before the next test.
    yahoo.gate.set()
    yahoo.release.set()


@pytest.fixture
def adapter(fake_yahoo: FakeYahoo) -> YahooFinanceAdapter:
    # Real yfinance parses a 20-year chart in about half a second on a loaded machine.
    return YahooFinanceAdapter(fake_yahoo.ticker, cache=TTLCache(), timeout_s=1.5, now=lambda: NOW)


@pytest.fixture
def server(adapter: YahooFinanceAdapter) -> MarketDataServer:
    return build_server(adapter)


@pytest.fixture
def mcp_client(server: MarketDataServer) -> InMemoryMCP:
    return InMemoryMCP(server)


@pytest.fixture(scope="module")
def pid_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("market-data") / "server.pid"


@pytest.fixture(scope="module")
def stdio_client(pid_file: Path) -> Iterator[MarketDataClient]:
    """One stdio server for the module, started as the app starts it: with Django configured.

    The client belongs to no event loop, so it outlives each test's loop.
    """
    parameters = launcher_parameters(
        "--pid-file", str(pid_file), "--upstream-timeout", "0.5", "--hang", "1", django=True
    )
    client = MarketDataClient(parameters, call_timeout_s=10)
    yield client
    client.close()
