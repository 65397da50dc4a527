"""The filing tools as the app reaches them: the real server entry point as a stdio child, started with
Django configured (so its cache is the app's), its SEC hosts pointed at the fake SEC by the settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from datascraper.filings.schemas import FilingSection, ReportedFigures
from datascraper.research_engine.data.session import MarketDataClient
from tests.datascraper.filings.conftest import USER_AGENT
from tests.datascraper.market_data.support import launcher_parameters
from tests.fakes.sec_server import FakeSecServer

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def stdio_client(sec_server: FakeSecServer) -> Iterator[MarketDataClient]:
    parameters = launcher_parameters(django=True)
    assert parameters.env is not None
    parameters.env.update(
        {"SEC_USER_AGENT": USER_AGENT, "SEC_DATA_URL": sec_server.data_url, "SEC_WWW_URL": sec_server.www_url}
    )
    client = MarketDataClient(parameters, call_timeout_s=20)
    yield client
    client.close()


async def test_the_server_process_answers_filing_tools_from_the_settings(
    stdio_client: MarketDataClient, fake_sec: FakeSecServer
) -> None:
    figures = await stdio_client.call_tool(
        "get_reported_figures", {"ticker": "NVDA", "concept": "revenue", "fiscal_year": 2025}
    )
    section = await stdio_client.call_tool("get_filing_section", {"ticker": "AAPL", "section": "2.02"})

    assert not figures.is_error, figures.content
    assert ReportedFigures.model_validate(figures.structured_content).figures[0].value == 130_497_000_000
    assert FilingSection.model_validate(section.structured_content).url.startswith(fake_sec.www_url)
    assert {r.user_agent for r in fake_sec.requests} == {USER_AGENT}


async def test_the_server_process_caches_what_it_fetched(
    stdio_client: MarketDataClient, fake_sec: FakeSecServer
) -> None:
    arguments = {"ticker": "NVDA", "concept": "net_income", "frequency": "quarterly", "limit": 1}
    await stdio_client.call_tool("get_reported_figures", arguments)
    sent = len(fake_sec.requests)

    again = await stdio_client.call_tool("get_reported_figures", arguments)

    assert not again.is_error, again.content
    assert len(fake_sec.requests) == sent
