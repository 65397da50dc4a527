"""The ASGI lifespan: the market data server starts with the web process and stops with it; a failure to
start it never stops the web process from starting."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config.asgi import MarketDataLifespan
from datascraper.models_config import get_research_config
from datascraper.research_engine.data import market_data_client as session_module
from datascraper.research_engine.data.market_data_client import set_market_data_client
from datascraper.research_engine.data.session import MarketDataClient
from tests.datascraper.market_data.support import launcher_parameters
from tests.datascraper.market_data.test_stdio import is_running
from tests.datascraper.market_data.test_watch import wait_for_new_pid


@pytest.fixture
def warm_start(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("MARKET_DATA_WARM_START", "1")
    get_research_config.cache_clear()
    yield
    get_research_config.cache_clear()


class LifespanDriver:
    """Plays the ASGI server's side of the lifespan protocol."""

    def __init__(self, app: Any) -> None:
        self.inbox: asyncio.Queue[dict[str, str]] = asyncio.Queue()
        self.sent: list[str] = []
        self.task = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}}, self.receive, self.send))

    async def receive(self) -> dict[str, str]:
        return await self.inbox.get()

    async def send(self, message: dict[str, str]) -> None:
        self.sent.append(message["type"])

    async def step(self, message_type: str) -> None:
        before = len(self.sent)
        await self.inbox.put({"type": message_type})
        while len(self.sent) == before and not self.task.done():
            await asyncio.sleep(0.01)


async def test_startup_starts_the_market_data_server_and_shutdown_stops_it(tmp_path: Path, warm_start: None) -> None:
    pid_file = tmp_path / "server.pid"
    client = MarketDataClient(launcher_parameters("--pid-file", str(pid_file)), call_timeout_s=10)
    previous = set_market_data_client(client)
    try:
        lifespan = LifespanDriver(MarketDataLifespan(app=None))
        await lifespan.step("lifespan.startup")
        server = await wait_for_new_pid(pid_file, None)
        await lifespan.step("lifespan.shutdown")
        await asyncio.wait_for(lifespan.task, 20)
    finally:
        set_market_data_client(previous)
        await client.aclose()

    assert lifespan.sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert not is_running(server)


async def test_a_market_data_server_that_cannot_start_does_not_stop_the_web_process(
    monkeypatch: pytest.MonkeyPatch, warm_start: None, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(session_module, "_client", None)
    monkeypatch.setenv("MARKET_DATA_MCP_URL", "ftp://market-data.internal/mcp")

    with caplog.at_level(logging.WARNING, logger="datascraper.research_engine.data.market_data_client"):
        lifespan = LifespanDriver(MarketDataLifespan(app=None))
        await lifespan.step("lifespan.startup")
    await lifespan.step("lifespan.shutdown")

    assert lifespan.sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert "The market data server was not started ahead of use" in caplog.text


async def test_web_processes_of_the_queue_backend_leave_the_server_to_the_workers(
    monkeypatch: pytest.MonkeyPatch, settings: Any, warm_start: None
) -> None:
    settings.RUNS_BACKEND = "queue"
    monkeypatch.setattr(session_module, "_client", None)

    lifespan = LifespanDriver(MarketDataLifespan(app=None))
    await lifespan.step("lifespan.startup")
    await lifespan.step("lifespan.shutdown")

    assert lifespan.sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert session_module._client is None, "no market data client, so no server, in a web process of the queue"


async def test_other_scopes_reach_the_django_application() -> None:
    scopes = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        scopes.append(scope["type"])

    await MarketDataLifespan(app)({"type": "http"}, None, None)

    assert scopes == ["http"]
