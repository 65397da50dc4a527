"""The far ends of a run, faked, for the README's example scripts (`router_example.py`, `trace_example.py`,
`filings_example.py`, ...).

Not a benchmark: importing it runs nothing. `fake_upstreams()` starts the fake OpenAI server and points
the research config at it, and installs the real MCP server and client over the fake yfinance (anchored
at 2025-06-13); the code between them is the real code. With `sec=True` it also starts the fake SEC on
loopback and points the server's filing tools at it (the real SEC client, with a User-Agent naming a
contact, as `SEC_USER_AGENT` would); without it the filing tools are configured from the environment as
in the app.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
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
from datascraper.providers.openai.client import reset_openai_client  # noqa: E402
from datascraper.research_engine.data.market_data_client import set_market_data_client  # noqa: E402
from datascraper.research_engine.data.session import MarketDataClient  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer  # noqa: E402
from tests.fakes.sec_server import FakeSecServer  # noqa: E402
from tests.fakes.yfinance import FakeYahoo  # noqa: E402

MARKET_NOW = datetime(2025, 6, 13, 20, 0, tzinfo=UTC)
# Who the examples say they are to the (fake) SEC: it refuses a User-Agent without a contact address.
EXAMPLE_USER_AGENT = "Finance Research Example ops@example.com"


@contextmanager
def fake_upstreams(*, sec: bool = False, server: FakeOpenAIServer | None = None) -> Iterator[FakeOpenAIServer]:
    """The fake OpenAI server (script it before running) with the market data client installed; with `sec`,
    the filing tools on the same server read the fake SEC, which stops at exit. `server`: a model server the
    caller started and configured itself (a fake Chat Completions server), used instead, OpenAI left unset."""
    with ExitStack() as stack:
        fake = server if server is not None else stack.enter_context(FakeOpenAIServer())
        if server is None:
            os.environ.update(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="example-key")
        get_research_config.cache_clear()
        reset_openai_client()
        filings = None  # the app's: FilingsService.from_env()
        if sec:
            sec_server = stack.enter_context(FakeSecServer())
            config = FilingsConfig(
                user_agent=EXAMPLE_USER_AGENT, data_url=sec_server.data_url, www_url=sec_server.www_url
            )
            filings = FilingsService(SecClient(config, cache=TTLCache()))
        adapter = YahooFinanceAdapter(FakeYahoo().ticker, cache=TTLCache(), now=lambda: MARKET_NOW)
        client = MarketDataClient(build_server(adapter, filings))
        previous = set_market_data_client(client)
        try:
            yield fake
        finally:
            set_market_data_client(previous)
            client.close()
