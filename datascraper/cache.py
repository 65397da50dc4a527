"""The TTL cache the tools share, with single-flight so concurrent identical requests make one upstream call.

Storage is pluggable: in-process by default, Django's cache framework (Redis when configured) when the
server runs inside the app. Single-flight is per process and per event loop; it sits above the storage,
so it works the same for both. Values must be JSON-able (the adapter stores model dumps), so any cache
backend can hold them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

logger = logging.getLogger(__name__)

Clock = Callable[[], float]

# A read or write slower than this is skipped: a cache that stops answering must not hold up a tool call.
DEFAULT_STORE_TIMEOUT_S = 0.5


class CacheStore(Protocol):
    """Where cached values live. `get` returns None on a miss or an expired entry."""

    async def get(self, key: str) -> Any | None: ...

    async def set(self, key: str, value: Any, ttl_s: float) -> None: ...


class MemoryCacheStore:
    """An in-process store, bounded in entries; the oldest entry goes first when full."""

    def __init__(self, *, max_entries: int = 2048, clock: Clock = time.monotonic) -> None:
        self._entries: OrderedDict[str, tuple[float, Any]] = OrderedDict()
        self._max_entries = max_entries
        self._clock = clock

    async def get(self, key: str) -> Any | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires_at, value = entry
        if expires_at <= self._clock():
            del self._entries[key]
            return None
        return value

    async def set(self, key: str, value: Any, ttl_s: float) -> None:
        self._entries.pop(key, None)
        self._entries[key] = (self._clock() + ttl_s, value)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)


class DjangoCacheStore:
    """Django's default cache (Redis when REDIS_URL is set). Use only once Django is configured."""

    def __init__(self, alias: str = "default") -> None:
        # Imported here: this package stays importable, and usable, without Django.
        from django.core.cache import caches

        self._cache = caches[alias]

    async def get(self, key: str) -> Any | None:
        return await self._cache.aget(key)

    async def set(self, key: str, value: Any, ttl_s: float) -> None:
        await self._cache.aset(key, value, timeout=ttl_s)


class TTLCache:
    """Cache-aside over a store, with one in-flight computation per key.

    The computation runs as its own task, so a caller that gives up (timeout, cancellation) neither
    cancels it for the others nor loses the value for the next caller. A failing or unanswering store
    degrades to no caching rather than failing or stalling the request: the cache is an optimisation, not
    a dependency.
    """

    def __init__(self, store: CacheStore | None = None, *, store_timeout_s: float = DEFAULT_STORE_TIMEOUT_S) -> None:
        self.store: CacheStore = store if store is not None else MemoryCacheStore()
        self.store_timeout_s = store_timeout_s
        self._in_flight: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Task[Any]] = {}
        self._store_timed_out = False

    async def get_or_fetch(self, key: str, ttl_s: float, fetch: Callable[[], Awaitable[Any]]) -> Any:
        cached = await self._read(key)
        if cached is not None:
            return cached
        slot = (asyncio.get_running_loop(), key)
        task = self._in_flight.get(slot)
        if task is None:
            task = asyncio.ensure_future(self._fetch_and_store(key, ttl_s, fetch))
            self._in_flight[slot] = task
            task.add_done_callback(lambda done: self._settle(slot, done))
        return await asyncio.shield(task)

    async def _fetch_and_store(self, key: str, ttl_s: float, fetch: Callable[[], Awaitable[Any]]) -> Any:
        value = await fetch()
        try:
            await asyncio.wait_for(self.store.set(key, value, ttl_s), self.store_timeout_s)
        except TimeoutError:
            self._timed_out("write", key)
        except Exception as exc:
            logger.warning("Market data cache write failed for %s: %r", key, exc)
        return value

    async def _read(self, key: str) -> Any | None:
        try:
            return await asyncio.wait_for(self.store.get(key), self.store_timeout_s)
        except TimeoutError:
            self._timed_out("read", key)
            return None
        except Exception as exc:
            logger.warning("Market data cache read failed for %s: %r", key, exc)
            return None

    def _timed_out(self, operation: str, key: str) -> None:
        # A store that stops answering times out on every call: one warning says so, more would flood the log.
        level = logging.DEBUG if self._store_timed_out else logging.WARNING
        self._store_timed_out = True
        logger.log(
            level,
            "Market data cache %s timed out after %g s for %s; going on without the cache.",
            operation,
            self.store_timeout_s,
            key,
        )

    def _settle(self, slot: tuple[asyncio.AbstractEventLoop, str], task: asyncio.Task[Any]) -> None:
        self._in_flight.pop(slot, None)
        # Every waiter may have gone; retrieving the exception keeps asyncio from logging it as lost.
        if not task.cancelled():
            task.exception()
