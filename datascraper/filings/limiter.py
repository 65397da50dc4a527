"""The shared request limiter: at most N requests in any window of W seconds to the SEC, from all our
processes together (`FilingsConfig.max_requests` and `limit_window_s` say why 10 in 2 seconds).

The SEC counts requests per client across machines and, past 10 a second, blocks for about ten minutes;
so the budget lives in Redis when `REDIS_URL` is set (every app process, worker and MCP server draws on
one moving window) and in the process otherwise. `limits` (a maintained library: moving window, async,
Redis through redis-py) keeps the window; this module only waits for a free slot.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from limits import RateLimitItemPerSecond
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import MovingWindowRateLimiter

from datascraper.filings.errors import FilingsTimeout

logger = logging.getLogger(__name__)

# One key for all of us: the SEC's budget is per operator, not per process or per host.
_NAMESPACE = "sec-edgar"
# The longest one request waits for a slot before giving up with a named timeout.
DEFAULT_MAX_WAIT_S = 15.0


class RequestLimiter:
    """`await limiter.acquire()` before each request; it returns once the request fits in the window."""

    def __init__(
        self,
        max_requests: int,
        window_s: int = 1,
        *,
        redis_url: str | None = None,
        max_wait_s: float = DEFAULT_MAX_WAIT_S,
        namespace: str = _NAMESPACE,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        storage: Storage = (
            RedisStorage(f"async+{redis_url}", implementation="redispy") if redis_url else MemoryStorage()
        )
        self._limiter = MovingWindowRateLimiter(storage)
        # Used when Redis fails: each process then keeps the budget on its own rather than stopping.
        self._fallback = MovingWindowRateLimiter(MemoryStorage()) if redis_url else None
        self._item = RateLimitItemPerSecond(max_requests, window_s, namespace=namespace)
        self._max_wait_s = max_wait_s
        self._sleep = sleep
        self.shared = redis_url is not None

    async def acquire(self) -> None:
        """Wait for a slot in the moving window.

        Raises:
            FilingsTimeout: no slot came free within `max_wait_s` (our own processes are saturating the
                budget); the caller answers a named failure instead of queueing without bound.
        """
        deadline = time.monotonic() + self._max_wait_s
        while True:
            try:
                if await self._limiter.hit(self._item, "requests"):
                    return
                stats = await self._limiter.get_window_stats(self._item, "requests")
            except Exception as exc:  # Redis down or unreachable: the redis client's errors are many
                if self._fallback is None:
                    raise
                logger.warning("The shared SEC limiter failed (%r); limiting in this process instead.", exc)
                self._limiter, self._fallback = self._fallback, None
                continue
            # reset_time is when the oldest request leaves the window (epoch seconds).
            wait = max(0.01, min(stats.reset_time - time.time(), 1.0))
            if time.monotonic() + wait > deadline:
                raise FilingsTimeout("Too many SEC requests are queued right now; try again shortly.")
            await self._sleep(wait)
