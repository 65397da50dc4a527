"""`MARKET_DATA_MCP_URL`: the process-wide client connects to a market data server run as its own service
(streamable HTTP) instead of starting a stdio child."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator

import pytest
from mcp.client.stdio import StdioServerParameters

from datascraper.market_data.errors import MarketDataUnavailable
from datascraper.research_engine.data import market_data_client as session_module
from datascraper.research_engine.data.market_data import fetch_market_data
from datascraper.research_engine.data.market_data_client import close_market_data_client, get_market_data_client
from datascraper.research_engine.data.server_target import PROJECT_ROOT, default_server_target
from tests.datascraper.market_data.support import launcher_parameters
from tests.processes import free_port, wait_for_port


@pytest.fixture
def http_server_url() -> Iterator[str]:
    """The real entry point with the fake yfinance, serving streamable HTTP on a free port."""
    port = free_port()
    parameters = launcher_parameters("--http", "--port", str(port))
    server = subprocess.Popen(
        [parameters.command, *parameters.args], env=parameters.env, cwd=PROJECT_ROOT, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, server)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def no_process_wide_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start without a process-wide client, so the next one is built from the environment."""
    monkeypatch.setattr(session_module, "_client", None)


@pytest.mark.usefixtures("no_process_wide_client")
async def test_the_process_wide_client_reaches_the_http_server_the_variable_names(
    monkeypatch: pytest.MonkeyPatch, http_server_url: str
) -> None:
    monkeypatch.setenv("MARKET_DATA_MCP_URL", http_server_url)

    client = get_market_data_client()
    try:
        finding = await fetch_market_data(["AAPL", "LIMIT"], "quote")
        failure_code = finding.errors[0].code if finding.errors else None
    finally:
        await close_market_data_client()

    assert client.target == http_server_url
    # Fake yfinance data: only the launched HTTP server has it (a stdio child would serve real yfinance).
    assert [result.symbol for result in finding.results] == ["AAPL"]
    assert finding.results[0].url.startswith("https://finance.yahoo.com/quote/AAPL")
    assert failure_code == "rate_limited"


@pytest.mark.usefixtures("no_process_wide_client")
async def test_a_stopped_http_server_is_a_named_error_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MARKET_DATA_MCP_URL", f"http://127.0.0.1:{free_port()}/mcp")

    try:
        with pytest.raises(MarketDataUnavailable):
            await asyncio.wait_for(fetch_market_data(["AAPL"], "quote"), timeout=30)
    finally:
        await close_market_data_client()


def test_without_the_variable_the_server_is_a_stdio_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MARKET_DATA_MCP_URL", "  ")

    target = default_server_target()

    assert isinstance(target, StdioServerParameters)
    assert target.args == ["-m", "datascraper.mcp_server"]


@pytest.mark.parametrize(
    "value", ["user:hunter2@127.0.0.1:8765/mcp", "ftp://user:hunter2@127.0.0.1/mcp", "http://user:hunter2@/mcp"]
)
def test_a_value_that_is_not_an_http_url_is_a_named_error_that_does_not_repeat_it(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("MARKET_DATA_MCP_URL", value)

    with pytest.raises(MarketDataUnavailable, match="MARKET_DATA_MCP_URL must be an http") as raised:
        default_server_target()

    assert "hunter2" not in str(raised.value)
