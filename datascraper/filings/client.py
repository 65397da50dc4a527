"""The SEC HTTP client: our User-Agent on every request, the shared limiter before each, the tools' cache
around each, bounded retries, and every failure a named `FilingError`.

A reply is streamed and refused (`too_large`) once its Content-Length or the bytes read pass
`max_document_bytes`; at most `max_parallel_reads` replies are read and parsed at once per process, so a
call that reads several documents (an 8-K's exhibits, twenty Form 4s) holds a bounded amount of memory.
Redirects are followed by hand, each hop through the limiter, and only within the SEC's hosts (the
configured `SEC_DATA_URL` and `SEC_WWW_URL`): a redirect elsewhere is `upstream_error`.

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

from datascraper.cache import Measured, TTLCache
from datascraper.filings.config import FilingsConfig
from datascraper.filings.errors import (
    FilingError,
    FilingNotFound,
    FilingsNotConfigured,
    FilingsRateLimited,
    FilingsTimeout,
    FilingsUpstreamError,
    FilingTooLarge,
)
from datascraper.filings.limiter import RequestLimiter

logger = logging.getLogger(__name__)

_RATE_LIMIT_STATUSES = frozenset({403, 429})
# Parsed JSON holds about this many bytes of Python objects per byte of text (RSS grew 18 MB parsing
# Apple's 3.7 MB company facts): the cache's measure of a JSON reply, cheaper than walking it.
_PARSED_JSON_BYTES_PER_BYTE = 5


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
        # One connection pool and one set of read slots per event loop: neither may be shared across loops.
        self._clients: dict[asyncio.AbstractEventLoop, httpx2.AsyncClient] = {}
        self._read_slots: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        self._sec_bases = [httpx2.URL(base) for base in (config.data_url, config.www_url)]
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

    async def document(
        self,
        url: str,
        *,
        ttl_s: float,
        transform: Callable[[bytes], Any] | None = None,
        max_bytes: int | None = None,
    ) -> Any:
        """A filed document's bytes, through `transform` (say, HTML to text) before caching, so the cache
        holds what callers use and a warm call skips the parsing too. `max_bytes` lowers the cap for a
        document parsed as a tree (an index page, a Form 4), which costs many times its size."""

        async def fetch() -> Any:
            async with self._read_slot():
                body = await self.get(url, max_bytes=max_bytes)
                if transform is None:
                    return body.decode("utf-8", "replace")
                # A 10-K runs to megabytes (tens of ms a megabyte to flatten): off the event loop, which the
                # server's other tools share.
                return await asyncio.to_thread(transform, body)

        return await self.cache.get_or_fetch(f"sec:doc:{url}", ttl_s, fetch)

    def www_url(self, path: str) -> str:
        return f"{self.config.www_url}{path}"

    async def _cached_json(self, url: str, ttl_s: float) -> Any:
        async def fetch() -> Measured:
            async with self._read_slot():
                body = await self.get(url)
                try:
                    # A large filer's company facts are megabytes of JSON: parsed off the event loop.
                    value = await asyncio.to_thread(json.loads, body)
                except ValueError as exc:
                    raise FilingsUpstreamError("The SEC sent a reply that is not valid JSON.") from exc
            return Measured(value, len(body) * _PARSED_JSON_BYTES_PER_BYTE)

        return await self.cache.get_or_fetch(f"sec:json:{url}", ttl_s, fetch)

    # the wire

    async def get(self, url: str, *, max_bytes: int | None = None) -> bytes:
        """One GET with the limiter, retries and named failures; its body at most `max_bytes` (by default
        `max_document_bytes`).

        Raises:
            FilingsNotConfigured, FilingNotFound, FilingTooLarge, FilingsRateLimited, FilingsUpstreamError,
            FilingsTimeout.
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
            try:
                response, body = await self._follow(url, max_bytes or self.config.max_document_bytes)
            except httpx2.TimeoutException:
                last = FilingsTimeout()
                continue
            except (httpx2.TransportError, httpx2.DecodingError) as exc:  # a broken connection or gzip stream
                logger.warning("SEC request failed: %r", exc)
                last = FilingsUpstreamError("The SEC could not be reached.")
                continue
            status = response.status_code
            if status == 200:
                return body
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

    async def _follow(self, url: str, max_bytes: int) -> tuple[httpx2.Response, bytes]:
        """The reply to `url`, after its redirects within the SEC's hosts, with its body when it is a 200.

        Raises:
            FilingsUpstreamError: a redirect leaves the SEC's hosts, or there are too many.
            FilingTooLarge: the body passes the byte cap.
            httpx2.TransportError: as the transport raises it (the caller retries).
        """
        for _ in range(self.config.max_redirects + 1):
            if not self._within_sec(httpx2.URL(url)):
                logger.warning("Refused an SEC request outside the SEC's hosts: %s", url[:200])
                raise FilingsUpstreamError("The SEC redirected the request outside its own hosts.")
            await self.limiter.acquire()
            self.requests_sent += 1
            async with self._client().stream("GET", url) as response:
                if response.next_request is not None:
                    url = str(response.next_request.url)
                    continue
                body = await self._body(response, max_bytes) if response.status_code == 200 else b""
                return response, body
        raise FilingsUpstreamError("The SEC redirected the request too many times.")

    async def _body(self, response: httpx2.Response, limit: int) -> bytes:
        """The body, read while it stays within `limit` bytes (decompressed bytes counted)."""
        too_large = FilingTooLarge(f"The SEC document is larger than {limit:,} bytes, the most this server reads.")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise too_large
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise too_large
            chunks.append(chunk)
        return b"".join(chunks)

    def _within_sec(self, url: httpx2.URL) -> bool:
        """`url` is on one of the SEC's configured hosts (scheme, host and port), under its path."""
        return any(
            (url.scheme, url.host, url.port) == (base.scheme, base.host, base.port)
            and (url.path + "/").startswith(base.path.rstrip("/") + "/")
            for base in self._sec_bases
        )

    def _read_slot(self) -> asyncio.Semaphore:
        """This loop's `max_parallel_reads` slots, one held while a reply is read and parsed."""
        loop = asyncio.get_running_loop()
        slots = self._read_slots.get(loop)
        if slots is None:
            for stale in [other for other in self._read_slots if other.is_closed()]:
                del self._read_slots[stale]
            slots = self._read_slots[loop] = asyncio.Semaphore(self.config.max_parallel_reads)
        return slots

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
                follow_redirects=False,  # followed by `_follow`, within the SEC's hosts
            )
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Close this loop's connection pool (tests and benchmarks; the server keeps it for its life)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()
