"""The process-wide MCP session to the market data server, and `fetch_market_data`, the route of numerical
sub-questions.

anyio requires a session to be entered and exited in the same task, while research runs call from many
tasks and from whatever event loop they live on (the ASGI server's, a management command's, a test's). So
the session belongs to one task on a private event loop thread; callers submit their calls to that loop and
the calls run concurrently on the one session. The session opens on the first call; if the server dies, the
next call restarts it once, and a second failure is a named `MarketDataUnavailable`.

The server is our stdio child by default; with `MARKET_DATA_MCP_URL` set, the process-wide client connects to
that streamable HTTP server instead (the server run as its own service, shared by every app process).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import re
import sys
import threading
from collections.abc import Coroutine, Mapping
from concurrent.futures import Future as ConcurrentFuture
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, get_args
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult

from datascraper.market_data.errors import (
    MarketDataError,
    MarketDataTimeout,
    MarketDataUnavailable,
    MarketDataUpstreamError,
)
from datascraper.market_data.schemas import (
    ErrorCode,
    MarketDataFinding,
    ToolFailure,
    ToolName,
    ToolResult,
)
from datascraper.models_config import get_research_config
from datascraper.schemas import MarketDataKind

logger = logging.getLogger(__name__)

ServerTarget = MCPServer | StdioServerParameters | str
"""The server object (in-process, for tests), a stdio command, or a streamable HTTP URL."""

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONNECT_TIMEOUT_S = 30.0
# Time for the session task to close the transport; the SDK bounds a stdio server's shutdown at ~6 s.
_CLOSE_TIMEOUT_S = 10.0
MAX_TICKERS = 10
_ERROR_CODES: frozenset[str] = frozenset(get_args(ErrorCode))
_SECRET_NAME = re.compile("KEY|SECRET|TOKEN|PASSWORD", re.IGNORECASE)

T = TypeVar("T")

# data kind -> (tool, extra arguments, label for the citation title)
_ROUTES: dict[MarketDataKind, tuple[ToolName, dict[str, str], str]] = {
    "quote": ("get_quote", {}, "quote"),
    "price_history": ("get_price_history", {"period": "1mo"}, "price history (1 month)"),
    "income_statement": (
        "get_financial_statement",
        {"statement": "income", "frequency": "annual"},
        "income statement (annual)",
    ),
    "balance_sheet": (
        "get_financial_statement",
        {"statement": "balance", "frequency": "annual"},
        "balance sheet (annual)",
    ),
    "cash_flow": (
        "get_financial_statement",
        {"statement": "cash_flow", "frequency": "annual"},
        "cash flow statement (annual)",
    ),
    "earnings": ("get_earnings", {}, "earnings"),
    "analyst_ratings": ("get_analyst_ratings", {}, "analyst ratings"),
    "company_profile": ("get_company_profile", {}, "company profile"),
    "news": ("get_news", {}, "news"),
}


MARKET_DATA_MCP_URL_VARIABLE = "MARKET_DATA_MCP_URL"


def default_server_target() -> ServerTarget:
    """The server `MARKET_DATA_MCP_URL` names (streamable HTTP), or else our server as a stdio child.

    Raises:
        MarketDataUnavailable: the variable is set but is not an http(s) URL; its value is not repeated,
            since a URL may carry credentials.
    """
    url = os.environ.get(MARKET_DATA_MCP_URL_VARIABLE, "").strip()
    if not url:
        return default_server_parameters()
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise MarketDataUnavailable(
            f"{MARKET_DATA_MCP_URL_VARIABLE} must be an http(s) URL such as http://127.0.0.1:8765/mcp."
        )
    return url


def default_server_parameters() -> StdioServerParameters:
    """Our server as a stdio child of this interpreter, with this process's environment minus its secrets.

    The SDK gives a stdio child only a handful of variables unless `env` is passed; the server needs
    DJANGO_SETTINGS_MODULE and REDIS_URL to share the app's cache, but no API key or signing secret.
    """
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "datascraper.mcp_server"],
        env=child_environment(os.environ),
        cwd=PROJECT_ROOT,
    )


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without the variables whose name marks a secret (…KEY, …SECRET, …TOKEN, …PASSWORD)."""
    return {name: value for name, value in environ.items() if not _SECRET_NAME.search(name)}


@dataclass
class _Session:
    client: Client
    stop: asyncio.Event
    task: asyncio.Task[None]


