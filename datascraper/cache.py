"""The TTL cache the tools share, with single-flight so concurrent identical requests make one upstream call.

Storage is pluggable: in-process by default, bounded in bytes; Django's cache framework (Redis) when the
server runs inside an app with Redis. Single-flight is per process and per event loop; it sits above the
storage, so it works the same for both. Values must be JSON-able (the adapter stores model dumps), so any
cache backend can hold them.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

logger = logging.getLogger(__name__)

Clock = Callable[[], float]

# A read or write slower than this is skipped: a cache that stops answering must not hold up a tool call.
DEFAULT_STORE_TIMEOUT_S = 0.5
# The in-process store's bound: a filed document's text is up to a few MB, a large filer's parsed company
# facts some tens of MB.
DEFAULT_MAX_BYTES = 128 * 2**20


@dataclass(frozen=True)
class Measured:
    """What a fetch may return instead of its value: the value with the bytes it holds in memory, when the
    fetcher knows them better than `approximate_size` (which walks every object: slow for megabytes of
    parsed JSON)."""

    value: Any
    size: int


class CacheStore(Protocol):
    """Where cached values live. `get` returns None on a miss or an expired entry; `size` is the value's
    bytes in memory when known (`approximate_size` otherwise), for a store bounded in bytes."""

    async def get(self, key: str) -> Any | None: ...

    async def set(self, key: str, value: Any, ttl_s: float, size: int | None = None) -> None: ...


def approximate_size(value: Any) -> int:
    """The bytes `value` holds in Python objects: the object, and what its dicts, lists and tuples hold."""
    total, pending = 0, [value]
    while pending:
        item = pending.pop()
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return total


class MemoryCacheStore:
    """An in-process store, bounded in bytes (each value's `size`); the oldest entries go first when full.
    A value bigger than the whole bound is not kept."""

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_BYTES, clock: Clock = time.monotonic) -> None:
        self._entries: OrderedDict[str, tuple[float, Any, int]] = OrderedDict()
        self._max_bytes = max_bytes
        self._clock = clock
        self.bytes = 0

    async def get(self, key: str) -> Any | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires_at, value, _ = entry
        if expires_at <= self._clock():
            self._drop(key)
            return None
        return value

    async def set(self, key: str, value: Any, ttl_s: float, size: int | None = None) -> None:
        self._drop(key)
        size = approximate_size(value) if size is None else size
        if size > self._max_bytes:
            logger.info("Not caching %s: %d bytes, more than the cache's %d.", key, size, self._max_bytes)
            return
        while self._entries and self.bytes + size > self._max_bytes:
            self._drop(next(iter(self._entries)))
        self._entries[key] = (self._clock() + ttl_s, value, size)
        self.bytes += size

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.bytes -= entry[2]


class DjangoCacheStore:
    """Django's default cache (Redis when REDIS_URL is set). Use only once Django is configured.

    Redis bounds its own memory (`maxmemory` and its eviction policy, the operator's), so `size` is unused."""

    def __init__(self, alias: str = "default") -> None:
        # Imported here: this package stays importable, and usable, without Django.
        from django.core.cache import caches

        self._cache = caches[alias]

    async def get(self, key: str) -> Any | None:
        return await self._cache.aget(key)

    async def set(self, key: str, value: Any, ttl_s: float, size: int | None = None) -> None:
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
        fetched = await fetch()
        value, size = (fetched.value, fetched.size) if isinstance(fetched, Measured) else (fetched, None)
        try:
            await asyncio.wait_for(self.store.set(key, value, ttl_s, size), self.store_timeout_s)
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
