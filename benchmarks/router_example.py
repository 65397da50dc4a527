"""The README's router example, from a real run: `python benchmarks/router_example.py`.

Runs "Compare AAPL and MSFT revenue growth over the last 3 quarters" through `run_research` in mode auto,
as the chat app does, and prints what a client receives (each event as SSE: `event:` and `data:`), then
the facts stored on the run (`GET /api/runs/{id}` → `facts`). Only the far ends are fakes: the fake
OpenAI server, scripted with the analyzer's decomposition, a complete gap report and the answer's words,
and the fake yfinance (anchored at 2025-06-13) behind the real MCP server and client. The plan's routing,
the periods asked, the statements cut to them, the sources with their as-of dates, the charts and the
computed figures are the code's own. Not a timing: it prints no figure for the performance table.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from datascraper.llm import reset_openai_client  # noqa: E402
from datascraper.market_data.cache import TTLCache  # noqa: E402
from datascraper.market_data.client import MarketDataClient, set_market_data_client  # noqa: E402
from datascraper.market_data.server import build_server  # noqa: E402
from datascraper.market_data.yahoo import YahooFinanceAdapter  # noqa: E402
from datascraper.models_config import get_research_config  # noqa: E402
from datascraper.research_engine import run_research  # noqa: E402
from datascraper.schemas import CheckpointEvent, GapReport, QueryAnalysis, ResearchQuery, RunSummary  # noqa: E402
from tests.datascraper.research_support import is_analysis, is_gap_report, is_synthesis, sub  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer, JsonReply, TextReply  # noqa: E402
from tests.fakes.yfinance import FakeYahoo  # noqa: E402

QUESTION = "Compare AAPL and MSFT revenue growth over the last 3 quarters"
MARKET_NOW = datetime(2025, 6, 13, 20, 0, tzinfo=UTC)
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


async def main() -> None:
    # The speculative web search is cancelled once the analyzer plans research: the fake server then logs
    # its write to the closed connection, which is expected here.
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    with FakeOpenAIServer() as fake:
        os.environ.update(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="example-key")
        get_research_config.cache_clear()
        reset_openai_client()
        fake.script(JsonReply(ANALYSIS), when=is_analysis)
        fake.script(JsonReply(GapReport(complete=True, score=9, gaps=[], follow_up_queries=[])), when=is_gap_report)
        fake.script(TextReply(ANSWER), when=is_synthesis)
        yahoo = FakeYahoo()
        adapter = YahooFinanceAdapter(yahoo.ticker, cache=TTLCache(), now=lambda: MARKET_NOW)
        client = MarketDataClient(build_server(adapter))
        set_market_data_client(client)
        try:
            summary = None
            async for event in run_research(ResearchQuery(question=QUESTION, mode="auto")):
                if isinstance(event, RunSummary):
                    summary = event
                elif not isinstance(event, CheckpointEvent):  # stored for resumption, never sent
                    print(f"event: {event.type}\ndata: {json.dumps(event.payload(), ensure_ascii=False)}\n")
            assert summary is not None
            print("GET /api/runs/{id} -> facts")
            for fact in summary.facts:
                print(json.dumps(fact.model_dump(mode="json"), ensure_ascii=False))
            print(f"\nnumbers: {json.dumps(summary.signals.get('numbers'))}")
        finally:
            client.close()


if __name__ == "__main__":
    asyncio.run(main())