class MarketDataClient:
    """One long-lived MCP session, shared by every caller in the process.

    Safe to call from any task, event loop or thread; `close()` ends the session and, for a stdio target,
    the server process. Without a target: `default_server_target()`.
    """

    def __init__(
        self,
        target: ServerTarget | None = None,
        *,
        call_timeout_s: float | None = None,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    ) -> None:
        self.target: ServerTarget = target if target is not None else default_server_target()
        self.call_timeout_s = (
            call_timeout_s if call_timeout_s is not None else get_research_config().market_data_timeout_s
        )
        self.connect_timeout_s = connect_timeout_s
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        # Touched only on the owner loop.
        self._active: _Session | None = None
        self._opening: asyncio.Task[_Session] | None = None
        self._calls: set[asyncio.Task[Any]] = set()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, timeout_s: float | None = None
    ) -> CallToolResult:
        """Call one tool. A tool failure is an `is_error` result, not an exception.

        Raises:
            MarketDataTimeout: no answer within the timeout (the session opening included).
            MarketDataUnavailable: the server cannot be reached, even after one restart.
            MarketDataUpstreamError: the server answered with a protocol error.
        """
        timeout = timeout_s if timeout_s is not None else self.call_timeout_s
        submitted = self._submit(self._call(name, arguments, timeout))
        try:
            return await asyncio.wait_for(asyncio.wrap_future(submitted), timeout)
        except TimeoutError:
            raise MarketDataTimeout(f"The market data server did not answer {name} within {timeout:g} s.") from None

    def close(self) -> None:
        """End the session and its server process, then the owner thread. Idempotent; blocks."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._closed = True
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        if threading.current_thread() is thread:
            raise RuntimeError("MarketDataClient.close() cannot run on its own owner loop.")
        try:
            shutdown = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            shutdown.result(timeout=self.connect_timeout_s + 2 * _CLOSE_TIMEOUT_S)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            if not thread.is_alive():
                loop.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    # --- the owner loop -----------------------------------------------------------------------------

    def _submit(self, coroutine: Coroutine[Any, Any, T]) -> ConcurrentFuture[T]:
        with self._lock:
            if self._closed:
                coroutine.close()
                raise MarketDataUnavailable("The market data client is closed.")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="market-data-mcp", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    async def _call(self, name: str, arguments: dict[str, Any], timeout: float) -> CallToolResult:
        call = asyncio.current_task()
        assert call is not None
        self._calls.add(call)
        call.add_done_callback(_retrieve_exception)  # its caller may have given up already
        try:
            return await self._call_with_one_restart(name, arguments, timeout)
        except asyncio.CancelledError:
            if self._closed:  # cancelled by close(), not by the caller
                raise MarketDataUnavailable("The market data client closed during the call.") from None
            raise
        finally:
            self._calls.discard(call)

    async def _call_with_one_restart(self, name: str, arguments: dict[str, Any], timeout: float) -> CallToolResult:
        session = await self._session()
        try:
            return await self._send(session, name, arguments, timeout)
        except _ConnectionLost as lost:
            logger.warning("The market data server went away (%s); restarting it.", lost)
        session = await self._restart(session)
        try:
            return await self._send(session, name, arguments, timeout)
        except _ConnectionLost as lost:
            raise MarketDataUnavailable("The market data server stopped again after a restart.") from lost

    async def _send(self, session: _Session, name: str, arguments: dict[str, Any], timeout: float) -> CallToolResult:
        try:
            return await session.client.call_tool(name, arguments, read_timeout_seconds=timeout)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise _ConnectionLost(str(exc)) from exc
            if exc.code == REQUEST_TIMEOUT:
                raise MarketDataTimeout(f"The market data server did not answer {name} within {timeout:g} s.") from exc
            raise MarketDataUpstreamError(f"The market data server rejected {name}: {exc.message}") from exc
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as exc:
            raise _ConnectionLost(repr(exc)) from exc
        except httpx2.TransportError as exc:
            raise _ConnectionLost(repr(exc)) from exc

    async def _session(self) -> _Session:
        if self._closed:
            # Calls cut off by close() must not start a new server while it shuts the old one down.
            raise MarketDataUnavailable("The market data client is closed.")
        if self._active is not None:
            return self._active
        if self._opening is None:
            self._opening = asyncio.create_task(self._open())
            self._opening.add_done_callback(_retrieve_exception)
        # Shielded: a caller that gives up must not abort an opening other callers wait for.
        return await asyncio.shield(self._opening)

    async def _open(self) -> _Session:
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        task = asyncio.create_task(self._own_session(ready, stop), name="market-data-mcp-session")
        try:
            client = await asyncio.wait_for(asyncio.shield(ready), self.connect_timeout_s)
        except TimeoutError:
            task.cancel()
            await asyncio.wait([task], timeout=_CLOSE_TIMEOUT_S)
            raise MarketDataUnavailable(
                f"The market data server did not start within {self.connect_timeout_s:g} s."
            ) from None
        finally:
            self._opening = None
        self._active = _Session(client=client, stop=stop, task=task)
        return self._active

    async def _own_session(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        """Enter the session, hold it until told to stop, exit it: all in this one task."""
        try:
            async with Client(self.target, read_timeout_seconds=self.call_timeout_s) as client:
                ready.set_result(client)
                await stop.wait()
        except Exception as exc:
            if not ready.done():
                failure = MarketDataUnavailable("The market data server could not be started.")
                failure.__cause__ = exc
                ready.set_exception(failure)
            else:
                logger.warning("The market data session ended with an error: %r", exc)

    async def _restart(self, dead: _Session) -> _Session:
        # Concurrent calls that lost the same session share one restart.
        if self._active is dead:
            self._active = None
            await self._end(dead)
        return await self._session()

    async def _end(self, session: _Session) -> None:
        session.stop.set()
        _, pending = await asyncio.wait([session.task], timeout=_CLOSE_TIMEOUT_S)
        for task in pending:
            task.cancel()

    async def _shutdown(self) -> None:
        calls = list(self._calls)
        for call in calls:
            call.cancel()
        if calls:
            await asyncio.wait(calls, timeout=_CLOSE_TIMEOUT_S)
        if self._opening is not None:
            await asyncio.wait([self._opening], timeout=self.connect_timeout_s)
        if self._active is not None:
            session, self._active = self._active, None
            await self._end(session)


class _ConnectionLost(Exception):
    """The session's transport is gone: the server process died or the connection broke."""


