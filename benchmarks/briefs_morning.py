"""What a morning of briefs costs (issue 31): 100 watchlists of 20 symbols fired at one instant through the
scheduler's `fire_due`, as a scheduler's tick fires them. `python benchmarks/briefs_morning.py`.

The code between is the real code: the scheduler, `start_brief`, the change checks, the MCP market data
server and its filing tools (in memory, as the app runs it in-process), yfinance's parsing and the SEC
client, the research run that writes a brief, on a fresh SQLite database. The far ends are the fakes: Yahoo
at yfinance's HTTP boundary (no latency unless `--yahoo-latency`), the SEC on loopback, and the fake OpenAI
server, whose synthesis answers every brief's one model call. Citation checks are off (they would fetch the
cited pages). Each watchlist has an owner of its own, so no brief meets an owner's run limit.

The symbols: 20 per watchlist drawn from a pool of 150 large US listings (the S&P 100 and 50 more), weighted
by rank (AAPL in 84 lists, NVDA in 71, the tail in few), so lists overlap as real users' do. Every
watchlist has the same schedule (07:00 UTC), each owner's first watchlist.

Two mornings, each on cold caches (a fresh server, the symbols not yet asked):
- quiet: Sunday 2025-06-15, the day after each watchlist's last brief: no new close, and what the fake data
  has dated that day only; expect briefs answered "nothing material" without a model call;
- news: Friday 2025-01-31, each watchlist's first brief (the 24 hours before): the closes of 2025-01-30,
  moves over BRIEFS_PRICE_MOVE_PCT (2 %) are material; Apple's 8-K and 10-Q.

The fake SEC knows four companies (AAPL, NVDA, TSM, BRK-B): the others' filing checks end at the ticker map
(`not_found`), so the SEC requests counted are fewer than a real morning's (about one more per symbol: its
submissions, read once while cached). Yahoo requests are those naming a symbol (the cookie and crumb
requests are not counted). The MCP calls that failed are counted by their code: at 100 watchlists on 2
cores a quarter of Yahoo's end `timeout` (docs/performance.md, "A morning of briefs").
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import statistics
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATABASE = Path(tempfile.mkdtemp()) / "briefs-morning.sqlite3"
for name in ("REDIS_URL", "RUNS_BACKEND"):
    os.environ.pop(name, None)
os.environ.update(
    DJANGO_SETTINGS_MODULE="config.settings",
    DJANGO_DEBUG="1",
    DATABASE_URL=f"sqlite:///{DATABASE}",
    CITATION_VERIFY="0",
    OPENAI_API_KEY="placeholder-key-openai",
)

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from chat.models import Brief, ResearchRun, Watchlist  # noqa: E402
from chat.services.brief_schedule import fire_due  # noqa: E402
from datascraper.cache import TTLCache  # noqa: E402
from datascraper.filings.client import SecClient  # noqa: E402
from datascraper.filings.config import FilingsConfig  # noqa: E402
from datascraper.filings.service import FilingsService  # noqa: E402
from datascraper.market_data.yahoo import YahooFinanceAdapter  # noqa: E402
from datascraper.mcp_server import build_server  # noqa: E402
from datascraper.models_config import get_research_config  # noqa: E402
from datascraper.providers.openai.client import reset_openai_client  # noqa: E402
from datascraper.research_engine.data.market_data_client import set_market_data_client  # noqa: E402
from datascraper.research_engine.data.session import MarketDataClient  # noqa: E402
from tests.datascraper.research_support import is_synthesis  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer, TextReply  # noqa: E402
from tests.fakes.sec_server import FakeSecServer  # noqa: E402
from tests.fakes.yfinance import FakeYahoo  # noqa: E402

MARKET_NOW = datetime(2025, 6, 13, 20, 0, tzinfo=UTC)  # the fake Yahoo's data is anchored here
USER_AGENT = "Finance Research Benchmark ops@example.com"
SCHEDULE = "0 7 * * *"
FINISH_TIMEOUT_S = 300.0

# The S&P 100 and 50 more large US listings, roughly by how often they are followed.
POOL = """
AAPL NVDA MSFT AMZN TSLA GOOGL META AMD NFLX JPM BRK-B AVGO TSM V MA COST LLY UNH XOM WMT
PLTR INTC DIS BA KO PEP ORCL CRM ADBE QCOM BAC WFC C GS MS SCHW PYPL UBER ABNB SHOP
JNJ PFE MRK ABBV TMO ABT DHR BMY AMGN GILD CVX COP SLB OXY HD LOW TGT NKE SBUX MCD
T VZ TMUS CMCSA CSCO IBM TXN MU AMAT LRCX KLAC ADI INTU NOW PANW SNOW CRWD NET DDOG ZS
CAT DE HON GE MMM UPS FDX LMT RTX NOC GD UNP CSX NSC DAL UAL AAL LUV F GM RIVN
LCID NIO SPGI MCO ICE CME BLK AXP COF USB PNC TFC MET PRU AIG CB PGR ALL TRV MMC AON
PG CL KMB MDLZ KHC GIS HSY MO PM STZ BKNG MAR HLT CCL RCL LVS WYNN MGM EA TTWO
ROKU SPOT PINS SNAP COIN HOOD SOFI AFRM
""".split()


@dataclass(frozen=True)
class Morning:
    name: str
    fired: datetime  # the scheduler's look: the slot (07:00 UTC) and a few seconds
    previous_until: datetime | None  # the end of each watchlist's last brief; None: its first brief


QUIET = Morning("quiet", datetime(2025, 6, 15, 7, 0, 5, tzinfo=UTC), datetime(2025, 6, 14, 7, 0, 5, tzinfo=UTC))
NEWS = Morning("news", datetime(2025, 1, 31, 7, 0, 5, tzinfo=UTC), None)


class CountingClient(MarketDataClient):
    """The real client, counting the tool calls made through it, and those that failed by how."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()

    async def call_tool(self, name: str, arguments: dict[str, Any], *, timeout_s: float | None = None) -> Any:
        self.calls[name] += 1
        try:
            outcome = await super().call_tool(name, arguments, timeout_s=timeout_s)
        except Exception as exc:
            self.failed[f"{name}: {type(exc).__name__}"] += 1
            raise
        if outcome.is_error:
            text = " ".join(block.text for block in outcome.content if block.type == "text")
            self.failed[f"{name}: {text.partition(':')[0][:40]}"] += 1
        return outcome


