"""The README's SEC filings example, from a real run against the fakes: `python benchmarks/filings_example.py`.

Runs "How did Apple's revenue change from fiscal 2023 to fiscal 2024, what did it report for its latest
quarter, and what did its latest earnings release say?" through `run_research` in mode auto, as the chat app
does, and prints what a client receives (each event as SSE: `event:` and `data:`). Only the far ends are
fakes: the fake OpenAI server, scripted with the analyzer's plan, a complete gap report and the answer's
words; the fake yfinance (anchored at 2025-06-13); and the fake SEC on loopback (Apple's fiscal 2024 10-K,
its Q1 FY2025 10-Q figures and its 8-K of 2025-01-30), behind the real SEC client, MCP server and client.
The figures asked of XBRL, the filings they cite (form, period, filing date), the 8-K item read, the
numbering of the sources, the citation check and the number check are the code's own. The fake SEC's
documents are short, written for the tests; its figures are Apple's reported ones. Not a timing: it prints
no figure for the performance table.

`--brief` prints the same run as the README shows it, one line per thing a reader looks at (the plan, the
round, the answer, the sources with their form, period and filing date, their check, any contradictions,
the number check); `tests/test_docs.py` runs it and fails when the README's block no longer matches.
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
from datascraper.schemas import CheckpointEvent, PlanEvent, ResearchQuery, RoundEvent, RunSummary  # noqa: E402
from tests.datascraper.research_support import is_analysis, is_gap_report, is_synthesis, sub  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer, JsonReply, TextReply  # noqa: E402

QUESTION = (
    "How did Apple's revenue change from fiscal 2023 to fiscal 2024, what did it report for its latest "
    "quarter, and what did its latest earnings release say?"
)
ANALYSIS = QueryAnalysis(
    needs_decomposition=True,
    sub_questions=[
        sub("What was Apple's revenue in fiscal 2023 and fiscal 2024?", "numerical", ["AAPL"], "income_statement",
            frequency="annual", fiscal_period="FY2023-FY2024"),
        sub("What was Apple's revenue in its latest quarter, Q1 FY2025?", "numerical", ["AAPL"], "income_statement",
            frequency="quarterly", fiscal_period="Q1 FY2025"),
        sub("What did Apple's latest earnings release say?", "qualitative", ["AAPL"], "filing_text", section="2.02"),
        sub("How did Apple's revenue change, and how does the latest quarter compare?", "analytical"),
    ],
)  # fmt: skip
# The answer's words, citing the run's sources by their numbers: [1] the FY2024 10-K, [2] Yahoo's annual
# statement, [3] the Q1 FY2025 10-Q, [4] Yahoo's quarterly statement, [5] the 8-K's item 2.02 (`--brief` lists
# them; the 8-K's passage holds its exhibit 99.1, the press release). Its figures are the filed ones.
ANSWER = [
    "Apple's revenue was $391,035 million in fiscal 2024, up 2.02% from $383,285 million in fiscal 2023 [1].",
    "In its latest quarter, the first of fiscal 2025, ended December 28, 2024, revenue was $124,300 million [3].",
    "Its earnings release (Form 8-K, Item 2.02, with the press release as Exhibit 99.1) reported quarterly "
    "revenue up 4 percent year over year and diluted earnings per share of $2.40, up 10 percent [5].",
]


def contradictions(fake: FakeOpenAIServer) -> list[str]:
    """The disagreements the answer was told to present: Yahoo's statement lines against the filed figures
    (the cross-check) and any the gap detector left unresolved, as the answer's prompt lists them."""
    [synthesis] = [request for request in fake.requests if is_synthesis(request)]
    _, _, section = synthesis.input_text.partition("### Contradictions\n")
    listed = section.split("\n\n", 1)[0].splitlines()
    return [line.removeprefix("- ") for line in listed if line.startswith("- ")]


def print_brief(summary: RunSummary, plan: PlanEvent, rounds: list[RoundEvent], disagreements: list[str]) -> None:
    """The run as a reader scans it: what was planned, which filings the figures cite, what the checks found."""
    print("(a run against the fakes: the fake SEC, Yahoo and OpenAI; the code between them is the real code)")
    print(f"question: {QUESTION}")
    for sub_question in plan.sub_questions:
        print(f"plan:     {sub_question.id} {sub_question.type} -> {sub_question.route}: {sub_question.question}")
    for round_ in rounds:
        print(f"round {round_.n}:  complete={round_.complete} confidence={round_.confidence} stop={round_.stop_reason}")
    print(f"answer:   {summary.answer}")
    for source in summary.sources:
        if source.kind == "filing":
            about = f"{source.form}, {source.period}, filed {source.filed}"
        else:
            about = f"as of {source.as_of}"
        print(f"source:   [{source.n}] {source.kind} ({about}) {source.title}")
    for check in summary.verification:
        print(f"check:    [{check.n}] {check.status}")
    for disagreement in disagreements or ["none"]:
        print(f"contra:   {disagreement}")
    print(f"numbers:  {json.dumps(summary.signals.get('numbers'))}")


async def main(brief: bool) -> None:
    # The speculative web search is cancelled once the analyzer plans research: the fake server then logs
    # its write to the closed connection, which is expected here.
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    with fake_upstreams(sec=True) as fake:
        fake.script(JsonReply(ANALYSIS), when=is_analysis)
        fake.script(JsonReply(GapReport(complete=True, score=9, gaps=[], follow_up_queries=[])), when=is_gap_report)
        fake.script(TextReply(ANSWER), when=is_synthesis)
        summary, plan, rounds = None, None, []
        async for event in run_research(ResearchQuery(question=QUESTION, mode="auto")):
            if isinstance(event, RunSummary):
                summary = event
                continue
            plan = event if isinstance(event, PlanEvent) else plan
            rounds += [event] if isinstance(event, RoundEvent) else []
            if not brief and not isinstance(event, CheckpointEvent):  # checkpoints: stored for resumption, never sent
                print(f"event: {event.type}\ndata: {json.dumps(event.payload(), ensure_ascii=False)}\n")
        assert summary is not None and plan is not None
        if brief:
            print_brief(summary, plan, rounds, contradictions(fake))
            return
        print(f"numbers: {json.dumps(summary.signals.get('numbers'))}")


if __name__ == "__main__":
    asyncio.run(main(brief="--brief" in sys.argv[1:]))