def _retrieve_exception(task: asyncio.Task[Any]) -> None:
    # Every waiter may have given up; retrieving the exception keeps asyncio from logging it as lost.
    if not task.cancelled():
        task.exception()


# --- the process-wide client ------------------------------------------------------------------------

_client: MarketDataClient | None = None
_client_lock = threading.Lock()


def get_market_data_client() -> MarketDataClient:
    """The process-wide client of `default_server_target()`: a stdio server starts on the first call and
    stops at exit; an HTTP server (`MARKET_DATA_MCP_URL`) is only connected to."""
    global _client
    with _client_lock:
        if _client is None:
            _client = MarketDataClient()
            atexit.register(_client.close)
        return _client


def set_market_data_client(client: MarketDataClient | None) -> MarketDataClient | None:
    """Install `client` as the process-wide one and return the previous one, which the caller closes.

    Tests point the process at `MarketDataClient(build_server(...))` (in-memory) or at a stdio command
    running the fake yfinance.
    """
    global _client
    with _client_lock:
        previous, _client = _client, client
        return previous


async def close_market_data_client() -> None:
    """Stop the process-wide session and its server; the next call starts a fresh one."""
    client = set_market_data_client(None)
    if client is not None:
        await client.aclose()


# --- the route of numerical sub-questions ------------------------------------------------------------


async def fetch_market_data(
    tickers: list[str],
    data: MarketDataKind,
    *,
    question: str = "",
    timeout_s: float | None = None,
) -> MarketDataFinding:
    """Fetch `data` for each ticker, one tool call per ticker, concurrently.

    A ticker's failure (bad symbol, no data, rate limit, timeout) is recorded in `errors` and the other
    tickers still count; only an unreachable server raises `MarketDataUnavailable`.
    """
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
    tool, arguments, label = _ROUTES[data]
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
        elif outcome.is_error or outcome.structured_content is None:
            finding.errors.append(_tool_failure(symbol, outcome))
        else:
            payload = outcome.structured_content
            finding.results.append(
                ToolResult(
                    symbol=payload["symbol"],
                    tool=tool,
                    data=payload,
                    as_of=payload.get("as_of"),
                    url=payload["url"],
                    title=f"Yahoo Finance — {payload['symbol']} {label}",
                )
            )
    return finding


def _tool_failure(symbol: str, result: CallToolResult) -> ToolFailure:
    """The code and sentence of an `isError` result, whose text our server writes as `<code>: <sentence>`."""
    text = " ".join(block.text for block in result.content if block.type == "text").strip()
    code, _, message = text.partition(": ")
    if code in _ERROR_CODES and message:
        return ToolFailure(symbol=symbol, code=code, message=message)
    return ToolFailure(symbol=symbol, code="upstream_error", message=text.splitlines()[0][:200] if text else "")
