"""The SEC HTTP client: our User-Agent on every request, the shared limiter before each, the tools' cache
around each, bounded retries, and every failure a named `FilingError`.

The SEC answers 403 both to a client it does not accept and to one it is throttling, and 429 when throttling;
both become `rate_limited` after a back-off (its `Retry-After` when it sends one) and a bounded number of
retries, and when those fail too, every request fails at once for a cool-down (`rate_limit_cooldown_s`)
instead of prolonging the block. A 404 is `not_found`; 5xx, a broken connection or an unreadable reply is
`upstream_error` after the retries; a request past its timeout is `timeout`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2

from datascraper.filings.config import FilingsConfig
from datascraper.filings.errors import (
    FilingError,
    FilingNotFound,
    FilingsNotConfigured,
    FilingsRateLimited,
    FilingsTimeout,
    FilingsUpstreamError,
)
from datascraper.filings.limiter import RequestLimiter
from datascraper.market_data.cache import TTLCache

logger = logging.getLogger(__name__)

_RATE_LIMIT_STATUSES = frozenset({403, 429})


class SecClient:
    """GETs to the SEC's two hosts. One per process; safe to share between concurrent calls.

    `transport` replaces the network (tests that count requests); the fake SEC server is reached through
    the configured hosts instead.
    """

    def __init__(
        self,
        config: FilingsConfig,
        *,
        cache: TTLCache | None = None,
        limiter: RequestLimiter | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.cache = cache if cache is not None else TTLCache()
        self.limiter = limiter or RequestLimiter.from_config(config)
        self._transport = transport
        self._sleep = sleep
        # One connection pool per event loop: an httpx2 client must not be shared across loops.
        self._clients: dict[asyncio.AbstractEventLoop, httpx2.AsyncClient] = {}
        self._clock = clock
        self._blocked_until = 0.0
        self.requests_sent = 0

    # what callers ask

    async def data_json(self, path: str, *, ttl_s: float) -> Any:
        """JSON from data.sec.gov (`SEC_DATA_URL`), e.g. `/submissions/CIK0000320193.json`, cached."""
        return await self._cached_json(f"{self.config.data_url}{path}", ttl_s)

    async def www_json(self, path: str, *, ttl_s: float) -> Any:
        """JSON from www.sec.gov (`SEC_WWW_URL`), e.g. `/files/company_tickers.json`, cached."""
        return await self._cached_json(f"{self.config.www_url}{path}", ttl_s)

    async def document(self, url: str, *, ttl_s: float, transform: Callable[[bytes], Any] | None = None) -> Any:
        """A filed document's bytes, through `transform` (say, HTML to text) before caching, so the cache
        holds what callers use and a warm call skips the parsing too."""

        async def fetch() -> Any:
            body = await self.get(url)
            if transform is None:
                return body.decode("utf-8", "replace")
            # A 10-K runs to megabytes (tens of ms a megabyte to flatten): off the event loop, which the
            # server's other tools share.
            return await asyncio.to_thread(transform, body)

        return await self.cache.get_or_fetch(f"sec:doc:{url}", ttl_s, fetch)

    def www_url(self, path: str) -> str:
        return f"{self.config.www_url}{path}"

    async def _cached_json(self, url: str, ttl_s: float) -> Any:
        async def fetch() -> Any:
            body = await self.get(url)
            try:
                # A large filer's company facts are megabytes of JSON: parsed off the event loop.
                return await asyncio.to_thread(json.loads, body)
            except ValueError as exc:
                raise FilingsUpstreamError("The SEC sent a reply that is not valid JSON.") from exc

        return await self.cache.get_or_fetch(f"sec:json:{url}", ttl_s, fetch)

    # the wire

    async def get(self, url: str) -> bytes:
        """One GET with the limiter, retries and named failures.

        Raises:
            FilingsNotConfigured, FilingNotFound, FilingsRateLimited, FilingsUpstreamError, FilingsTimeout.
        """
        problem = self.config.problem
        if problem is not None:
            raise FilingsNotConfigured(problem)
        wait = self._blocked_until - self._clock()
        if wait > 0:
            raise FilingsRateLimited(f"The SEC is limiting our requests; try again in about {wait:.0f} s.")
        attempts = self.config.max_retries + 1
        last: FilingError = FilingsUpstreamError()
        for attempt in range(attempts):
            await self.limiter.acquire()
            self.requests_sent += 1
            try:
                response = await self._client().get(url)
            except httpx2.TimeoutException:
                last = FilingsTimeout()
                continue
            except httpx2.TransportError as exc:
                logger.warning("SEC request failed: %r", exc)
                last = FilingsUpstreamError("The SEC could not be reached.")
                continue
            status = response.status_code
            if status == 200:
                if len(response.content) > self.config.max_document_bytes:
                    raise FilingsUpstreamError("The SEC document is too large to read.")
                return response.content
            if status == 404:
                raise FilingNotFound()
            if status in _RATE_LIMIT_STATUSES:
                last = FilingsRateLimited()
                if attempt + 1 < attempts:
                    await self._sleep(self._backoff(response, attempt))
                continue
            if status >= 500:
                last = FilingsUpstreamError(f"The SEC answered HTTP {status}.")
                continue
            raise FilingsUpstreamError(f"The SEC answered HTTP {status}.")
        if isinstance(last, FilingsRateLimited):
            self._blocked_until = self._clock() + self.config.rate_limit_cooldown_s
            logger.warning("The SEC is rate limiting us; no requests for %g s.", self.config.rate_limit_cooldown_s)
        raise last

    def _backoff(self, response: httpx2.Response, attempt: int) -> float:
        retry_after = response.headers.get("retry-after", "")
        if retry_after.isdigit():
            return min(float(retry_after), self.config.max_backoff_s)
        return min(self.config.rate_limit_backoff_s * 2**attempt, self.config.max_backoff_s)

    def _client(self) -> httpx2.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            for stale in [other for other in self._clients if other.is_closed()]:
                del self._clients[stale]
            client = httpx2.AsyncClient(
                headers={"User-Agent": self.config.user_agent or "", "Accept-Encoding": "gzip, deflate"},
                timeout=httpx2.Timeout(self.config.request_timeout_s),
                transport=self._transport,
                follow_redirects=True,
            )
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Close this loop's connection pool (tests and benchmarks; the server keeps it for its life)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()
