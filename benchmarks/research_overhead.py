"""What the research router adds to upstream latency: `python benchmarks/research_overhead.py`.

Figures, against the fake OpenAI server (latencies set per reply) and the in-memory market data server
over the fake yfinance:
- (a) bypass overhead: time to the first answer token through `run_research` in quick mode, minus the time
  to the first text delta of the same Responses call made directly with the SDK (median of paired runs,
  alternating). Target: at most 10 ms.
- (b) research efficiency: the wall time of a research run with 3 sub-questions per round and 2 rounds,
  divided by its critical path of upstream latencies: analyzer + per round (slowest sub-question + gap
  detector) + synthesizer. Each model call's latency is the one the fake server recorded for it
  (`RecordedRequest.started_at` to `ended_at`: request read to last byte sent); market data's is the
  `elapsed_ms` its step reported. Median of runs on a warm client. Target: at most 1.05.

Options: `--runs` (paired bypass runs, default 30), `--research-runs` (research runs, default 5).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from datascraper.llm import get_openai_client, reset_openai_client  # noqa: E402
from datascraper.market_data.cache import TTLCache  # noqa: E402
from datascraper.market_data.client import MarketDataClient, set_market_data_client  # noqa: E402
from datascraper.market_data.server import build_server  # noqa: E402
from datascraper.market_data.yahoo import YahooFinanceAdapter  # noqa: E402
from datascraper.models_config import get_research_config  # noqa: E402
from datascraper.openai_search import WEB_SEARCH_TOOL  # noqa: E402
from datascraper.research_engine import run_research  # noqa: E402
from datascraper.schemas import GapReport, QueryAnalysis, ResearchQuery, StepEvent, SubQuestion  # noqa: E402
from tests.fakes.openai_server import (  # noqa: E402
    FakeOpenAIServer,
    JsonReply,
    RecordedRequest,
    Sentence,
    TextReply,
    has_web_search,
)
from tests.fakes.yfinance import FakeYahoo  # noqa: E402

BYPASS_TARGET_MS = 10.0
EFFICIENCY_TARGET = 1.05
QUICK_QUESTION = "How did Apple's last quarter go?"
ANSWER = TextReply(
    [Sentence("Apple's revenue rose 6% to $94.9 billion.", cites=[("https://www.reuters.com/apple", "Reuters")])],
    first_byte_delay=0.08,
    delta_delay=0.005,
)


def configure(fake: FakeOpenAIServer, **env: str) -> None:
    os.environ.update(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="bench-key", **env)
    get_research_config.cache_clear()
    reset_openai_client()


# --- (a) the bypass ---------------------------------------------------------------------------------------


async def direct_first_delta_s() -> float:
    config = get_research_config()
    started = time.perf_counter()
    stream = await get_openai_client().responses.create(
        model=config.research_model, input=QUICK_QUESTION, tools=[WEB_SEARCH_TOOL], stream=True
    )
    first: float | None = None
    async with stream:
        async for event in stream:
            if first is None and event.type == "response.output_text.delta":
                first = time.perf_counter() - started
    assert first is not None
    return first


async def bypass_first_delta_s() -> float:
    started = time.perf_counter()
    first: float | None = None
    async for event in run_research(ResearchQuery(question=QUICK_QUESTION, mode="quick")):
        if first is None and event.type == "delta":
            first = time.perf_counter() - started
    assert first is not None
    return first


async def bypass_overhead(runs: int) -> tuple[float, float, float]:
    with FakeOpenAIServer() as fake:
        configure(fake)
        fake.set_default(ANSWER)
        await direct_first_delta_s()  # warm the connection pool and imports
        await bypass_first_delta_s()
        direct: list[float] = []
        bypass: list[float] = []
        for _ in range(runs):
            direct.append(await direct_first_delta_s())
            bypass.append(await bypass_first_delta_s())
    overheads = [(b - d) * 1000 for b, d in zip(bypass, direct, strict=True)]
    return statistics.median(direct) * 1000, statistics.median(bypass) * 1000, statistics.median(overheads)


# --- (b) a research run -------------------------------------------------------------------------------------

ANALYZER_S, GAP_S, SEARCH_S, SYNTHESIS_S, YAHOO_S = 0.25, 0.2, (0.3, 0.4), 0.2, 0.05


def round_questions(n: int) -> list[SubQuestion]:
    return [
        SubQuestion(question=f"Round {n}: what is Apple's revenue?", type="numerical", tickers=["AAPL"], data="income_statement"),
        SubQuestion(question=f"Round {n}: what do analysts say about Apple?", type="qualitative"),
        SubQuestion(question=f"Round {n}: what guidance did Apple give?", type="qualitative"),
    ]


def script_research(fake: FakeOpenAIServer) -> None:
    def schema(name: str) -> Callable[[RecordedRequest], bool]:
        return lambda request: (request.text_format or {}).get("name") == name

    fake.script(
        JsonReply(QueryAnalysis(needs_decomposition=True, sub_questions=round_questions(1)), first_byte_delay=ANALYZER_S),
        when=schema("QueryAnalysis"),
    )
    fake.script(
        JsonReply(GapReport(complete=False, score=5, gaps=["more"], follow_up_queries=round_questions(2)), first_byte_delay=GAP_S),
        when=schema("GapReport"),
    )
    fake.script(
        JsonReply(GapReport(complete=False, score=7, gaps=["more"], follow_up_queries=[]), first_byte_delay=GAP_S),
        when=schema("GapReport"),
    )
    for n in (1, 2):
        for part, delay in zip(("analysts", "guidance"), SEARCH_S, strict=True):
            fake.script(
                TextReply([Sentence(f"Finding on {part}.", cites=[(f"https://news.example/{part}/{n}", part)])], first_byte_delay=delay),
                when=lambda r, part=part, n=n: r.has_web_search and f"Round {n}:" in r.input_text and part in r.input_text,
            )
    fake.script(
        TextReply(["Apple's revenue was $391.04 billion [1]; analysts are positive [2]."], first_byte_delay=SYNTHESIS_S),
        when=lambda r: not r.has_web_search and not r.is_structured,
    )


def duration(request: RecordedRequest) -> float:
    assert request.ended_at is not None, "request not finished"
    return request.ended_at - request.started_at


async def research_efficiency(fake: FakeOpenAIServer) -> tuple[float, float]:
    """One research run on a warm client (as in the server process): its wall time and its critical path,
    both in seconds."""
    script_research(fake)
    seen = len(fake.requests)
    started = time.perf_counter()
    events = [event async for event in run_research(ResearchQuery(question="How is Apple doing?", mode="research"))]
    wall = time.perf_counter() - started
    requests = fake.requests[seen:]

    def of(predicate: Callable[[RecordedRequest], bool]) -> list[RecordedRequest]:
        return [request for request in requests if predicate(request)]

    analyzer = of(lambda r: (r.text_format or {}).get("name") == "QueryAnalysis")
    gap_reports = of(lambda r: (r.text_format or {}).get("name") == "GapReport")
    synthesis = of(lambda r: not r.has_web_search and not r.is_structured)
    assert len(analyzer) == 1 and len(gap_reports) == 2 and len(synthesis) == 1, "unexpected calls"
    market_s = {
        e.sub_question_id: e.elapsed_ms / 1000
        for e in events
        if isinstance(e, StepEvent) and e.route == "market_data" and e.state == "done"
    }
    critical = duration(analyzer[0]) + sum(duration(r) for r in gap_reports) + duration(synthesis[0])
    for n, market_id in ((1, "q1"), (2, "q4")):
        searches = [duration(r) for r in of(has_web_search) if f"Round {n}:" in r.input_text]
        critical += max([*searches, market_s.get(market_id, 0.0)])
    return wall, critical


def install_market_data() -> MarketDataClient:
    yahoo = FakeYahoo(latency_s=YAHOO_S)
    client = MarketDataClient(build_server(YahooFinanceAdapter(yahoo.ticker, cache=TTLCache())), call_timeout_s=10)
    set_market_data_client(client)
    return client


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


async def main(runs: int, research_runs: int) -> None:
    direct_ms, bypass_ms, overhead_ms = await bypass_overhead(runs)
    print(f"(a) bypass, {runs} paired runs: first delta direct {direct_ms:.1f} ms, through run_research "
          f"{bypass_ms:.1f} ms; median overhead {overhead_ms:.2f} ms "
          f"(target <= {BYPASS_TARGET_MS:g} ms: {verdict(overhead_ms <= BYPASS_TARGET_MS)})")

    client = install_market_data()
    try:
        with FakeOpenAIServer() as fake:
            configure(fake, RESEARCH_MAX_ITERATIONS="2", RESEARCH_CONCURRENCY="5")
            await research_efficiency(fake)  # warm-up: connections, market data session
            results = [await research_efficiency(fake) for _ in range(research_runs)]
    finally:
        await asyncio.to_thread(client.close)
    for wall, critical in results:
        print(f"    research run: wall {wall * 1000:.0f} ms; critical path {critical * 1000:.0f} ms "
              f"(ratio {wall / critical:.3f})")
    ratio = statistics.median(wall / critical for wall, critical in results)
    over_ms = statistics.median((wall - critical) * 1000 for wall, critical in results)
    print(f"(b) research, 3 sub-questions x 2 rounds, {research_runs} runs: median wall / critical path {ratio:.3f} "
          f"(target <= {EFFICIENCY_TARGET:g}: {verdict(ratio <= EFFICIENCY_TARGET)}); median {over_ms:.0f} ms over the path")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="paired runs for the bypass overhead")
    parser.add_argument("--research-runs", type=int, default=5, help="research runs for the efficiency ratio")
    options = parser.parse_args()
    asyncio.run(main(options.runs, options.research_runs))
