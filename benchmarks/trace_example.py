"""The research trace example of docs/confidence.md, from a real run: `python benchmarks/trace_example.py`.

Runs "How did Apple's revenue change over the last 3 quarters, and what do analysts expect next?" through
`run_research` in mode research and prints the `round` events a client receives, then the run's
`confidence` and `trace` (`GET /api/runs/{id}`) and the answer. Only the far ends are fakes: the fake
OpenAI server, scripted with the analyzer's plan, the gap detector's verdicts (complete both times, a
minor contradiction the second time), the web searches' cited pages and the answer's words, and the fake
yfinance (anchored at 2025-06-13) behind the real MCP server and client. The confidence, the shallow
verdict, the weak areas, the follow-up they asked for and the stop reason are the code's own. Not a
timing: it prints no figure for the performance table.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# The searches cite scripted addresses on real sites: checking them would reach the network and come out
# differently on each machine. The trace is what this example shows; docs/citations.md shows the check.
os.environ["CITATION_VERIFY"] = "0"

from benchmarks.fake_upstreams import fake_upstreams  # noqa: E402
from datascraper.plan_schemas import GapReport, QueryAnalysis  # noqa: E402
from datascraper.research_engine import run_research  # noqa: E402
from datascraper.schemas import ResearchQuery, RunSummary  # noqa: E402
from datascraper.trace_schemas import Contradiction  # noqa: E402
from tests.datascraper.research_support import is_analysis, is_gap_report, is_synthesis, searched, sub  # noqa: E402
from tests.fakes.openai_server import JsonReply, Sentence, TextReply  # noqa: E402

QUESTION = "How did Apple's revenue change over the last 3 quarters, and what do analysts expect next?"
ANALYSIS = QueryAnalysis(
    needs_decomposition=True,
    sub_questions=[
        sub("What was Apple's quarterly revenue over the last 3 quarters?", "numerical", ["AAPL"], "income_statement",
            frequency="quarterly", periods=3),
        sub("What do analysts expect from Apple's fiscal Q3 2025 results?"),
    ],
)  # fmt: skip
FIRST_SEARCH = [
    Sentence(
        "Analysts expect fiscal Q3 revenue of about $89.3 billion and EPS of $1.42.",
        cites=[("https://www.reuters.com/technology/apple-q3-preview/", "Apple Q3 preview - Reuters")],
    ),
]
CONFIRMING_SEARCH = [
    Sentence(
        "Consensus estimates put revenue at $89.2 billion and EPS at $1.43.",
        cites=[("https://www.ft.com/content/apple-q3-consensus", "Apple consensus - FT")],
    ),
    Sentence(
        "Apple guided to low- to mid-single-digit revenue growth.",
        cites=[("https://investor.apple.com/investor-relations/default.aspx", "Investor Relations - Apple")],
    ),
]
SECOND_VERDICT = GapReport(
    complete=True,
    score=9,
    contradictions=[
        Contradiction(
            claim_a="EPS expected at $1.42", finding_a="q2", claim_b="EPS expected at $1.43", finding_b="q3", severity=0.2
        )
    ],
)
ANSWER = [
    "Apple's revenue fell 23.28% in the quarter to March 2025 after the holiday quarter [1].",
    "Analysts expect about $89.2-89.3 billion next quarter and EPS of $1.42-1.43 [2][3], within Apple's guidance [4].",
]


async def main() -> None:
    with fake_upstreams() as fake:
        fake.script(JsonReply(ANALYSIS), when=is_analysis)
        fake.script(TextReply(CONFIRMING_SEARCH), when=searched("Confirm or correct"))
        fake.script(TextReply(FIRST_SEARCH), when=searched("analysts expect"), times=1)
        fake.script(JsonReply(GapReport(complete=True, score=8.5)), when=is_gap_report, times=1)
        fake.script(JsonReply(SECOND_VERDICT), when=is_gap_report)
        fake.script(TextReply(ANSWER), when=is_synthesis)
        summary = None
        async for event in run_research(ResearchQuery(question=QUESTION, mode="research")):
            if isinstance(event, RunSummary):
                summary = event
            elif event.type == "round":
                print(f"event: round\ndata: {json.dumps(event.payload(), ensure_ascii=False)}\n")
        assert summary is not None
        print("GET /api/runs/{id} -> confidence")
        print(json.dumps(summary.confidence.model_dump(mode="json"), ensure_ascii=False, indent=1))
        print("GET /api/runs/{id} -> trace")
        print(json.dumps([entry.model_dump(mode="json") for entry in summary.trace], ensure_ascii=False, indent=1))
        print(f"\nanswer:\n{summary.answer}")


if __name__ == "__main__":
    asyncio.run(main())
