"""The shared TTL cache: expiry, single-flight, Django's cache inside the app, degradation when broken."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from datascraper import mcp_server
from datascraper.cache import DjangoCacheStore, Measured, MemoryCacheStore, TTLCache
from datascraper.market_data.yahoo import QUOTE_TTL_S, YahooFinanceAdapter
from datascraper.mcp_server import build_server
from tests.datascraper.market_data.support import InMemoryMCP
from tests.fakes.yfinance import FakeYahoo


class CountingStore(MemoryCacheStore):
    """An in-process store that counts reads, to know when every request has looked and missed."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def get(self, key: str) -> Any | None:
        self.reads += 1
        return await super().get(key)


class BrokenStore:
    async def get(self, key: str) -> Any | None:
        raise ConnectionError("redis is down")

    async def set(self, key: str, value: Any, ttl_s: float, size: int | None = None) -> None:
        raise ConnectionError("redis is down")


class HangingStore:
    """A store that never answers, as a blackholed Redis would."""

    def __init__(self) -> None:
        self.writes = 0

    async def get(self, key: str) -> Any | None:
        await asyncio.Event().wait()

    async def set(self, key: str, value: Any, ttl_s: float, size: int | None = None) -> None:
        self.writes += 1
        await asyncio.Event().wait()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_entries_expire_after_their_ttl() -> None:
    clock = Clock()
    store = MemoryCacheStore(clock=clock)
    await store.set("k", {"v": 1}, ttl_s=60)

    clock.now += 59
    assert await store.get("k") == {"v": 1}
    clock.now += 1
    assert await store.get("k") is None


async def test_the_store_is_bounded_in_bytes_and_evicts_the_oldest() -> None:
    megabyte = "x" * 1_000_000
    store = MemoryCacheStore(max_bytes=2_500_000)
    for key in ("a", "b", "c"):
        await store.set(key, key + megabyte, ttl_s=60)

    assert [await store.get(key) is not None for key in ("a", "b", "c")] == [False, True, True]
    assert 2_000_000 < store.bytes <= 2_500_000


async def test_a_value_bigger_than_the_whole_store_is_not_kept() -> None:
    store = MemoryCacheStore(max_bytes=1_000_000)
    await store.set("small", {"price": 1.0}, ttl_s=60)

    await store.set("huge", ["x" * 600_000, "y" * 600_000], ttl_s=60)

    assert await store.get("huge") is None
    assert await store.get("small") == {"price": 1.0}


async def test_a_fetch_that_knows_its_value_s_size_says_so() -> None:
    # Walking megabytes of parsed JSON would be slow: the SEC client gives the size it read instead.
    store = MemoryCacheStore(max_bytes=1_000)
    cache = TTLCache(store)

    async def fetch() -> Measured:
        return Measured({"facts": 1}, 5_000)

    value = await cache.get_or_fetch("facts", 60, fetch)

    assert value == {"facts": 1}
    assert await store.get("facts") is None  # counted as 5,000 bytes: more than the store holds


async def test_concurrent_identical_fetches_run_once() -> None:
    cache = TTLCache()
    release = asyncio.Event()
    fetches = 0

    async def fetch() -> dict[str, int]:
        nonlocal fetches
        fetches += 1
        await release.wait()
        return {"price": 1}

    waiting = [asyncio.create_task(cache.get_or_fetch("quote:AAPL", 60, fetch)) for _ in range(10)]
    await asyncio.sleep(0)  # every task has now looked, missed, and joined the one fetch
    release.set()

    assert await asyncio.gather(*waiting) == [{"price": 1}] * 10
    assert fetches == 1
    assert await cache.get_or_fetch("quote:AAPL", 60, fetch) == {"price": 1}
    assert fetches == 1


async def test_a_caller_that_gives_up_does_not_cancel_the_fetch_for_others() -> None:
    cache = TTLCache()
    release = asyncio.Event()

    async def fetch() -> str:
        await release.wait()
        return "value"

    impatient = asyncio.create_task(cache.get_or_fetch("k", 60, fetch))
    patient = asyncio.create_task(cache.get_or_fetch("k", 60, fetch))
    await asyncio.sleep(0)
    impatient.cancel()
    release.set()

    assert await patient == "value"
    assert await cache.store.get("k") == "value"


