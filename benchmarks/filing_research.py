"""What the SEC's figures add to a statement sub-question: `python benchmarks/filing_research.py [--samples N]`.

One numerical sub-question (Apple's annual income statement, fiscal 2023 to 2024) answered by the real
executor through the real MCP server and client (in memory), the real yfinance over the fake Yahoo and the
real SEC client over the fake SEC on loopback, three ways:
- Yahoo alone (`SEC_USER_AGENT` unset: each filing tool answers `not_configured` at once);
- with the filings, cold (fresh caches: the ticker map and the company facts fetched, five lines asked);
- with the filings, warm (the same server again: everything from the caches).

p50 of `--samples` sub-questions each; the fake SEC and Yahoo answer at once, so this is our own time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from datascraper.cache import TTLCache  # noqa: E402
from datascraper.filings.client import SecClient  # noqa: E402
from datascraper.filings.config import FilingsConfig  # noqa: E402
from datascraper.filings.service import FilingsService  # noqa: E402
from datascraper.market_data.yahoo import YahooFinanceAdapter  # noqa: E402
from datascraper.mcp_server import build_server  # noqa: E402
from datascraper.models_config import get_research_config  # noqa: E402
from datascraper.plan_schemas import SubQuestion  # noqa: E402
from datascraper.research_engine.data.market_data_client import set_market_data_client  # noqa: E402
from datascraper.research_engine.data.session import MarketDataClient  # noqa: E402
from datascraper.research_engine.executor import SubQuestionAttempt, answer_sub_question  # noqa: E402
from datascraper.research_engine.state import plan_steps  # noqa: E402
from datascraper.schemas import UsageLedger  # noqa: E402
from tests.fakes.sec_server import FakeSecServer  # noqa: E402
from tests.fakes.yahoo_listings import TODAY  # noqa: E402
from tests.fakes.yfinance import FakeYahoo  # noqa: E402

QUESTION = SubQuestion(
    question="What was Apple's revenue in fiscal 2023 and fiscal 2024?",
    type="numerical",
    tickers=["AAPL"],
    data="income_statement",
    frequency="annual",
    fiscal_period="FY2023-FY2024",
)


BUDGETS = tempfile.TemporaryDirectory()


def client_for(sec: FakeSecServer, user_agent: str) -> MarketDataClient:
    # A request budget of its own for each new client, as for its empty cache: this measures our side, not
    # the SEC's pacing.
    budget = tempfile.mkdtemp(dir=BUDGETS.name)
    config = FilingsConfig(user_agent=user_agent, data_url=sec.data_url, www_url=sec.www_url, limiter_dir=budget)
    filings = FilingsService(SecClient(config, cache=TTLCache()))
    adapter = YahooFinanceAdapter(FakeYahoo().ticker, cache=TTLCache())
    return MarketDataClient(build_server(adapter, filings), call_timeout_s=10)


async def answer_once(client: MarketDataClient) -> float:
    previous = set_market_data_client(client)
    [step] = plan_steps([QUESTION], first_number=1, today=TODAY)
    started = time.perf_counter()
    finding = await answer_sub_question(
        step,
        lambda event: None,
        time.monotonic(),
        SubQuestionAttempt(route="market_data"),
        config=get_research_config(),
        ledger=UsageLedger(),
        today=TODAY,
    )
    elapsed = time.perf_counter() - started
    set_market_data_client(previous)
    assert finding.status == "answered", finding
    return elapsed


async def timings(sec: FakeSecServer, user_agent: str, samples: int, *, warm: bool) -> list[float]:
    seconds = []
    client = client_for(sec, user_agent)
    await answer_once(client)  # the server's own start is not what is measured
    for _ in range(samples):
        if not warm:
            client.close()
            client = client_for(sec, user_agent)
            await warm_yahoo(client)
        seconds.append(await answer_once(client))
    client.close()
    return seconds


async def warm_yahoo(client: MarketDataClient) -> None:
    """Start a fresh client's server and cache Yahoo's statement, so a cold sample measures the SEC's part."""
    await client.call_tool("get_financial_statement", {"symbol": "AAPL", "statement": "income", "frequency": "annual"})


def ms(seconds: list[float]) -> str:
    return f"p50 {statistics.median(seconds) * 1000:.1f} ms, max {max(seconds) * 1000:.1f} ms"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=15)
    args = parser.parse_args()
    with FakeSecServer(max_per_second=1_000_000) as sec:
        alone = await timings(sec, "", args.samples, warm=True)
        cold = await timings(sec, "Benchmarks ops@example.com", args.samples, warm=False)
        warm = await timings(sec, "Benchmarks ops@example.com", args.samples, warm=True)
    print("statement sub-question (AAPL, annual income, FY2023-FY2024), Yahoo cached:")
    print(f"  Yahoo alone (SEC_USER_AGENT unset)  {ms(alone)}")
    print(f"  with the SEC's figures, cold        {ms(cold)}")
    print(f"  with the SEC's figures, warm        {ms(warm)}")


if __name__ == "__main__":
    asyncio.run(main())