def watchlists_symbols(count: int, size: int, seed: int = 31) -> list[list[str]]:
    """`count` lists of `size` distinct symbols, each drawn with weight 1 / rank^0.7 from the pool."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) ** 0.7 for rank in range(len(POOL))]
    lists = []
    for _ in range(count):
        chosen: list[str] = []
        while len(chosen) < size:
            [symbol] = rng.choices(POOL, weights)
            if symbol not in chosen:
                chosen.append(symbol)
        lists.append(chosen)
    return lists


def store_watchlists(lists: list[list[str]], morning: Morning) -> None:
    """One owner per watchlist, created before the morning, due at its slot; its last brief if any."""
    call_command("flush", interactive=False, verbosity=0)
    slot = morning.fired.replace(second=0)
    for n, symbols in enumerate(lists):
        user = get_user_model().objects.create(username=f"user{n}")
        watchlist = Watchlist.objects.create(
            user=user, name=f"List {n}", symbols=symbols, schedule=SCHEDULE, timezone="UTC", next_run_at=slot
        )
        Watchlist.objects.filter(pk=watchlist.pk).update(created_at=slot - timedelta(days=30))
        if morning.previous_until is not None:
            until = morning.previous_until
            Brief.objects.create(
                watchlist=watchlist, status=Brief.Status.DONE, since=until - timedelta(days=1), until=until,
                scheduled_for=until.replace(second=0), answer="Nothing material changed.",
            )  # fmt: skip


@contextmanager
def far_ends(latency_s: float) -> Iterator[tuple[FakeOpenAIServer, FakeYahoo, FakeSecServer, CountingClient]]:
    """The fakes, and the real market data server (filing tools on the fake SEC) on cold caches."""
    with FakeOpenAIServer() as openai, FakeSecServer(max_per_second=10) as sec:
        os.environ["OPENAI_BASE_URL"] = openai.base_url
        get_research_config.cache_clear()
        reset_openai_client()
        openai.script(
            TextReply(["The watchlist's holdings moved on the day's news [1]."]), when=is_synthesis, times=None
        )
        config = FilingsConfig(user_agent=USER_AGENT, data_url=sec.data_url, www_url=sec.www_url)
        filings = FilingsService(SecClient(config, cache=TTLCache()))
        yahoo = FakeYahoo(latency_s=latency_s)
        adapter = YahooFinanceAdapter(yahoo.ticker, cache=TTLCache(), now=lambda: MARKET_NOW)
        client = CountingClient(build_server(adapter, filings))
        previous = set_market_data_client(client)
        try:
            yield openai, yahoo, sec, client
        finally:
            set_market_data_client(previous)
            client.close()


async def until_finished() -> None:
    deadline = time.monotonic() + FINISH_TIMEOUT_S
    while await Brief.objects.filter(status=Brief.Status.RUNNING).aexists():
        if time.monotonic() > deadline:
            raise SystemExit(f"briefs still running after {FINISH_TIMEOUT_S:g} s")
        await asyncio.sleep(0.05)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def measure(morning: Morning, lists: list[list[str]], latency_s: float) -> None:
    await asyncio.to_thread(store_watchlists, lists, morning)
    with far_ends(latency_s) as (openai, yahoo, sec, client):
        started = time.perf_counter()
        fired = await fire_due(morning.fired)
        checked = time.perf_counter() - started
        await until_finished()
        wall = time.perf_counter() - started
    await asyncio.to_thread(report, morning, fired, checked, wall, openai, yahoo, sec, client)


def report(
    morning: Morning,
    fired: int,
    checked: float,
    wall: float,
    openai: FakeOpenAIServer,
    yahoo: FakeYahoo,
    sec: FakeSecServer,
    client: CountingClient,
) -> None:
    briefs = list(Brief.objects.filter(scheduled_for__isnull=False, until=morning.fired))
    seconds = [(b.finished_at - b.created_at).total_seconds() for b in briefs if b.finished_at]
    outcomes = Counter(
        "written by a run" if b.run_id else ("failed: " + b.error["code"] if b.error else "nothing material")
        for b in briefs
    )
    changes = Counter(change["kind"] for b in briefs for change in b.changes)
    ledgers = [m for run in ResearchRun.objects.filter(brief__in=briefs) for m in run.usage["by_model"].values()]
    tokens = {k: sum(ledger[k] for ledger in ledgers) for k in ("input_tokens", "output_tokens")}
    print(f"\n{morning.name} morning, fired {morning.fired.isoformat()}: {fired} briefs started")
    print(f"  wall time: {wall:.1f} s (fire_due returned after {checked:.1f} s: every brief checked)")
    print(f"  per brief, start to end: p50 {percentile(seconds, 50):.1f} s, p95 {percentile(seconds, 95):.1f} s")
    print(f"  briefs: {dict(outcomes)}")
    print(f"  changes found: {dict(changes)}")
    print(f"  MCP tool calls: {sum(client.calls.values())} {dict(client.calls)}")
    print(f"  of which failed: {sum(client.failed.values())} {dict(client.failed)}")
    yahoo_endpoints = Counter(endpoint for _, endpoint in yahoo.calls)
    print(
        f"  Yahoo requests: {len(yahoo.calls)} {dict(yahoo_endpoints)} for {len({s for s, _ in yahoo.calls})} symbols"
    )
    statuses = Counter(request.status for request in sec.requests)
    print(f"  SEC requests: {len(sec.requests)} by status {dict(statuses)}")
    print(f"  model calls: {len(openai.requests)} ({sum(map(is_synthesis, openai.requests))} synthesis)")
    print(
        f"  tokens (the fake's count, ~4 characters a token): {tokens['input_tokens']} in, {tokens['output_tokens']} out"
    )
    if seconds:
        print(f"  mean per brief: {statistics.fmean(seconds):.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watchlists", type=int, default=100)
    parser.add_argument("--symbols", type=int, default=20)
    parser.add_argument("--yahoo-latency", type=float, default=0.0, help="seconds each Yahoo request takes")
    parser.add_argument("--morning", choices=["quiet", "news", "both"], default="both")
    args = parser.parse_args()
    logging.disable(logging.INFO)  # the fake SEC's access log, each run's quality line
    warnings.simplefilter("ignore", DeprecationWarning)  # yfinance's use of pandas
    call_command("migrate", verbosity=0)
    lists = watchlists_symbols(args.watchlists, args.symbols)
    distinct = {symbol for symbols in lists for symbol in symbols}
    print(f"{args.watchlists} watchlists x {args.symbols} symbols: {len(distinct)} distinct of a pool of {len(POOL)}")
    print(f"Yahoo latency per request: {args.yahoo_latency * 1000:g} ms; SEC and model on loopback")
    mornings = {"quiet": [QUIET], "news": [NEWS], "both": [QUIET, NEWS]}[args.morning]
    for morning in mornings:
        asyncio.run(measure(morning, lists, args.yahoo_latency))


if __name__ == "__main__":
    main()
