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
- (c) a simple question that is not a quote, in mode auto: time to the first answer token minus that of
  the direct call, with a 300 ms analyzer, speculative search on and off, for several latencies of the
  search's first text delta (a real web search writes after searching: about a second or more). With the
  speculation the overhead is what the analyzer takes beyond that first delta. Target: at most 10 ms.
- (d) what a cancelled speculative search costs on a complex question (the research run of (b) in mode
  auto): how long the call ran before it was closed, the tokens it reported, and the run's wall time with
  the speculation on minus off (paired runs).
- (e) the first research run of a fresh process, as an operator sees it: a child process starts as the
  web process does (the ASGI lifespan's startup of `config.asgi`: the market data server with Django over
  stdio, the fake yfinance behind it, and the model warm-up), and once it reports ready asks the research
  question of (b), then once more. The first run's critical path takes market data at its warm latency
  (the second run's), so the ratio shows what a process's first use still costs. Also printed: the time
  to ready. (A question cannot arrive earlier: uvicorn accepts connections once the startup completes.)
  Target: at most 1.1.

Options: `--runs` (paired bypass runs, default 30), `--research-runs` (research runs, default 5),
`--auto-runs` (paired runs per (c) and (d) case, default 10), `--fresh-processes` (default 3).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.mcp_calls import fake_server  # noqa: E402
from datascraper.cache import TTLCache  # noqa: E402
from datascraper.market_data.yahoo import YahooFinanceAdapter  # noqa: E402
from datascraper.mcp_server import build_server  # noqa: E402
from datascraper.models_config import get_research_config  # noqa: E402
from datascraper.plan_schemas import GapReport, QueryAnalysis, SubQuestion  # noqa: E402
from datascraper.providers.openai.client import get_openai_client, reset_openai_client  # noqa: E402
from datascraper.providers.openai.stream import WEB_SEARCH_TOOL  # noqa: E402
from datascraper.research_engine import run_research  # noqa: E402
from datascraper.research_engine.data.market_data_client import set_market_data_client  # noqa: E402
from datascraper.research_engine.data.session import MarketDataClient  # noqa: E402
from datascraper.schemas import ResearchQuery, StepEvent  # noqa: E402
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
FRESH_PROCESS_TARGET = 1.1
QUICK_QUESTION = "How did Apple's last quarter go?"
SIMPLE_QUESTION = "What did Apple announce at its latest product event?"
ANSWER = TextReply(
    [Sentence("Apple's revenue rose 6% to $94.9 billion.", cites=[("https://www.reuters.com/apple", "Reuters")])],
    first_byte_delay=0.08,
    delta_delay=0.005,
)


def configure(fake: FakeOpenAIServer, **env: str) -> None:
    # The answers cite pages that do not exist; citation checks, after the answer, have their own benchmark
    # (benchmarks/verification.py) and stay out of these wall times.
    os.environ.update(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="bench-key", CITATION_VERIFY="0", **env)
    get_research_config.cache_clear()
    reset_openai_client()


# --- (a) the bypass ---------------------------------------------------------------------------------------


async def direct_first_delta_s(question: str = QUICK_QUESTION) -> float:
    config = get_research_config()
    started = time.perf_counter()
    stream = await get_openai_client().responses.create(
        model=config.research_model, input=question, tools=[WEB_SEARCH_TOOL], stream=True
    )
    first: float | None = None
    async with stream:
        async for event in stream:
            if first is None and event.type == "response.output_text.delta":
                first = time.perf_counter() - started
    assert first is not None
    return first


async def bypass_first_delta_s(question: str = QUICK_QUESTION, mode: str = "quick") -> float:
    started = time.perf_counter()
    first: float | None = None
    async for event in run_research(ResearchQuery(question=question, mode=mode)):
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


# --- (c) a simple question in mode auto: the analyzer and the speculative search ----------------------------

AUTO_ANALYZER_S = 0.3
SEARCH_FIRST_DELTA_S = (1.0, 0.3, 0.08)


def is_analysis(request: RecordedRequest) -> bool:
    return (request.text_format or {}).get("name") == "QueryAnalysis"


def set_speculation(on: bool) -> None:
    """RESEARCH_SPECULATIVE_SEARCH for the next runs; the client (and its warm connections) stays."""
    os.environ["RESEARCH_SPECULATIVE_SEARCH"] = "1" if on else "0"
    get_research_config.cache_clear()


async def auto_overhead(runs: int, search_s: float, *, speculative: bool) -> tuple[float, float, float]:
    with FakeOpenAIServer() as fake:
        configure(fake)
        set_speculation(speculative)
        fake.set_default(dataclasses.replace(ANSWER, first_byte_delay=search_s))
        fake.script(
            JsonReply(QueryAnalysis(needs_decomposition=False), first_byte_delay=AUTO_ANALYZER_S),
            when=is_analysis,
            times=None,
        )
        await direct_first_delta_s(SIMPLE_QUESTION)  # warm the connection pool
        await bypass_first_delta_s(SIMPLE_QUESTION, "auto")
        direct: list[float] = []
        auto: list[float] = []
        for _ in range(runs):
            direct.append(await direct_first_delta_s(SIMPLE_QUESTION))
            auto.append(await bypass_first_delta_s(SIMPLE_QUESTION, "auto"))
    overheads = [(a - d) * 1000 for a, d in zip(auto, direct, strict=True)]
    return statistics.median(direct) * 1000, statistics.median(auto) * 1000, statistics.median(overheads)


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
            # Two independent publishers each: evidence the confidence rules trust, so each round runs the
            # gap detector's sub-questions only, none asking for confirmation.
            cites = [(f"https://www.reuters.com/{part}/{n}", part), (f"https://www.ft.com/{part}/{n}", part)]
            fake.script(
                TextReply([Sentence(f"Finding on {part}.", cites=cites)], first_byte_delay=delay),
                when=lambda r, part=part, n=n: r.has_web_search and f"Round {n}:" in r.input_text and part in r.input_text,
            )
    fake.script(
        TextReply(["Apple's revenue was $391.04 billion [1]; analysts are positive [2]."], first_byte_delay=SYNTHESIS_S),
        when=lambda r: not r.has_web_search and not r.is_structured,
    )


def duration(request: RecordedRequest) -> float:
    assert request.ended_at is not None, "request not finished"
    return request.ended_at - request.started_at


# The market data sub-question of each round.
MARKET_STEPS = {1: "q1", 2: "q4"}


@dataclasses.dataclass
class ResearchRun:
    wall: float  # seconds
    planner_and_synthesis: float  # analyzer + gap detectors + synthesizer, as the fake timed them
    slowest_search: dict[int, float]  # per round
    market_s: dict[str, float]  # market data steps' elapsed time, by sub-question id
    verdict_to_research: float  # from the analyzer's last byte to the first sub-question's search request
    signals: dict

    def critical(self, market_s: dict[str, float] | None = None) -> float:
        """The critical path of upstream latencies; `market_s` in place of the market data latencies this
        run's steps reported (a first run's include the server's start, which is no upstream latency)."""
        market_s = self.market_s if market_s is None else market_s
        return self.planner_and_synthesis + sum(
            max(self.slowest_search[n], market_s.get(step, 0.0)) for n, step in MARKET_STEPS.items()
        )


async def research_efficiency(fake: FakeOpenAIServer, *, mode: str = "research") -> ResearchRun:
    """One research run on a warm client (as in the server process), with what its critical path needs."""
    script_research(fake)
    seen = len(fake.requests)
    started = time.perf_counter()
    events = [event async for event in run_research(ResearchQuery(question="How is Apple doing?", mode=mode))]
    wall = time.perf_counter() - started
    requests = fake.requests[seen:]

    def of(predicate: Callable[[RecordedRequest], bool]) -> list[RecordedRequest]:
        return [request for request in requests if predicate(request)]

    analyzer = of(is_analysis)
    gap_reports = of(lambda r: (r.text_format or {}).get("name") == "GapReport")
    synthesis = of(lambda r: not r.has_web_search and not r.is_structured)
    assert len(analyzer) == 1 and len(gap_reports) == 2 and len(synthesis) == 1, "unexpected calls"
    market_s = {
        e.sub_question_id: e.elapsed_ms / 1000
        for e in events
        if isinstance(e, StepEvent) and e.route == "market_data" and e.state == "done"
    }
    slowest_search = {
        n: max(duration(r) for r in of(has_web_search) if f"Round {n}:" in r.input_text) for n in MARKET_STEPS
    }
    planner_and_synthesis = duration(analyzer[0]) + sum(duration(r) for r in gap_reports) + duration(synthesis[0])
    first_search = min(r.started_at for r in of(has_web_search) if "Round 1:" in r.input_text)
    verdict_to_research = first_search - (analyzer[0].ended_at or 0.0)
    return ResearchRun(wall, planner_and_synthesis, slowest_search, market_s, verdict_to_research, events[-1].signals)


def install_market_data() -> MarketDataClient:
    yahoo = FakeYahoo(latency_s=YAHOO_S)
    client = MarketDataClient(build_server(YahooFinanceAdapter(yahoo.ticker, cache=TTLCache())), call_timeout_s=10)
    set_market_data_client(client)
    return client


# --- (d) the cost of a cancelled speculative search ----------------------------------------------------------

SPECULATIVE_SEARCH_S = 1.0  # the complex question's own web search, were it kept


async def cancelled_speculation(fake: FakeOpenAIServer, runs: int) -> tuple[list[dict], list[float], list[float]]:
    """Over `runs` paired auto-mode research runs: the speculation signals (speculation on), and the time
    from the analyzer's verdict to the first sub-question's request, on and off, in milliseconds. (Whole
    run times differ by more noise, on a shared machine, than a cancel could add.)"""
    fake.set_default(dataclasses.replace(ANSWER, first_byte_delay=SPECULATIVE_SEARCH_S))
    speculations: list[dict] = []
    on_ms: list[float] = []
    off_ms: list[float] = []
    for _ in range(runs):
        set_speculation(True)
        on = await research_efficiency(fake, mode="auto")
        set_speculation(False)
        off = await research_efficiency(fake, mode="auto")
        speculations.append(on.signals["speculative_search"])
        on_ms.append(on.verdict_to_research * 1000)
        off_ms.append(off.verdict_to_research * 1000)
    set_speculation(True)
    return speculations, on_ms, off_ms


# --- (e) the first research run of a fresh process ----------------------------------------------------------


async def fresh_process_child() -> None:
    """In a child process: start as the web process does, ask once it reports ready, ask again; print the
    figures."""
    os.environ.setdefault("DJANGO_DEBUG", "1")  # a development start, as `make run` is: DEBUG off needs a secret key
    from config.asgi import MarketDataLifespan  # sets Django up, as the ASGI server's import of the app does

    with FakeOpenAIServer() as fake:
        configure(fake, RESEARCH_MAX_ITERATIONS="2", RESEARCH_CONCURRENCY="5")
        set_market_data_client(MarketDataClient(fake_server(YAHOO_S, django=True), call_timeout_s=30))
        # Uvicorn's side of the lifespan protocol: startup, then (after the runs) shutdown, which closes the client.
        inbox: asyncio.Queue[dict] = asyncio.Queue()
        outbox: asyncio.Queue[dict] = asyncio.Queue()
        lifespan = asyncio.create_task(
            MarketDataLifespan(app=None)({"type": "lifespan", "asgi": {"version": "3.0"}}, inbox.get, outbox.put)
        )
        started = time.perf_counter()
        await inbox.put({"type": "lifespan.startup"})
        assert (await outbox.get())["type"] == "lifespan.startup.complete"
        ready_s = time.perf_counter() - started
        try:
            first = await research_efficiency(fake)
            second = await research_efficiency(fake)
        finally:
            await inbox.put({"type": "lifespan.shutdown"})
            await lifespan
    critical = first.critical(second.market_s)
    print(json.dumps({"wall": first.wall, "critical": critical, "first_market_s": first.market_s, "ready_s": ready_s}))


def fresh_process_runs(processes: int) -> list[dict]:
    runs = []
    for _ in range(processes):
        child = subprocess.run(
            [sys.executable, __file__, "--fresh-process-child"],
            capture_output=True,
            text=True,
            timeout=180,
            cwd=ROOT,
            check=True,
        )
        runs.append(json.loads(child.stdout.strip().splitlines()[-1]))
    return runs


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


async def main(options: argparse.Namespace) -> None:
    runs, research_runs, auto_runs = options.runs, options.research_runs, options.auto_runs
    direct_ms, bypass_ms, overhead_ms = await bypass_overhead(runs)
    print(f"(a) bypass, {runs} paired runs: first delta direct {direct_ms:.1f} ms, through run_research "
          f"{bypass_ms:.1f} ms; median overhead {overhead_ms:.2f} ms "
          f"(target <= {BYPASS_TARGET_MS:g} ms: {verdict(overhead_ms <= BYPASS_TARGET_MS)})")

    print(f"(c) simple non-quote question, mode auto, analyzer {AUTO_ANALYZER_S * 1000:.0f} ms, {auto_runs} paired runs:")
    for search_s in SEARCH_FIRST_DELTA_S:
        for speculative in (True, False):
            direct_ms, auto_ms, overhead_ms = await auto_overhead(auto_runs, search_s, speculative=speculative)
            # The target holds where a web search writes after the analyzer has decided; a search quicker
            # than the analyzer waits for the verdict (it must not show an answer the plan may replace).
            target = ""
            if speculative and search_s > AUTO_ANALYZER_S:
                target = f" (target <= {BYPASS_TARGET_MS:g} ms: {verdict(overhead_ms <= BYPASS_TARGET_MS)})"
            elif speculative:
                target = " (no target: the analyzer is the slower)"
            print(f"    search's first delta {search_s * 1000:4.0f} ms, speculation {'on ' if speculative else 'off'}: "
                  f"direct {direct_ms:.0f} ms, auto {auto_ms:.0f} ms; median overhead {overhead_ms:.1f} ms{target}")

    client = install_market_data()
    try:
        with FakeOpenAIServer() as fake:
            configure(fake, RESEARCH_MAX_ITERATIONS="2", RESEARCH_CONCURRENCY="5")
            await research_efficiency(fake)  # warm-up: connections, market data session
            results = [await research_efficiency(fake) for _ in range(research_runs)]
            speculations, on_ms, off_ms = await cancelled_speculation(fake, auto_runs)
    finally:
        await asyncio.to_thread(client.close)
    for run in results:
        print(f"    research run: wall {run.wall * 1000:.0f} ms; critical path {run.critical() * 1000:.0f} ms "
              f"(ratio {run.wall / run.critical():.3f})")
    ratio = statistics.median(run.wall / run.critical() for run in results)
    over_ms = statistics.median((run.wall - run.critical()) * 1000 for run in results)
    print(f"(b) research, 3 sub-questions x 2 rounds, {research_runs} runs: median wall / critical path {ratio:.3f} "
          f"(target <= {EFFICIENCY_TARGET:g}: {verdict(ratio <= EFFICIENCY_TARGET)}); median {over_ms:.0f} ms over the path")

    outcomes = {speculation["outcome"] for speculation in speculations}
    ran_ms = statistics.median(speculation["elapsed_ms"] for speculation in speculations)
    tokens = sum(speculation["input_tokens"] + speculation["output_tokens"] for speculation in speculations)
    print(f"(d) complex question, mode auto, {auto_runs} paired runs: speculative search {'/'.join(sorted(outcomes))}, "
          f"ran a median {ran_ms:.0f} ms before it was closed, {tokens} tokens reported in all; from the analyzer's "
          f"verdict to the first sub-question's request: median {statistics.median(on_ms):.1f} ms with it, "
          f"{statistics.median(off_ms):.1f} ms without")

    fresh = fresh_process_runs(options.fresh_processes)
    for run in fresh:
        steps = ", ".join(f"{step} {seconds * 1000:.0f} ms" for step, seconds in sorted(run["first_market_s"].items()))
        print(f"    fresh process: ready after {run['ready_s'] * 1000:.0f} ms; first run wall {run['wall'] * 1000:.0f} ms; "
              f"critical path {run['critical'] * 1000:.0f} ms (ratio {run['wall'] / run['critical']:.3f}); "
              f"market data steps {steps}")
    fresh_ratio = statistics.median(run["wall"] / run["critical"] for run in fresh)
    print(f"(e) first research run of a fresh process, asked once it reports ready, {len(fresh)} processes: median "
          f"wall / critical path {fresh_ratio:.3f} (target <= {FRESH_PROCESS_TARGET:g}: "
          f"{verdict(fresh_ratio <= FRESH_PROCESS_TARGET)}); median time to ready "
          f"{statistics.median(run['ready_s'] for run in fresh) * 1000:.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="paired runs for the bypass overhead")
    parser.add_argument("--research-runs", type=int, default=5, help="research runs for the efficiency ratio")
    parser.add_argument("--auto-runs", type=int, default=10, help="paired runs per mode-auto case")
    parser.add_argument("--fresh-processes", type=int, default=3, help="fresh processes for the first-run ratio")
    parser.add_argument("--fresh-process-child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.fresh_process_child:
        asyncio.run(fresh_process_child())
    else:
        asyncio.run(main(options))
