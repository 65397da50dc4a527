"""Fixtures: the fake SEC on loopback (one per module, its log reset per test), the real client and
service pointed at it, and the MCP server with the filing tools reached through a real MCP client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from datascraper.cache import TTLCache
from datascraper.filings.client import SecClient
from datascraper.filings.config import FilingsConfig
from datascraper.filings.service import FilingsService
from datascraper.market_data.yahoo import YahooFinanceAdapter
from datascraper.mcp_server import build_server
from tests.datascraper.market_data.support import InMemoryMCP
from tests.fakes.sec_server import FakeSecServer
from tests.fakes.yfinance import FakeYahoo

USER_AGENT = "Finance Research Tests ops@example.com"


@pytest.fixture(scope="module")
def sec_server() -> Iterator[FakeSecServer]:
    with FakeSecServer() as fake:
        yield fake


@pytest.fixture
def fake_sec(sec_server: FakeSecServer) -> Iterator[FakeSecServer]:
    sec_server.reset()
    sec_server.delay_s = 0.0
    yield sec_server
    sec_server.reset()


class RecordedSleeps:
    """The client's back-off sleeps, recorded and skipped so tests of a throttled SEC run at once."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


@pytest.fixture
def sleeps() -> RecordedSleeps:
    return RecordedSleeps()


def most_in_any_second(times: list[float]) -> int:
    return max((sum(1 for other in times if start <= other < start + 1.0) for start in times), default=0)


@pytest.fixture
def sec_config(fake_sec: FakeSecServer, tmp_path: Path) -> FilingsConfig:
    # Each test its own request budget on this machine, as a fresh process of its own machine would have.
    return FilingsConfig(
        user_agent=USER_AGENT, data_url=fake_sec.data_url, www_url=fake_sec.www_url, limiter_dir=str(tmp_path)
    )


@pytest.fixture
async def sec_client(sec_config: FilingsConfig, sleeps: RecordedSleeps) -> AsyncIterator[SecClient]:
    client = SecClient(sec_config, cache=TTLCache(), sleep=sleeps)
    yield client
    await client.aclose()


@pytest.fixture
def filings(sec_client: SecClient) -> FilingsService:
    return FilingsService(sec_client)


@pytest.fixture
def mcp_client(filings: FilingsService) -> InMemoryMCP:
    adapter = YahooFinanceAdapter(FakeYahoo().ticker, cache=TTLCache())
    return InMemoryMCP(build_server(adapter, filings))
