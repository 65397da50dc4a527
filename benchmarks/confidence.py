"""The cost of the evidence confidence per research round: `python benchmarks/confidence.py`.

What a round pays after its gap detector answers, on findings built like a real round's: five
sub-questions (two answered from market data, three by web searches citing six or seven pages each, 22
sources in all, news, filings, investor relations and a blog among them, some dated in their address),
two gaps and two contradictions. Timed: validating the contradictions, the evidence profile
(`confidence.assess`: classifying and dating the sources, the five components, the weak areas), the
targeted follow-ups and the trace entry, as `rounds.research_in_rounds` runs them.

Figures (median and p95 of `--runs` rounds, in ms):
- first round, cold: every source new (not yet classified or dated), the domain cache empty;
- first round judged again: its sources classified (what a later round pays for earlier findings);
- third round: 15 findings, 66 sources, the first two rounds' already classified.
Target: under 5 ms per round.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from datascraper.market_data.finding_schemas import MarketDataFinding, ToolResult  # noqa: E402
from datascraper.models_config import ResearchConfig  # noqa: E402
from datascraper.plan_schemas import GapReport  # noqa: E402
from datascraper.research_engine.confidence import assess, targeted_follow_ups  # noqa: E402
from datascraper.research_engine.gap_detector import known_contradictions  # noqa: E402
from datascraper.research_engine.source_types import registered_domain  # noqa: E402
from datascraper.research_engine.state import Finding, PlannedStep  # noqa: E402
from datascraper.research_engine.trace import trace_entry  # noqa: E402
from datascraper.schemas import Source  # noqa: E402
from datascraper.trace_schemas import Contradiction  # noqa: E402

TARGET_MS = 5.0
TODAY = date(2025, 6, 13)
CONFIG = ResearchConfig()
WEB_PAGES = [
    "https://www.reuters.com/technology/apple-quarterly-results-{r}-2025-05-01/",
    "https://www.cnbc.com/2025/05/01/apple-aapl-earnings-q2-{r}.html",
    "https://www.sec.gov/Archives/edgar/data/320193/000032019325000057/aapl-20250329-{r}.htm",
    "https://investor.apple.com/sec-filings/annual-reports/{r}/default.aspx",
    "https://www.bloomberg.com/news/articles/2025-05-01/apple-{r}",
    "https://www.ft.com/content/apple-services-{r}",
    "https://seekingalpha.com/article/apple-is-a-buy-{r}",
    "https://www.wsj.com/tech/apple-tariffs-{r}",
    "https://www.microsoft.com/en-us/investor/earnings/fy-2025-q3/press-release-{r}",
    "https://www.theverge.com/2025/5/1/apple-{r}",
    "https://medium.com/@analyst/apple-vs-microsoft-{r}",
    "https://www.marketwatch.com/story/apple-microsoft-{r}",
    "https://www.nasdaq.com/articles/apple-microsoft-{r}",
    "https://www.forbes.com/sites/someone/2025/05/02/apple-{r}/",
    "https://www.businesswire.com/news/home/2025/apple-{r}",
    "https://www.economist.com/business/2025/05/01/apple-{r}",
    "https://www.barrons.com/articles/apple-stock-{r}",
    "https://www.example.com/apple-analysis-{r}",
    "https://www.bls.gov/cpi/{r}",
    "https://www.nber.org/papers/{r}",
]


def web_finding(step_id: str, question: str, pages: list[str], tag: str) -> Finding:
    step = PlannedStep(id=step_id, question=question, type="qualitative", route="web_search")
    sources = [
        Source(n=n, title=f"Page {n}", url=page.format(r=tag), kind="web") for n, page in enumerate(pages, start=1)
    ]
    text = " ".join(f"Claim {n} about the question, with its figures [{n}]." for n in range(1, len(pages) + 1))
    return Finding(step=step, status="answered", route="web_search", text=text, sources=sources)


def market_finding(step_id: str, symbol: str) -> Finding:
    step = PlannedStep(
        id=step_id, question=f"{symbol} quarterly revenue?", type="numerical", route="market_data",
        tickers=[symbol], data="income_statement",
    )  # fmt: skip
    payload = {"symbol": symbol, "frequency": "quarterly", "periods": [{"period_end": "2025-03-31", "TotalRevenue": 9.5e10}]}
    result = ToolResult(
        symbol=symbol, tool="get_financial_statement", data=payload,
        url=f"https://finance.yahoo.com/quote/{symbol}/financials", title=f"Yahoo Finance — {symbol} income statement",
    )  # fmt: skip
    data = MarketDataFinding(tickers=[symbol], data="income_statement", results=[result])
    return Finding(step=step, status="answered", route="market_data", text="figures", market_data=data)


def round_of_findings(round_number: int) -> list[Finding]:
    """Five sub-questions: two from market data, three web searches with 6-7 pages each (22 sources)."""
    first = (round_number - 1) * 5 + 1
    tag = f"r{round_number}"
    return [
        market_finding(f"q{first}", "AAPL"),
        market_finding(f"q{first + 1}", "MSFT"),
        web_finding(f"q{first + 2}", "What do analysts say about Apple?", WEB_PAGES[0:7], tag),
        web_finding(f"q{first + 3}", "What do analysts say about Microsoft?", WEB_PAGES[7:14], tag),
        web_finding(f"q{first + 4}", "What guidance did both give?", WEB_PAGES[14:20], tag),
    ]


REPORT = GapReport(
    complete=False,
    score=6,
    gaps=["Microsoft's guidance for fiscal 2026", "Apple's services margin"],
    contradictions=[
        Contradiction(claim_a="Revenue was $95.4B", finding_a="q3", claim_b="Revenue was $94.9B", finding_b="q5", severity=0.8),
        Contradiction(claim_a="Call on May 1", finding_a="q4", claim_b="Call on May 2", finding_b="q99", severity=0.2),
    ],
)


def one_round(findings: list[Finding], n: int) -> float:
    """The confidence step of round `n` as the loop runs it; seconds."""
    started = time.perf_counter()
    contradictions = known_contradictions(REPORT, findings)
    evidence = assess(
        findings, gaps=REPORT.gaps, contradictions=contradictions, today=TODAY, weights=CONFIG.confidence_weights
    )
    targeted_follow_ups(evidence.weak_areas, asked=set(), room=CONFIG.max_sub_questions)
    trace_entry(n, evidence, previous=None, contradictions=contradictions)
    return time.perf_counter() - started


def measure(runs: int, rounds: int, *, judged_before: int, cold: bool = False) -> list[float]:
    """Round `rounds`'s step, ms, over `runs` fresh runs; the findings of the first `judged_before`
    sub-questions were judged by earlier rounds (classified, their domains cached)."""
    samples = []
    for _ in range(runs):
        findings = [finding for n in range(1, rounds + 1) for finding in round_of_findings(n)]
        if cold:
            registered_domain.cache_clear()
        if judged_before:
            one_round(findings[:judged_before], rounds - 1)
        samples.append(one_round(findings, rounds) * 1000)
    return samples


def report(label: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    verdict = "ok" if statistics.median(samples) < TARGET_MS else "MISSED"
    print(f"{label:<47} p50 {statistics.median(samples):6.3f} ms   p95 {p95:6.3f} ms   ({verdict}: < {TARGET_MS:g} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()

    sample = round_of_findings(1)
    web = {s.url for f in sample for s in f.sources}
    market = {r.url for f in sample if f.market_data is not None for r in f.market_data.results}
    sources = web | market
    print(f"one round: {len(sample)} sub-questions, {len(sources)} sources; {args.runs} rounds timed")
    report("first round, cold (every source new)", measure(args.runs, 1, judged_before=0, cold=True))
    report("first round judged again (sources classified)", measure(args.runs, 1, judged_before=5))
    report("third round (15 findings, 10 judged before)", measure(args.runs, 3, judged_before=10))


if __name__ == "__main__":
    main()
