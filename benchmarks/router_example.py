"""The README's router example, from a real run: `python benchmarks/router_example.py`.

Runs "Compare AAPL and MSFT revenue growth over the last 3 quarters" through `run_research` in mode auto,
as the chat app does, and prints what a client receives (each event as SSE: `event:` and `data:`), then
the facts stored on the run (`GET /api/runs/{id}` → `facts`). Only the far ends are fakes: the fake
OpenAI server, scripted with the analyzer's decomposition, a complete gap report and the answer's words,
and the fake yfinance (anchored at 2025-06-13) behind the real MCP server and client. The plan's routing,
the periods asked, the statements cut to them, the sources with their as-of dates, the charts and the
computed figures are the code's own. Not a timing: it prints no figure for the performance table.

`--brief` prints the same run as the README shows it, one line per thing a reader looks at (the plan, the
round, the charts, the answer, the sources, their check, the facts); `tests/test_docs.py` runs it and
fails when the README's block no longer matches.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.fake_upstreams import fake_upstreams  # noqa: E402
from datascraper.plan_schemas import GapReport, QueryAnalysis  # noqa: E402
from datascraper.research_engine import run_research  # noqa: E402
from datascraper.schemas import ChartEvent, CheckpointEvent, PlanEvent, ResearchQuery, RoundEvent, RunSummary  # noqa: E402
from tests.datascraper.research_support import is_analysis, is_gap_report, is_synthesis, sub  # noqa: E402
from tests.fakes.openai_server import JsonReply, TextReply  # noqa: E402

QUESTION = "Compare AAPL and MSFT revenue growth over the last 3 quarters"
ANALYSIS = QueryAnalysis(
    needs_decomposition=True,
    sub_questions=[
        sub("What was Apple's quarterly revenue over the last 3 quarters?", "numerical", ["AAPL"], "income_statement",
            frequency="quarterly", periods=3),
        # The analyzer left this one's period fields unset: the router reads them from its words.
        sub("What was Microsoft's revenue over the last 3 quarters?", "numerical", ["MSFT"], "income_statement"),
        sub("Which company's quarterly revenue grew faster?", "analytical"),
    ],
)  # fmt: skip
ANSWER = [
    "Apple's revenue fell 23.28% in the quarter to March 2025 after the holiday quarter, but grew 5.08% over "
    "the same quarter a year earlier [1].",
    "Microsoft's revenue also fell 23.28% quarter over quarter and grew 5.08% year over year [2].",
]


BRIEF_FACTS = 4  # the README shows the first few; the full run prints every one


def print_brief(summary: RunSummary, plan: PlanEvent, rounds: list[RoundEvent], charts: list[ChartEvent]) -> None:
    """The run as a reader scans it: what was planned and routed, what the code computed, what it cited."""
    print(f"question: {QUESTION}")
    for sub_question in plan.sub_questions:
        print(f"plan:     {sub_question.id} {sub_question.type} -> {sub_question.route}: {sub_question.question}")
    for round_ in rounds:
        print(f"round {round_.n}:  complete={round_.complete} confidence={round_.confidence} stop={round_.stop_reason}")
    for chart in charts:
        print(f"chart:    {chart.id} {chart.kind} [{chart.source_n}] {chart.title} ({chart.unit}, as of {chart.as_of})")
    print(f"answer:   {summary.answer}")
    for source in summary.sources:
        print(f"source:   [{source.n}] {source.title} (as of {source.as_of})")
    for check in summary.verification:
        print(f"check:    [{check.n}] {check.status}")
    for fact in summary.facts[:BRIEF_FACTS]:
        value = f"{fact.value / 1e9:,.2f}B" if abs(fact.value) >= 1e9 else f"{fact.value:g}"
        print(f"fact:     {fact.id} {fact.label} = {value} {fact.unit}")
    if len(summary.facts) > BRIEF_FACTS:
        print(f"fact:     ... {len(summary.facts) - BRIEF_FACTS} more (GET /api/runs/{{id}} -> facts)")
    print(f"numbers:  {json.dumps(summary.signals.get('numbers'))}")


async def main(brief: bool) -> None:
    # The speculative web search is cancelled once the analyzer plans research: the fake server then logs
    # its write to the closed connection, which is expected here.
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    with fake_upstreams() as fake:
        fake.script(JsonReply(ANALYSIS), when=is_analysis)
        fake.script(JsonReply(GapReport(complete=True, score=9, gaps=[], follow_up_queries=[])), when=is_gap_report)
        fake.script(TextReply(ANSWER), when=is_synthesis)
        summary, plan, rounds, charts = None, None, [], []
        async for event in run_research(ResearchQuery(question=QUESTION, mode="auto")):
            if isinstance(event, RunSummary):
                summary = event
                continue
            plan = event if isinstance(event, PlanEvent) else plan
            rounds += [event] if isinstance(event, RoundEvent) else []
            charts += [event] if isinstance(event, ChartEvent) else []
            if not brief and not isinstance(event, CheckpointEvent):  # checkpoints: stored for resumption, never sent
                print(f"event: {event.type}\ndata: {json.dumps(event.payload(), ensure_ascii=False)}\n")
        assert summary is not None and plan is not None
        if brief:
            print_brief(summary, plan, rounds, charts)
            return
        print("GET /api/runs/{id} -> facts")
        for fact in summary.facts:
            print(json.dumps(fact.model_dump(mode="json"), ensure_ascii=False))
        print(f"\nnumbers: {json.dumps(summary.signals.get('numbers'))}")


if __name__ == "__main__":
    asyncio.run(main(brief="--brief" in sys.argv[1:]))
