"""The MCP server's tools answer byte for byte as the recorded answers in `mcp_tool_answers.json`: every tool,
its usual calls and its failures, through a real MCP client in memory over the fake Yahoo and the fake SEC.

A moved module, a split schema or a new import path must not change what a client of the server reads. A
change that means to change an answer records the answers again (`RECORD_TOOL_ANSWERS=1 pytest <this file>`)
and the diff of the JSON file shows, in review, exactly what a client now reads differently.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_types import TextContent

from datascraper.cache import TTLCache
from datascraper.filings.client import SecClient
from datascraper.filings.config import FilingsConfig
from datascraper.filings.service import FilingsService
from datascraper.market_data.yahoo import YahooFinanceAdapter
from datascraper.mcp_server import build_server
from tests.datascraper.conftest import MARKET_NOW, SEC_USER_AGENT
from tests.datascraper.market_data.support import ERROR_CASES, InMemoryMCP
from tests.fakes.sec_server import FakeSecServer
from tests.fakes.yfinance import FakeYahoo

ANSWERS = Path(__file__).with_name("mcp_tool_answers.json")
RECORDING = os.environ.get("RECORD_TOOL_ANSWERS") == "1"

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_quote", {"symbol": "AAPL"}),
    ("get_quote", {"symbol": "VOD.L"}),
    ("get_quote", {"symbol": "7203.T"}),
    ("get_price_history", {"symbol": "AAPL"}),
    ("get_price_history", {"symbol": "AAPL", "start": "2020-01-02", "end": "2020-01-03"}),
    ("get_price_history", {"symbol": "MSFT", "period": "1y", "interval": "1mo"}),
    ("get_financial_statement", {"symbol": "AAPL", "statement": "income", "frequency": "annual"}),
    ("get_financial_statement", {"symbol": "MSFT", "statement": "income", "frequency": "quarterly"}),
    ("get_financial_statement", {"symbol": "AAPL", "statement": "balance", "frequency": "quarterly"}),
    ("get_financial_statement", {"symbol": "NVDA", "statement": "cash_flow", "frequency": "ttm"}),
    ("get_earnings", {"symbol": "AAPL"}),
    ("get_analyst_ratings", {"symbol": "AAPL"}),
    ("get_company_profile", {"symbol": "AAPL"}),
    ("get_news", {"symbol": "AAPL", "limit": 5}),
    *[("get_quote", {"symbol": symbol}) for symbol, _ in ERROR_CASES if symbol != "HANG"],
    ("get_reported_figures", {"ticker": "AAPL", "concept": "revenue"}),
    ("get_reported_figures", {"ticker": "AAPL", "concept": "revenue", "frequency": "quarterly", "limit": 5}),
    ("get_reported_figures", {"ticker": "NVDA", "concept": "eps_diluted", "fiscal_year": 2024}),
    ("get_reported_figures", {"ticker": "NVDA", "concept": "net_income", "frame": "CY2024"}),
    ("get_reported_figures", {"ticker": "AAPL", "concept": "total_assets", "frequency": "quarterly"}),
    ("get_reported_figures", {"ticker": "TSM", "concept": "revenue"}),
    ("get_filings", {"ticker": "AAPL", "forms": ["8-K", "10-K"]}),
    ("get_filings", {"ticker": "NVDA"}),
    ("get_filing_section", {"ticker": "AAPL", "section": "risk_factors", "max_chars": 3000}),
    ("get_filing_section", {"ticker": "AAPL", "section": "segment_note"}),
    ("get_filing_section", {"ticker": "AAPL", "section": "2.02", "form": "8-K"}),
    ("get_filing_section", {"ticker": "AAPL", "section": "legal_proceedings", "form": "10-Q"}),
    ("get_insider_transactions", {"ticker": "AAPL"}),
    ("get_filings", {"ticker": "ZZZZ"}),
]


@pytest.fixture
def server_client() -> Iterator[tuple[InMemoryMCP, FakeSecServer]]:
    with FakeSecServer() as sec:
        config = FilingsConfig(user_agent=SEC_USER_AGENT, data_url=sec.data_url, www_url=sec.www_url)
        filings = FilingsService(SecClient(config, cache=TTLCache()))
        yahoo = FakeYahoo(hang_s=1)
        adapter = YahooFinanceAdapter(yahoo.ticker, cache=TTLCache(), timeout_s=5, now=lambda: MARKET_NOW)
        yield InMemoryMCP(build_server(adapter, filings)), sec
        yahoo.release.set()


def answer_text(result: Any, sec: FakeSecServer) -> dict[str, Any]:
    """What a client reads: the error flag, the text blocks and the structured content, with the fake SEC's
    loopback address (a new port each run) written as the SEC's hosts."""
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    answer = {"is_error": result.is_error, "text": texts, "structured": result.structured_content}
    encoded = json.dumps(answer, sort_keys=True, ensure_ascii=False)
    encoded = encoded.replace(sec.data_url, "https://data.sec.gov").replace(sec.www_url, "https://www.sec.gov")
    return json.loads(encoded)


def call_id(name: str, arguments: dict[str, Any]) -> str:
    return f"{name} {json.dumps(arguments, sort_keys=True)}"


async def test_every_tool_answers_as_recorded(server_client):
    client, sec = server_client
    answers = {
        call_id(name, arguments): answer_text(await client.call_tool(name, arguments), sec) for name, arguments in CALLS
    }

    if RECORDING:
        ANSWERS.write_text(json.dumps(answers, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    recorded = json.loads(ANSWERS.read_text())
    assert sorted(answers) == sorted(recorded)
    for call, answer in answers.items():
        assert answer == recorded[call], f"{call} answers differently"


async def test_the_server_lists_the_same_tools_with_the_same_schemas(server_client):
    client, _ = server_client
    tools = {
        tool.name: {"description": tool.description, "input": tool.input_schema, "output": tool.output_schema}
        for tool in await client.list_tools()
    }
    path = ANSWERS.with_name("mcp_tool_list.json")

    if RECORDING:
        path.write_text(json.dumps(tools, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert tools == json.loads(path.read_text())