async def test_a_failed_fetch_is_not_cached() -> None:
    cache = TTLCache()
    outcomes: list[Exception | str] = [RuntimeError("upstream"), "value"]

    async def fetch() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    with pytest.raises(RuntimeError):
        await cache.get_or_fetch("k", 60, fetch)
    assert await cache.get_or_fetch("k", 60, fetch) == "value"


async def test_a_broken_store_degrades_to_no_caching() -> None:
    cache = TTLCache(BrokenStore())

    async def fetch() -> str:
        return "value"

    assert await cache.get_or_fetch("k", 60, fetch) == "value"


async def test_a_store_that_never_answers_is_skipped_after_its_timeout_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = HangingStore()
    cache = TTLCache(store, store_timeout_s=0.05)

    async def fetch() -> str:
        return "value"

    async with asyncio.timeout(2):
        assert await cache.get_or_fetch("k", 60, fetch) == "value"
        assert await cache.get_or_fetch("k", 60, fetch) == "value"

    assert store.writes == 2
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert [record.getMessage() for record in warnings] == [
        "Market data cache read timed out after 0.05 s for k; going on without the cache."
    ]


async def test_n_concurrent_identical_tool_calls_make_one_upstream_call(fake_yahoo: FakeYahoo) -> None:
    store = CountingStore()
    server = build_server(YahooFinanceAdapter(fake_yahoo.ticker, cache=TTLCache(store), timeout_s=5))
    mcp = InMemoryMCP(server)
    fake_yahoo.gate.clear()  # hold the upstream call until every request has joined it

    calls = [asyncio.create_task(mcp.call_tool("get_quote", {"symbol": "AAPL"})) for _ in range(20)]
    while store.reads < 20:
        await asyncio.sleep(0.001)
    fake_yahoo.gate.set()
    results = await asyncio.gather(*calls)

    assert fake_yahoo.upstream_calls("AAPL", "quoteSummary") == 1  # one quote fetch
    assert all(not result.is_error for result in results)
    assert len({result.structured_content["price"] for result in results}) == 1


async def test_a_quote_is_served_from_cache_until_its_ttl(fake_yahoo: FakeYahoo) -> None:
    clock = Clock()
    adapter = YahooFinanceAdapter(fake_yahoo.ticker, cache=TTLCache(MemoryCacheStore(clock=clock)))

    await adapter.quote("AAPL")
    await adapter.quote("aapl")
    clock.now += QUOTE_TTL_S
    await adapter.quote("AAPL")

    assert fake_yahoo.upstream_calls("AAPL", "quoteSummary") == 2


async def test_the_django_cache_backs_the_store_inside_the_app(fake_yahoo: FakeYahoo) -> None:
    from django.core.cache import cache as django_cache

    django_cache.clear()
    adapter = YahooFinanceAdapter(fake_yahoo.ticker, cache=TTLCache(DjangoCacheStore()))

    first = await adapter.quote("MSFT")
    second = await adapter.quote("MSFT")

    assert first == second
    assert fake_yahoo.upstream_calls("MSFT", "quoteSummary") == 1
    assert await django_cache.aget("market_data:v1:quote:MSFT") == first.model_dump(mode="json")


def test_the_entry_point_uses_django_cache_only_when_django_shares_it_through_redis(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "config.settings")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/15")
    assert isinstance(mcp_server.build_cache().store, DjangoCacheStore)

    # Without Redis, Django's cache would be its in-process one, bounded in entries, not bytes.
    monkeypatch.setenv("REDIS_URL", "")
    assert isinstance(mcp_server.build_cache().store, MemoryCacheStore)

    monkeypatch.delenv("DJANGO_SETTINGS_MODULE")
    assert isinstance(mcp_server.build_cache().store, MemoryCacheStore)
