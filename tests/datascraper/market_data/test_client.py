"""The long-lived client and `fetch_market_data`, against the server in memory."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Iterator

import pytest
from mcp.client.stdio import StdioServerParameters

from datascraper.cache import TTLCache
from datascraper.errors import ResearchError
from datascraper.market_data.errors import MarketDataError, MarketDataUnavailable
from datascraper.market_data.yahoo import YahooFinanceAdapter
from datascraper.mcp_server import MarketDataServer, build_server
from datascraper.research_engine.data import market_data_client as session_module
from datascraper.research_engine.data.market_data import MAX_TICKERS, fetch_market_data
from datascraper.research_engine.data.market_data_client import (
    close_market_data_client,
    get_market_data_client,
    set_market_data_client,
)
from datascraper.research_engine.data.server_target import default_server_parameters
from datascraper.research_engine.data.session import MarketDataClient
from datascraper.schemas import MarketDataKind
from tests.fakes.yfinance import FakeYahoo


@pytest.fixture
def installed(server: MarketDataServer) -> Iterator[MarketDataClient]:
    """The process-wide client, pointed at the in-memory server."""
    client = MarketDataClient(server, call_timeout_s=5)
    previous = set_market_data_client(client)
    yield client
    set_market_data_client(previous)
    client.close()


@pytest.mark.parametrize(
    ("data", "tool", "upstream", "title"),
    [
        ("quote", "get_quote", "quoteSummary", "Yahoo Finance — AAPL quote"),
        (
            "price_history",
            "get_price_history",
            "chart",
            "Yahoo Finance — AAPL price history (1 month, 2025-05-16 to 2025-06-13)",
        ),
        (
            "income_statement",
            "get_financial_statement",
            "income:yearly",
            "Yahoo Finance — AAPL income statement (annual), 4 periods ending 2021-09-25 to 2024-09-28",
        ),
        (
            "balance_sheet",
            "get_financial_statement",
            "balance:yearly",
            "Yahoo Finance — AAPL balance sheet (annual), 4 periods ending 2021-09-25 to 2024-09-28",
        ),
        (
            "cash_flow",
            "get_financial_statement",
            "cash_flow:yearly",
            "Yahoo Finance — AAPL cash flow statement (annual), 4 periods ending 2021-09-25 to 2024-09-28",
        ),
        ("earnings", "get_earnings", "earnings_dates", "Yahoo Finance — AAPL earnings"),
        ("analyst_ratings", "get_analyst_ratings", "quoteSummary", "Yahoo Finance — AAPL analyst ratings"),
        ("company_profile", "get_company_profile", "quoteSummary", "Yahoo Finance — AAPL company profile"),
        ("news", "get_news", "news", "Yahoo Finance — AAPL news"),
    ],
)
async def test_each_data_kind_is_routed_to_its_tool(
    installed: MarketDataClient, fake_yahoo: FakeYahoo, data: MarketDataKind, tool: str, upstream: str, title: str
) -> None:
    finding = await fetch_market_data(["AAPL"], data, question="How is Apple doing?")

    assert finding.ok and finding.errors == []
    [result] = finding.results
    assert (result.symbol, result.tool, result.title) == ("AAPL", tool, title)
    assert result.url == result.data["url"] and result.url.startswith("https://finance.yahoo.com/")
    assert result.as_of is not None
    assert ("AAPL", upstream) in fake_yahoo.calls
    assert finding.question == "How is Apple doing?"


async def test_tickers_are_fetched_concurrently_one_call_each(
    installed: MarketDataClient, fake_yahoo: FakeYahoo
) -> None:
    fake_yahoo.gate.clear()  # hold every upstream call: all three must be in flight at once to finish
    fetching = asyncio.create_task(fetch_market_data(["AAPL", "msft", " AAPL ", "", "7203.T"], "quote"))
    while fake_yahoo.upstream_calls() < 3:
        await asyncio.sleep(0.001)
    fake_yahoo.gate.set()
    finding = await fetching

    assert finding.tickers == ["AAPL", "MSFT", "7203.T"]
    assert [result.symbol for result in finding.results] == ["AAPL", "MSFT", "7203.T"]
    # One quote fetch per ticker (a quote is Yahoo's quoteSummary and /v7/finance/quote).
    assert sorted(call for call in fake_yahoo.calls if call[1] == "quoteSummary") == [
        ("7203.T", "quoteSummary"),
        ("AAPL", "quoteSummary"),
        ("MSFT", "quoteSummary"),
    ]
    assert finding.results[2].data["currency"] == "JPY"


async def test_per_ticker_failures_are_recorded_and_the_rest_still_count(installed: MarketDataClient) -> None:
    finding = await fetch_market_data(["AAPL", "XX$", "EMPTY", "LIMIT", "BOOM", "HANG"], "quote")

    assert finding.ok
    assert [result.symbol for result in finding.results] == ["AAPL"]
    assert {(error.symbol, error.code) for error in finding.errors} == {
        ("XX$", "invalid_symbol"),
        ("EMPTY", "no_data"),
        ("LIMIT", "rate_limited"),
        ("BOOM", "upstream_error"),
        ("HANG", "timeout"),
    }
    assert all("Traceback" not in error.message and error.message.endswith(".") for error in finding.errors)


async def test_a_finding_without_tickers_is_not_ok(installed: MarketDataClient) -> None:
    finding = await fetch_market_data([" "], "quote")

    assert not finding.ok
    assert [(error.code, error.message) for error in finding.errors] == [
        ("invalid_symbol", "The sub-question names no ticker symbol.")
    ]


async def test_tickers_beyond_the_cap_are_reported_not_fetched(
    installed: MarketDataClient, fake_yahoo: FakeYahoo
) -> None:
    tickers = [f"T{n}" for n in range(MAX_TICKERS + 2)]

    finding = await fetch_market_data(tickers, "quote")

    assert len(finding.results) == MAX_TICKERS
    assert finding.errors[0].code == "invalid_argument" and finding.errors[0].symbol == "T10, T11"
    assert fake_yahoo.upstream_calls("T10") == 0


async def test_the_summary_gives_numbers_with_as_of_dates_and_pages(installed: MarketDataClient) -> None:
    finding = await fetch_market_data(["AAPL", "EMPTY"], "income_statement")

    summary = finding.summary_text()
    title = "Yahoo Finance — AAPL income statement (annual), 4 periods ending 2021-09-25 to 2024-09-28"
    assert f"{title} (as of 2024-09-28, currency USD;" in summary
    assert "https://finance.yahoo.com/quote/AAPL/financials" in summary
    assert "Total Revenue: 391.04B, 383.29B, 394.33B, 365.82B" in summary
    assert "EMPTY: no_data: Yahoo Finance has no annual income statement for EMPTY." in summary


async def test_a_call_outliving_its_timeout_is_a_timeout_error(fake_yahoo: FakeYahoo) -> None:
    patient_server = build_server(YahooFinanceAdapter(fake_yahoo.ticker, cache=TTLCache(), timeout_s=30))
    client = MarketDataClient(patient_server)
    previous = set_market_data_client(client)
    try:
        await fetch_market_data(["MSFT"], "quote")  # the session is open: the bound below is the calls' alone
        finding = await fetch_market_data(["HANG", "AAPL"], "quote", timeout_s=0.5)
    finally:
        set_market_data_client(previous)
        fake_yahoo.release.set()
        await client.aclose()

    assert [result.symbol for result in finding.results] == ["AAPL"]
    assert [(error.symbol, error.code) for error in finding.errors] == [("HANG", "timeout")]


def test_callers_on_different_event_loops_and_threads_share_the_client(installed: MarketDataClient) -> None:
    findings = []

    def research_run(symbol: str) -> None:
        findings.append(asyncio.run(fetch_market_data([symbol], "quote")))

    runs = [threading.Thread(target=research_run, args=(symbol,)) for symbol in ("AAPL", "MSFT", "NVDA", "AMZN")]
    for run in runs:
        run.start()
    for run in runs:
        run.join(timeout=30)

    assert sorted(finding.results[0].symbol for finding in findings) == ["AAPL", "AMZN", "MSFT", "NVDA"]


async def test_a_server_that_cannot_start_raises_a_named_error() -> None:
    broken = StdioServerParameters(command=sys.executable, args=["-c", "import sys; sys.exit(3)"])
    client = MarketDataClient(broken, connect_timeout_s=10)
    previous = set_market_data_client(client)
    try:
        with pytest.raises(MarketDataUnavailable) as caught:
            await fetch_market_data(["AAPL"], "quote")
    finally:
        set_market_data_client(previous)
        await client.aclose()

    assert isinstance(caught.value, MarketDataError) and isinstance(caught.value, ResearchError)
    assert caught.value.code == "market_data_unavailable"


async def test_a_closed_client_refuses_calls(server: MarketDataServer) -> None:
    client = MarketDataClient(server)
    await client.call_tool("get_quote", {"symbol": "AAPL"})
    await client.aclose()

    with pytest.raises(MarketDataUnavailable):
        await client.call_tool("get_quote", {"symbol": "AAPL"})


async def test_the_process_wide_client_is_created_once_and_replaced_after_close(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(session_module, "_client", None)

    first = get_market_data_client()
    assert get_market_data_client() is first
    await close_market_data_client()
    assert get_market_data_client() is not first
    await close_market_data_client()


def test_the_default_server_is_a_stdio_child_with_the_parents_environment_minus_its_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://:hunter2@127.0.0.1:6379/0")
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "config.settings")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "signing-secret")
    monkeypatch.setenv("github_token", "ghp-test")
    monkeypatch.setenv("DB_PASSWORD", "hunter2")

    parameters = default_server_parameters()

    assert parameters.command == sys.executable
    assert parameters.args == ["-m", "datascraper.mcp_server"]
    assert parameters.env is not None
    assert not {"OPENAI_API_KEY", "DJANGO_SECRET_KEY", "github_token", "DB_PASSWORD"} & parameters.env.keys()
    assert parameters.env["REDIS_URL"] == "redis://:hunter2@127.0.0.1:6379/0"
    assert parameters.env["DJANGO_SETTINGS_MODULE"] == "config.settings"
    assert parameters.env["PATH"] == os.environ["PATH"]


async def test_closing_cuts_off_calls_in_flight_with_a_named_error(fake_yahoo: FakeYahoo) -> None:
    client = MarketDataClient(build_server(YahooFinanceAdapter(fake_yahoo.ticker, cache=TTLCache(), timeout_s=30)))
    fake_yahoo.gate.clear()
    in_flight = asyncio.create_task(client.call_tool("get_quote", {"symbol": "AAPL"}))
    while fake_yahoo.upstream_calls() < 1:
        await asyncio.sleep(0.001)

    await client.aclose()

    with pytest.raises(MarketDataUnavailable):
        await in_flight
