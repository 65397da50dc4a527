"""MCP call latency over stdio, with the fake yfinance: `python benchmarks/mcp_calls.py`.

Figures:
- warm call latency (p50, p95): the session is open; a cached quote measures the MCP round trip alone,
  an uncached one adds the worker thread and the (instant) fake Yahoo;
- concurrency: 20 concurrent calls for different symbols against one call, when each upstream call
  takes 200 ms. Targets: p50 under 5 ms; 20 calls within 1.5x the time of one;
- first call of a process (median of `--first-calls` fresh clients, the server started as the app starts
  it, with Django): cold, the call starts the server; warm, the client was started first, as the ASGI
  lifespan, `runworker` and `ask` now do. Target: the warm first call under 100 ms (what remains is the
  fresh server's first use of its tool path: lazy imports, its first worker thread, Django's cache).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp.client.stdio import StdioServerParameters  # noqa: E402

from datascraper.research_engine.data.session import MarketDataClient  # noqa: E402

P50_TARGET_MS = 5.0
CONCURRENCY_TARGET = 1.5
WARM_FIRST_CALL_TARGET_MS = 100.0


def fake_server(latency_s: float, *, django: bool = False) -> StdioServerParameters:
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    if django:
        env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "tests.fakes.market_data_launcher", "--latency", str(latency_s)],
        env=env,
        cwd=ROOT,
    )


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def timed_call(client: MarketDataClient, symbol: str) -> float:
    started = time.perf_counter()
    result = await client.call_tool("get_quote", {"symbol": symbol})
    elapsed = time.perf_counter() - started
    if result.is_error:
        raise RuntimeError(f"get_quote({symbol}) failed: {result.content}")
    return elapsed


async def warm_latency(calls: int) -> tuple[list[float], list[float]]:
    client = MarketDataClient(fake_server(latency_s=0.0))
    try:
        await timed_call(client, "AAPL")  # opens the session and fills the cache
        cached = [await timed_call(client, "AAPL") for _ in range(calls)]
        uncached = [await timed_call(client, f"U{n}") for n in range(calls)]
    finally:
        await client.aclose()
    return cached, uncached


async def concurrency(calls: int, latency_s: float) -> tuple[float, float]:
    client = MarketDataClient(fake_server(latency_s=latency_s))
    try:
        await timed_call(client, "WARM")
        one = await timed_call(client, "ONE")
        started = time.perf_counter()
        await asyncio.gather(*(timed_call(client, f"C{n}") for n in range(calls)))
        many = time.perf_counter() - started
    finally:
        await client.aclose()
    return one, many


async def first_call(*, warm: bool) -> float:
    client = MarketDataClient(fake_server(latency_s=0.0, django=True))
    try:
        if warm:
            await asyncio.wrap_future(client.start())  # the process started serving a moment ago
        return await timed_call(client, "AAPL")
    finally:
        await client.aclose()


def report(label: str, samples: list[float]) -> float:
    p50, p95 = percentile(samples, 0.50) * 1000, percentile(samples, 0.95) * 1000
    print(f"{label:<34} p50 {p50:6.2f} ms   p95 {p95:6.2f} ms   (n={len(samples)})")
    return p50


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="sequential calls per warm measurement")
    parser.add_argument("--concurrent", type=int, default=20, help="concurrent calls")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per upstream call, concurrency case")
    parser.add_argument("--first-calls", type=int, default=3, help="fresh clients per first-call measurement")
    options = parser.parse_args()

    cached, uncached = await warm_latency(options.calls)
    print("warm get_quote over stdio (fake yfinance)")
    p50 = report("  cached (MCP round trip)", cached)
    report("  uncached (thread + fake Yahoo)", uncached)
    print(
        f"  mean cached {statistics.fmean(cached) * 1000:.2f} ms; target p50 < {P50_TARGET_MS:g} ms: "
        f"{'met' if p50 < P50_TARGET_MS else 'MISSED'}"
    )

    one, many = await concurrency(options.concurrent, options.latency)
    ratio = many / one
    print(f"concurrency, {options.latency * 1000:.0f} ms per upstream call")
    print(f"  1 call                           {one * 1000:7.1f} ms")
    print(f"  {options.concurrent} concurrent calls              {many * 1000:7.1f} ms")
    print(
        f"  ratio {ratio:.2f}x; target <= {CONCURRENCY_TARGET:g}x: {'met' if ratio <= CONCURRENCY_TARGET else 'MISSED'}"
    )

    cold = statistics.median([await first_call(warm=False) for _ in range(options.first_calls)]) * 1000
    warm = statistics.median([await first_call(warm=True) for _ in range(options.first_calls)]) * 1000
    print(f"first call of a process (median of {options.first_calls}, server with Django)")
    print(f"  cold: the call starts the server     {cold:7.1f} ms")
    print(f"  warm: started with the process       {warm:7.1f} ms")
    print(
        f"  target warm < {WARM_FIRST_CALL_TARGET_MS:g} ms: {'met' if warm < WARM_FIRST_CALL_TARGET_MS else 'MISSED'}"
    )


if __name__ == "__main__":
    asyncio.run(main())
