"""The process-wide MCP session to the market data server: its lifecycle (start, watch, restart, close).

anyio requires a session to be entered and exited in the same task, while research runs call from many
tasks and from whatever event loop they live on (the ASGI server's, a management command's, a test's). So
the session belongs to one task on a private event loop thread; callers submit their calls to that loop and
the calls run concurrently on the one session.

The session opens when the process starts serving (`warm_up_market_data`: the ASGI lifespan, `runworker`,
`manage.py ask`), so the first question does not wait for the server, or else on the first call. While it is
open, a watch probes the server every `health_interval_s`, and a call that times out probes it at once; a
server that does not answer within `health_timeout_s` (hung: alive but silent) or is gone is retired and a
fresh one started. Retiring ends the session in the background: the SDK's bounded shutdown closes stdin, then
sends SIGTERM after 2 s and SIGKILL after 4 s. A call whose server dies is retried once on a fresh server, and
a second loss is a named `MarketDataUnavailable`; a call whose server was retired as hung is not retried (it
may be what hung it) and fails with `MarketDataTimeout`. Starts back off: from the second failure in a row
(a server lost, or one that could not start), the next start waits 0.5 s, then 1, 2, ... up to 30 s, and calls
in that window fail fast with `MarketDataUnavailable`, so a crash-looping server does not spin.

Which server the session reaches is `server_target.py`; the process-wide client, `market_data_client.py`;
what research asks of the server (tools per data kind, periods, the cut to the periods asked),
`market_data.py` and `filings.py`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from concurrent.futures import Future as ConcurrentFuture
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult

from datascraper.market_data.errors import (
    MarketDataError,
    MarketDataTimeout,
    MarketDataUnavailable,
    MarketDataUpstreamError,
)
from datascraper.models_config import get_research_config
from datascraper.research_engine.data.server_target import ServerTarget, default_server_target

logger = logging.getLogger(__name__)


DEFAULT_CONNECT_TIMEOUT_S = 30.0
# Time for the session task to close the transport; the SDK bounds a stdio server's shutdown at ~6 s.
_CLOSE_TIMEOUT_S = 10.0
# Restart backoff: the first start after a failure is immediate, then this doubles per failure in a row.
DEFAULT_RESTART_BACKOFF_S = 0.5
MAX_RESTART_BACKOFF_S = 30.0

T = TypeVar("T")


@dataclass
class _Session:
    client: Client
    stop: asyncio.Event
    task: asyncio.Task[None]
    # Set when the session is retired for not answering a health check: its calls in flight are not retried.
    hung: bool = False
    check: asyncio.Task[bool] | None = None


class MarketDataClient:
    """One long-lived MCP session, shared by every caller in the process.

    Safe to call from any task, event loop or thread; `close()` ends the session and, for a stdio target,
    the server process. Without a target: `default_server_target()`; unset timings come from the research
    configuration.
    """

    def __init__(
        self,
        target: ServerTarget | None = None,
        *,
        call_timeout_s: float | None = None,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        health_interval_s: float | None = None,
        health_timeout_s: float | None = None,
        restart_backoff_s: float = DEFAULT_RESTART_BACKOFF_S,
    ) -> None:
        config = get_research_config()
        self.target: ServerTarget = target if target is not None else default_server_target()
        self.call_timeout_s = call_timeout_s if call_timeout_s is not None else config.market_data_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.health_interval_s = (
            health_interval_s if health_interval_s is not None else config.market_data_health_interval_s
        )
        self.health_timeout_s = (
            health_timeout_s if health_timeout_s is not None else config.market_data_health_timeout_s
        )
        self.restart_backoff_s = restart_backoff_s
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        # Touched only on the owner loop.
        self._active: _Session | None = None
        self._opening: asyncio.Task[_Session] | None = None
        self._calls: set[asyncio.Task[Any]] = set()
        self._watch: asyncio.Task[None] | None = None
        self._checks: set[asyncio.Task[bool]] = set()
        self._retiring: set[asyncio.Task[None]] = set()
        self._failures = 0  # servers lost or not started, in a row
        self._retry_at = 0.0  # owner loop time before which no server is started

    def start(self) -> ConcurrentFuture[bool]:
        """Start the server now, in the background, so that the first call finds it running. Returns at once.

        The future tells whether the session opened; a failed start is logged, and the next call tries again.
        """
        return self._submit(self._warm_up())

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, timeout_s: float | None = None
    ) -> CallToolResult:
        """Call one tool. A tool failure is an `is_error` result, not an exception.

        Raises:
            MarketDataTimeout: no answer within the timeout (the session opening included), or the server
                stopped answering during the call.
            MarketDataUnavailable: the server cannot be reached, even after one restart, or it is failing
                and its next start is not due yet.
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

    async def _warm_up(self) -> bool:
        try:
            await self._session()
        except MarketDataError as exc:
            cause = f" ({exc.__cause__!r})" if exc.__cause__ is not None else ""
            logger.warning("The market data server did not start: %s%s; the next call tries again.", exc.message, cause)
            return False
        return True

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
            self._on_lost(session, name, lost)
            logger.warning("The market data server went away (%s); restarting it.", lost)
        session = await self._session()
        try:
            return await self._send(session, name, arguments, timeout)
        except _ConnectionLost as lost:
            self._on_lost(session, name, lost)
            raise MarketDataUnavailable("The market data server stopped again after a restart.") from lost

    def _on_lost(self, session: _Session, name: str, lost: _ConnectionLost) -> None:
        """Retire a session whose call lost the connection; if it was retired as hung, fail the call."""
        if session.hung:
            raise MarketDataTimeout(
                f"The market data server stopped answering during {name}; it is being restarted."
            ) from lost
        self._retire(session, hung=False)

    async def _send(self, session: _Session, name: str, arguments: dict[str, Any], timeout: float) -> CallToolResult:
        try:
            result = await session.client.call_tool(name, arguments, read_timeout_seconds=timeout)
        except asyncio.CancelledError:
            # Usually the caller's deadline: a silent server shows first as calls that time out.
            self._check_soon(session)
            raise
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise _ConnectionLost(str(exc)) from exc
            if exc.code == REQUEST_TIMEOUT:
                self._check_soon(session)
                raise MarketDataTimeout(f"The market data server did not answer {name} within {timeout:g} s.") from exc
            raise MarketDataUpstreamError(f"The market data server rejected {name}: {exc.message}") from exc
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as exc:
            raise _ConnectionLost(repr(exc)) from exc
        except httpx2.TransportError as exc:
            raise _ConnectionLost(repr(exc)) from exc
        self._failures = 0
        return result

    async def _session(self) -> _Session:
        if self._closed:
            # Calls cut off by close() must not start a new server while it shuts the old one down.
            raise MarketDataUnavailable("The market data client is closed.")
        if self._active is not None:
            return self._active
        if self._opening is None:
            wait = self._retry_at - asyncio.get_running_loop().time()
            if wait > 0:
                raise MarketDataUnavailable(f"The market data server keeps failing; the next start is in {wait:.1f} s.")
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
            self._note_failure()
            raise MarketDataUnavailable(
                f"The market data server did not start within {self.connect_timeout_s:g} s."
            ) from None
        except MarketDataUnavailable:
            self._note_failure()
            raise
        finally:
            self._opening = None
        self._active = _Session(client=client, stop=stop, task=task)
        if self._watch is None:
            self._watch = asyncio.create_task(self._watch_health(), name="market-data-mcp-watch")
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

    def _note_failure(self) -> None:
        """One more server lost or not started in a row: from the second, the next start waits (backoff)."""
        self._failures += 1
        doublings = min(self._failures - 2, 16)  # capped: the delay is capped long before, the float is not
        delay = 0.0 if self._failures == 1 else min(self.restart_backoff_s * 2**doublings, MAX_RESTART_BACKOFF_S)
        self._retry_at = asyncio.get_running_loop().time() + delay

    def _retire(self, session: _Session, *, hung: bool) -> None:
        """Take the session out of service (once, whoever notices first) and end it in the background: ending
        a hung stdio server takes the SDK up to ~4 s (SIGTERM, then SIGKILL), which no caller waits for."""
        if self._active is not session:
            return
        self._active = None
        session.hung = hung
        self._note_failure()
        ending = asyncio.create_task(self._end(session), name="market-data-mcp-retire")
        self._retiring.add(ending)
        ending.add_done_callback(self._retiring.discard)

    # --- the health check -----------------------------------------------------------------------------

    async def _watch_health(self) -> None:
        """Check the open session every `health_interval_s`, for as long as the client lives."""
        while True:
            await asyncio.sleep(self.health_interval_s)
            if self._active is not None:
                check = self._check_soon(self._active)
                if check is not None:
                    await asyncio.wait([check])

    def _check_soon(self, session: _Session) -> asyncio.Task[bool] | None:
        """The session's health check: the one under way, or a new one. None once the session is retired."""
        if self._closed or self._active is not session:
            return None
        if session.check is None or session.check.done():
            session.check = asyncio.create_task(self._check(session), name="market-data-mcp-health")
            self._checks.add(session.check)
            session.check.add_done_callback(self._checks.discard)
        return session.check

    async def _check(self, session: _Session) -> bool:
        """Probe the server once within `health_timeout_s`. One that does not answer, or is gone, is retired
        and a fresh server started (its failure is logged: the next call tries again)."""
        hung = True
        try:
            await asyncio.wait_for(_probe(session.client), self.health_timeout_s)
        except TimeoutError:
            reason = f"did not answer a health check within {self.health_timeout_s:g} s"
        except MCPError as exc:
            if exc.code not in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
                self._failures = 0  # any answer, an error included, shows a live server
                return True
            hung, reason = exc.code == REQUEST_TIMEOUT, f"failed its health check ({exc.message})"
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as exc:
            hung, reason = False, f"went away ({exc!r})"
        except httpx2.TransportError as exc:
            hung, reason = False, f"went away ({exc!r})"
        else:
            self._failures = 0
            return True
        if self._active is session:
            logger.warning("The market data server %s; restarting it.", reason)
            self._retire(session, hung=hung)
            await self._warm_up()
        return False

    async def _end(self, session: _Session) -> None:
        session.stop.set()
        _, pending = await asyncio.wait([session.task], timeout=_CLOSE_TIMEOUT_S)
        for task in pending:
            task.cancel()

    async def _shutdown(self) -> None:
        background = [*self._calls, *self._checks]
        for task in background:
            task.cancel()
        if background:
            await asyncio.wait(background, timeout=_CLOSE_TIMEOUT_S)
        if self._opening is not None:
            await asyncio.wait([self._opening], timeout=self.connect_timeout_s)
        if self._watch is not None:  # only now: an opening that completes above starts it
            self._watch.cancel()
            await asyncio.wait([self._watch])
        if self._active is not None:
            session, self._active = self._active, None
            await self._end(session)
        if self._retiring:
            await asyncio.wait(list(self._retiring), timeout=_CLOSE_TIMEOUT_S)


async def _probe(client: Client) -> None:
    """One round trip that only a live server answers: `server/discover` on a 2026-era session (which has no
    `ping`), `ping` on a handshake-era one. Uncached, unlike the listings."""
    session = client.session
    if session.discover_result is not None:
        await session.send_discover(client.protocol_version)
    else:
        await session.send_ping()


class _ConnectionLost(Exception):
    """The session's transport is gone: the server process died or the connection broke."""


def _retrieve_exception(task: asyncio.Task[Any]) -> None:
    # Every waiter may have given up; retrieving the exception keeps asyncio from logging it as lost.
    if not task.cancelled():
        task.exception()
