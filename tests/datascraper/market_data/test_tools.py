"""The seven tools through a real MCP client connected in memory: structured output, caps, cleaning,
and every error code as a one-sentence `isError` result."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from mcp_types import CallToolResult, TextContent

from datascraper.filings.tools import FILING_TOOL_NAMES
from datascraper.market_data.finding_schemas import RESULT_MODELS
from datascraper.market_data.history import MAX_HISTORY_BARS
from datascraper.market_data.yahoo import MAX_NEWS_ITEMS, YahooFinanceAdapter
from datascraper.mcp_server import build_server
from tests.datascraper.market_data.support import ERROR_CASES, InMemoryMCP
from tests.fakes.yfinance import FakeYahoo

TOOL_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_quote", {"symbol": "AAPL"}),
    ("get_price_history", {"symbol": "AAPL"}),
    ("get_financial_statement", {"symbol": "AAPL", "statement": "income", "frequency": "annual"}),
    ("get_financial_statement", {"symbol": "AAPL", "statement": "balance", "frequency": "quarterly"}),
    ("get_financial_statement", {"symbol": "AAPL", "statement": "cash_flow", "frequency": "ttm"}),
    ("get_earnings", {"symbol": "AAPL"}),
    ("get_analyst_ratings", {"symbol": "AAPL"}),
    ("get_company_profile", {"symbol": "AAPL"}),
    ("get_news", {"symbol": "AAPL", "limit": 5}),
]


def text_of(result: CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, TextContent)
    return block.text


def error_of(result: CallToolResult) -> tuple[str, str]:
    """The (code, text) of an error result, after checking it is short and traceback-free."""
    assert result.is_error
    text = text_of(result)
    assert "Traceback" not in text
    assert "\n" not in text
    assert result.structured_content is None
    code, _, sentence = text.partition(": ")
    assert sentence.endswith(".")
    return code, text


async def test_the_server_lists_the_seven_tools_with_output_schemas(mcp_client: InMemoryMCP) -> None:
    # The SEC filing tools share the server; tests/datascraper/filings covers them.
    tools = {tool.name: tool for tool in await mcp_client.list_tools() if tool.name not in FILING_TOOL_NAMES}
    assert set(tools) == set(RESULT_MODELS)
    for tool in tools.values():
        assert tool.output_schema is not None
        assert {"symbol", "currency", "as_of", "url"} <= set(tool.output_schema["properties"])
        assert tool.annotations is not None and tool.annotations.read_only_hint


@pytest.mark.parametrize(("tool", "arguments"), TOOL_CALLS)
async def test_every_tool_returns_citable_structured_content(
    mcp_client: InMemoryMCP, tool: str, arguments: dict[str, Any]
) -> None:
    result = await mcp_client.call_tool(tool, arguments)

    assert not result.is_error, result.content
    payload = result.structured_content
    assert payload is not None
    model = RESULT_MODELS[tool].model_validate(payload)  # type: ignore[index]
    assert model.symbol == "AAPL"
    assert model.currency == "USD" or tool == "get_news"
    assert model.as_of is not None
    assert model.url.startswith("https://finance.yahoo.com/")
    assert "AAPL" in model.url
    assert model.summary_text().strip()


async def test_a_quote_carries_price_change_and_the_quote_page(mcp_client: InMemoryMCP) -> None:
    payload = (await mcp_client.call_tool("get_quote", {"symbol": "aapl"})).structured_content

    assert payload["url"] == "https://finance.yahoo.com/quote/AAPL"
    assert payload["price"] == pytest.approx(196.45)
    assert payload["change"] == pytest.approx(payload["price"] - payload["previous_close"])
    assert payload["change_percent"] == pytest.approx(payload["change"] / payload["previous_close"] * 100)


async def test_an_income_statement_drops_empty_periods_and_lists_newest_first(mcp_client: InMemoryMCP) -> None:
    payload = (
        await mcp_client.call_tool("get_financial_statement", {"symbol": "AAPL", "statement": "income"})
    ).structured_content

    assert payload["periods"] == ["2024-09-28", "2023-09-30", "2022-09-24", "2021-09-25"]
    lines = {line["name"]: line["values"] for line in payload["lines"]}
    assert lines["TotalRevenue"][0] == pytest.approx(391_035e6)
    assert lines["TaxEffectOfUnusualItems"][-1] is None
    assert payload["as_of"].startswith("2024-09-28")
    assert payload["url"] == "https://finance.yahoo.com/quote/AAPL/financials"


async def test_earnings_split_into_upcoming_and_reported(mcp_client: InMemoryMCP) -> None:
    payload = (await mcp_client.call_tool("get_earnings", {"symbol": "AAPL"})).structured_content

    assert [event["date"][:10] for event in payload["upcoming"]] == ["2025-07-31", "2025-10-30"]
    assert payload["reported"][0]["date"].startswith("2025-05-01")
    assert payload["reported"][0]["eps_reported"] == pytest.approx(1.65)


async def test_analyst_ratings_carry_trend_targets_and_recent_changes(mcp_client: InMemoryMCP) -> None:
    payload = (await mcp_client.call_tool("get_analyst_ratings", {"symbol": "AAPL"})).structured_content

    assert payload["trend"][0] == {"period": "0m", "strong_buy": 7, "buy": 21, "hold": 14, "sell": 2, "strong_sell": 1}
    assert payload["price_target"]["mean"] == pytest.approx(round(196.45 * 1.16, 2))
    dates = [change["date"] for change in payload["recent_changes"]]
    assert len(dates) == 10 and dates == sorted(dates, reverse=True)
    assert payload["recent_changes"][0]["from_grade"] is not None or payload["recent_changes"][0]["action"]


async def test_a_long_history_is_down_sampled_with_a_note(mcp_client: InMemoryMCP) -> None:
    payload = (await mcp_client.call_tool("get_price_history", {"symbol": "AAPL", "period": "max"})).structured_content

    assert payload["total_bars"] == 5000
    assert len(payload["bars"]) == MAX_HISTORY_BARS
    assert payload["downsampled"] is True
    assert any("Down-sampled from 5000 to 250 bars" in note for note in payload["notes"])
    assert payload["bars"][-1]["date"].startswith("2025-06-13")
    assert payload["last_close"] == pytest.approx(196.45)


async def test_a_short_history_is_returned_whole(mcp_client: InMemoryMCP) -> None:
    payload = (await mcp_client.call_tool("get_price_history", {"symbol": "AAPL", "period": "1mo"})).structured_content

    assert payload["total_bars"] == len(payload["bars"]) == 21
    assert payload["downsampled"] is False and payload["notes"] == []


async def test_the_end_date_is_inclusive(mcp_client: InMemoryMCP) -> None:
    payload = (
        await mcp_client.call_tool("get_price_history", {"symbol": "AAPL", "start": "2025-06-02", "end": "2025-06-06"})
    ).structured_content

    days = [bar["date"][:10] for bar in payload["bars"]]
    assert days == ["2025-06-02", "2025-06-03", "2025-06-04", "2025-06-05", "2025-06-06"]
    assert payload["end"] == "2025-06-06" and payload["period"] is None


async def test_news_is_capped_with_a_note(mcp_client: InMemoryMCP) -> None:
    payload = (await mcp_client.call_tool("get_news", {"symbol": "AAPL", "limit": 50})).structured_content

    assert len(payload["items"]) == MAX_NEWS_ITEMS
    assert payload["notes"] == [f"Capped at {MAX_NEWS_ITEMS} items; 50 were asked for."]
    assert payload["items"][0]["url"].startswith("https://finance.yahoo.com/news/")


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("get_quote", {"symbol": "NANS"}),
        ("get_price_history", {"symbol": "NANS"}),
        ("get_financial_statement", {"symbol": "NANS", "statement": "income"}),
        ("get_company_profile", {"symbol": "NANS"}),
    ],
)
async def test_nan_and_inf_never_reach_json(mcp_client: InMemoryMCP, tool: str, arguments: dict[str, Any]) -> None:
    result = await mcp_client.call_tool(tool, arguments)

    assert not result.is_error
    # Strict JSON: Python's encoder would otherwise write NaN and Infinity.
    text = json.dumps(result.structured_content, allow_nan=False)
    assert "NaN" not in text_of(result) and "Infinity" not in text_of(result)
    assert text


async def test_nan_figures_become_null(mcp_client: InMemoryMCP) -> None:
    quote = (await mcp_client.call_tool("get_quote", {"symbol": "NANS"})).structured_content
    assert quote["day_high"] is None and quote["day_low"] is None and quote["market_cap"] is None
    assert math.isfinite(quote["price"])


@pytest.mark.parametrize(("tool", "arguments"), TOOL_CALLS)
async def test_an_empty_answer_is_no_data_not_zero(
    mcp_client: InMemoryMCP, tool: str, arguments: dict[str, Any]
) -> None:
    result = await mcp_client.call_tool(tool, {**arguments, "symbol": "EMPTY"})

    code, text = error_of(result)
    assert code == "no_data"
    assert "EMPTY" in text


@pytest.mark.parametrize(
    ("symbol", "code"),
    ERROR_CASES,
)
async def test_each_failure_is_an_error_result_with_its_code(mcp_client: InMemoryMCP, symbol: str, code: str) -> None:
    result = await mcp_client.call_tool("get_quote", {"symbol": symbol})

    assert error_of(result)[0] == code


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("get_financial_statement", {"symbol": "AAPL", "statement": "bogus"}),
        ("get_financial_statement", {"symbol": "AAPL", "statement": "balance", "frequency": "ttm"}),
        ("get_price_history", {"symbol": "AAPL", "period": "7mo"}),
        ("get_price_history", {"symbol": "AAPL", "start": "2025-06-06", "end": "2025-06-02"}),
        ("get_price_history", {"symbol": "AAPL", "start": "last tuesday"}),
        ("get_news", {"symbol": "AAPL", "limit": "many"}),
    ],
)
async def test_bad_arguments_are_one_sentence_invalid_argument_errors(
    mcp_client: InMemoryMCP, tool: str, arguments: dict[str, Any]
) -> None:
    result = await mcp_client.call_tool(tool, arguments)

    code, text = error_of(result)
    assert code == "invalid_argument"
    assert "pydantic" not in text and "validation error" not in text


@pytest.mark.parametrize(
    ("tool", "arguments", "figures"),
    [
        ("get_financial_statement", {"symbol": "NOINFO", "statement": "income"}, "lines"),
        ("get_earnings", {"symbol": "NOINFO"}, "reported"),
    ],
)
async def test_a_failed_currency_lookup_leaves_the_currency_empty_not_the_figures(
    mcp_client: InMemoryMCP, tool: str, arguments: dict[str, Any], figures: str
) -> None:
    result = await mcp_client.call_tool(tool, arguments)

    assert not result.is_error, result.content
    assert result.structured_content["currency"] is None
    assert result.structured_content[figures]


@pytest.mark.parametrize(("tool", "arguments"), TOOL_CALLS)
async def test_a_well_formed_symbol_yahoo_does_not_know_is_no_data_for_every_tool(
    mcp_client: InMemoryMCP, tool: str, arguments: dict[str, Any]
) -> None:
    result = await mcp_client.call_tool(tool, {**arguments, "symbol": "NOSUCH"})

    code, text = error_of(result)
    assert code == "no_data" and "NOSUCH" in text


@pytest.mark.parametrize(("tool", "arguments"), TOOL_CALLS)
async def test_a_malformed_symbol_is_invalid_symbol_for_every_tool_without_asking_yahoo(
    mcp_client: InMemoryMCP, fake_yahoo: FakeYahoo, tool: str, arguments: dict[str, Any]
) -> None:
    result = await mcp_client.call_tool(tool, {**arguments, "symbol": "AAPL; DROP"})

    assert error_of(result)[0] == "invalid_symbol"
    assert fake_yahoo.calls == []


async def test_an_unknown_symbols_quote_is_no_data_not_yfinances_key_error(mcp_client: InMemoryMCP) -> None:
    # yfinance's fast_info raises KeyError('currentTradingPeriod') for it, which was once an upstream_error.
    result = await mcp_client.call_tool("get_quote", {"symbol": "nosuch"})

    assert error_of(result) == (
        "no_data",
        "no_data: Yahoo Finance has no quote for NOSUCH; the symbol may be unknown or delisted.",
    )


async def test_an_unexpected_failure_is_one_sentence_not_a_traceback(
    adapter: YahooFinanceAdapter, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken_quote(symbol: str) -> None:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(adapter, "quote", broken_quote)

    result = await InMemoryMCP(build_server(adapter)).call_tool("get_quote", {"symbol": "AAPL"})

    assert error_of(result) == ("upstream_error", "upstream_error: The get_quote tool failed; try again shortly.")


async def test_an_unknown_tool_is_an_invalid_argument_error(mcp_client: InMemoryMCP) -> None:
    result = await mcp_client.call_tool("nope", {"symbol": "AAPL"})

    assert error_of(result) == ("invalid_argument", "invalid_argument: There is no tool named 'nope'.")


async def test_a_timed_out_call_does_not_block_the_others(mcp_client: InMemoryMCP) -> None:
    hung = await mcp_client.call_tool("get_quote", {"symbol": "HANG"})
    fine = await mcp_client.call_tool("get_quote", {"symbol": "MSFT"})

    assert error_of(hung)[0] == "timeout"
    assert not fine.is_error
