"""The process-wide market data client: one per process, started as the process starts serving (or on the
first call), replaced by tests, closed at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
from concurrent.futures import Future as ConcurrentFuture

from datascraper.market_data.errors import MarketDataError
from datascraper.models_config import get_research_config
from datascraper.research_engine.data.session import MarketDataClient

logger = logging.getLogger(__name__)

_client: MarketDataClient | None = None
_client_lock = threading.Lock()


def get_market_data_client() -> MarketDataClient:
    """The process-wide client of `default_server_target()`: a stdio server starts on warm-up or the first
    call and stops at exit; an HTTP server (`MARKET_DATA_MCP_URL`) is only connected to."""
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


def warm_up_market_data() -> ConcurrentFuture[bool] | None:
    """Start the process-wide server in the background, so that the first question does not wait for it.

    Called as a process starts (`manage.py ask`; serving processes wait for it: `start_market_data`); off
    with `MARKET_DATA_WARM_START=0`. Returns at once, with the start's future (None: not started), and
    never raises: a failure is logged, and the first call tries again.
    """
    if not get_research_config().market_data_warm_start:
        return None
    try:
        return get_market_data_client().start()
    except MarketDataError as exc:
        logger.warning("The market data server was not started ahead of use: %s", exc.message)
        return None


async def start_market_data() -> bool:
    """Start the process-wide server and wait until it answers, at most `MARKET_DATA_WARM_TIMEOUT`: what a
    serving process does before it accepts its first question (the ASGI lifespan, `runworker`).

    True once the session is open. Past the bound the process serves anyway, and the start goes on in
    the background (the first market-data call waits for the rest of it); a failed start is logged and
    the first call tries again. Never raises.
    """
    started = warm_up_market_data()
    if started is None:
        return False
    bound = get_research_config().market_data_warm_timeout_s
    # asyncio.wait, not wait_for: past the bound the start must go on, not be cancelled.
    waiting = asyncio.wrap_future(started)
    done, _ = await asyncio.wait({waiting}, timeout=bound)
    if not done:
        logger.warning(
            "The market data server is not up after %g s (MARKET_DATA_WARM_TIMEOUT); serving anyway, the first "
            "market-data call waits for it.",
            bound,
        )
        return False
    if waiting.cancelled():  # the client was closed meanwhile
        return False
    if waiting.exception() is not None:
        logger.warning("The market data server did not start.", exc_info=waiting.exception())
        return False
    return waiting.result()
