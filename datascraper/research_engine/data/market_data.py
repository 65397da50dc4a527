"""What research asks of market data: `fetch_market_data`, the route of numerical sub-questions.

A sub-question's tickers, data kind and periods become one tool call per ticker on the process-wide session
(`session.py`), concurrently; what comes back is cut to the periods asked (and the earlier ones their growth
needs) and titled for its citation. The tools keep the contract's signatures: the periods are cut here.
"""

from __future__ import annotations

import asyncio
from typing import Any, get_args

from mcp_types import CallToolResult

from datascraper.market_data.errors import MarketDataError, MarketDataUnavailable
from datascraper.market_data.finding_schemas import MarketDataFinding, MarketDataRequest, ToolFailure, ToolResult
from datascraper.market_data.schemas import ErrorCode, ToolName
from datascraper.market_data.statement_schemas import Earnings, FinancialStatement
from datascraper.research_engine.data.market_data_client import get_market_data_client
from datascraper.schemas import MarketDataKind

MAX_TICKERS = 10
_ERROR_CODES: frozenset[str] = frozenset(get_args(ErrorCode))

# data kind -> (tool, fixed arguments, what the citation title calls it); the periods come from the request.
_ROUTES: dict[MarketDataKind, tuple[ToolName, dict[str, str], str]] = {
    "quote": ("get_quote", {}, "quote"),
    "price_history": ("get_price_history", {}, "price history"),
    "income_statement": ("get_financial_statement", {"statement": "income"}, "income statement"),
    "balance_sheet": ("get_financial_statement", {"statement": "balance"}, "balance sheet"),
    "cash_flow": ("get_financial_statement", {"statement": "cash_flow"}, "cash flow statement"),
    "earnings": ("get_earnings", {}, "earnings"),
    "analyst_ratings": ("get_analyst_ratings", {}, "analyst ratings"),
    "company_profile": ("get_company_profile", {}, "company profile"),
    "news": ("get_news", {}, "news"),
}


async def fetch_market_data(
    tickers: list[str],
    data: MarketDataKind,
    *,
    question: str = "",
    request: MarketDataRequest | None = None,
    timeout_s: float | None = None,
) -> MarketDataFinding:
    """Fetch `data` for each ticker over the periods of `request` (None: the tools' defaults), one tool call
    per ticker, concurrently.

    The tools return every period Yahoo has; statements and earnings are cut here to the periods asked
    for and the bases of their growth, so the tools keep the contract's signatures. A ticker's failure
    (bad symbol, no data, nothing in the periods asked, rate limit, timeout) is recorded in `errors` and the
    other tickers still count; only an unreachable server raises `MarketDataUnavailable`.
    """
    request = request if request is not None else MarketDataRequest()
    symbols = list(dict.fromkeys(ticker.strip().upper() for ticker in tickers if ticker.strip()))
    finding = MarketDataFinding(tickers=symbols[:MAX_TICKERS], data=data, question=question)
    if not symbols:
        finding.errors.append(
            ToolFailure(symbol="", code="invalid_symbol", message="The sub-question names no ticker symbol.")
        )
        return finding
    if len(symbols) > MAX_TICKERS:
        finding.errors.append(
            ToolFailure(
                symbol=", ".join(symbols[MAX_TICKERS:]),
                code="invalid_argument",
                message=f"Only the first {MAX_TICKERS} tickers of a sub-question are fetched.",
            )
        )
    tool, fixed_arguments, label = _ROUTES[data]
    arguments = {**fixed_arguments, **_period_arguments(tool, request)}
    client = get_market_data_client()
    outcomes = await asyncio.gather(
        *(client.call_tool(tool, {"symbol": symbol, **arguments}, timeout_s=timeout_s) for symbol in finding.tickers),
        return_exceptions=True,
    )
    for symbol, outcome in zip(finding.tickers, outcomes, strict=True):
        if isinstance(outcome, MarketDataError) and not isinstance(outcome, MarketDataUnavailable):
            finding.errors.append(ToolFailure(symbol=symbol, code=outcome.code, message=outcome.message))
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            _record(finding, symbol, outcome, tool, label, request)
    return finding


def _record(
    finding: MarketDataFinding,
    symbol: str,
    outcome: CallToolResult,
    tool: ToolName,
    label: str,
    request: MarketDataRequest,
) -> None:
    """One ticker's answer into `finding`: its result cut to the periods asked, or why there is none."""
    if outcome.is_error or outcome.structured_content is None:
        finding.errors.append(tool_failure(symbol, outcome))
        return
    payload = _covering(tool, outcome.structured_content, request)
    if payload is None:
        finding.errors.append(
            ToolFailure(symbol=symbol, code="no_data", message=_nothing_in_range(symbol, label, request))
        )
        return
    finding.results.append(
        ToolResult(
            symbol=payload["symbol"],
            tool=tool,
            data=payload,
            as_of=payload.get("as_of"),
            url=payload["url"],
            title=f"Yahoo Finance — {payload['symbol']} {label}{_periods_named(tool, payload, request)}",
        )
    )


_RANGE_WORDS = {
    "1d": "1 day", "5d": "5 days", "1mo": "1 month", "3mo": "3 months", "6mo": "6 months", "ytd": "year to date",
    "1y": "1 year", "2y": "2 years", "5y": "5 years", "10y": "10 years", "max": "all history",
}  # fmt: skip


def _period_arguments(tool: ToolName, request: MarketDataRequest) -> dict[str, Any]:
    """The request's periods as the tool's arguments; what it leaves unset is the tool's default."""
    if tool == "get_financial_statement":
        return {"frequency": request.frequency} if request.frequency else {}
    if tool == "get_price_history":
        arguments: dict[str, Any] = {
            "period": request.period,
            "start": request.start.isoformat() if request.start else None,
            "end": request.end.isoformat() if request.end else None,  # inclusive: the tool adds yfinance's day
            "interval": request.interval,
        }
        return {name: value for name, value in arguments.items() if value is not None}
    if tool == "get_news" and request.limit is not None:
        return {"limit": request.limit}
    return {}


def _sliced(request: MarketDataRequest) -> bool:
    return request.periods is not None or request.start is not None or request.end is not None


def _covering(tool: ToolName, payload: dict[str, Any], request: MarketDataRequest) -> dict[str, Any] | None:
    """The payload cut to the statements or reports asked for, and the earlier ones their growth is measured
    against (marked as such: `asked`), with the request's corrections among its notes (so the answer can say
    what was given instead); None when no period asked for is there.

    Statements asked for after the newest one reported (a quarter still running, or ended but not yet
    reported) give the newest one, with a note: the answer can then say what is known so far.
    """
    notes = list(request.corrections)
    if tool == "get_financial_statement" and _sliced(request):
        full = FinancialStatement.model_validate(payload)
        statement = full.covering(count=request.periods, start=request.start, end=request.end)
        if not statement.periods:
            if request.start is None or request.start <= full.periods[0]:
                return None
            statement = full.covering(count=1, start=None, end=None)
            notes.append(
                f"No {full.frequency} period from {request.start} to {request.end or 'today'} has been reported yet; "
                f"the latest one (ending {full.periods[0]}) is given instead."
            )
        payload = statement.model_dump(mode="json")
    elif tool == "get_earnings" and _sliced(request):
        earnings = Earnings.model_validate(payload).covering(
            count=request.periods, start=request.start, end=request.end
        )
        if not earnings.reported and not earnings.upcoming:
            return None
        payload = earnings.model_dump(mode="json")
    if notes:
        payload = {**payload, "notes": [*payload.get("notes", []), *notes]}
    return payload


def _periods_named(tool: ToolName, payload: dict[str, Any], request: MarketDataRequest) -> str:
    """The periods a result covers, for its citation title: ' (quarterly), 3 periods ending 2024-09-30 to
    2025-03-31, with 2 earlier for growth', ' (year to date, 2025-01-02 to 2025-06-13)'. The periods asked
    for are named; the bases kept for their growth are only counted."""
    if tool == "get_financial_statement":
        frequency, periods = payload["frequency"], payload["periods"]
        asked = periods[: payload.get("asked") or len(periods)]
        bases = _earlier_for_growth(len(periods) - len(asked))
        if frequency == "ttm":
            return f" (ttm), twelve months to {periods[0]}"
        if len(asked) == 1:
            return f" ({frequency}), period ending {asked[0]}{bases}"
        return f" ({frequency}), {len(asked)} periods ending {asked[-1]} to {asked[0]}{bases}"
    if tool == "get_price_history":
        first, last = payload["bars"][0]["date"][:10], payload["bars"][-1]["date"][:10]
        if payload.get("period"):
            span = f"{_RANGE_WORDS.get(payload['period'], payload['period'])}, {first} to {last}"
        else:
            span = f"{payload.get('start') or first} to {payload.get('end') or last}"
        bars = "" if payload["interval"] == "1d" else f", {payload['interval']} bars"
        return f" ({span}{bars})"
    if tool == "get_earnings" and _sliced(request) and payload["reported"]:
        reported = payload["reported"]
        asked = reported[: payload.get("asked") or len(reported)]
        bases = _earlier_for_growth(len(reported) - len(asked))
        return f" ({len(asked)} reports, {asked[-1]['date'][:10]} to {asked[0]['date'][:10]}{bases})"
    return ""


def _earlier_for_growth(count: int) -> str:
    return f", with {count} earlier for growth" if count else ""


def _nothing_in_range(symbol: str, label: str, request: MarketDataRequest) -> str:
    frequency = f"{request.frequency} " if request.frequency else ""
    span = f"between {request.start or 'the first'} and {request.end or 'the latest'}"
    return f"Yahoo Finance has no {frequency}{label} for {symbol} {span}."


def tool_failure(symbol: str, result: CallToolResult, codes: frozenset[str] = _ERROR_CODES) -> ToolFailure:
    """The code and sentence of an `isError` result, whose text our server writes as `<code>: <sentence>`;
    a code not among `codes` is an `upstream_error`."""
    text = " ".join(block.text for block in result.content if block.type == "text").strip()
    code, _, message = text.partition(": ")
    if code in codes and message:
        return ToolFailure(symbol=symbol, code=code, message=message)
    return ToolFailure(symbol=symbol, code="upstream_error", message=text.splitlines()[0][:200] if text else "")
