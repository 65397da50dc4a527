"""A warm, watched server, with the real entry point as a stdio child: started before the first call, a hung
server (alive but silent: SIGSTOP) detected by the health check and replaced, calls never left hanging."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from datascraper.market_data.errors import MarketDataTimeout
from datascraper.models_config import get_research_config
from datascraper.research_engine.data import market_data_client as session_module
from datascraper.research_engine.data.market_data_client import set_market_data_client, warm_up_market_data
from datascraper.research_engine.data.session import MarketDataClient
from tests.datascraper.market_data.support import launcher_parameters
from tests.datascraper.market_data.test_stdio import is_running, read_pid


async def wait_for_new_pid(pid_file: Path, old: int | None, deadline_s: float = 20.0) -> int:
    """The pid the next server writes; fails the test if none does within the deadline."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if pid_file.exists() and pid_file.read_text() and read_pid(pid_file) != old:
            return read_pid(pid_file)
        await asyncio.sleep(0.05)
    raise AssertionError(f"no new market data server within {deadline_s} s")


def stop(pid: int) -> None:
    """Freeze the server: the process lives, its pipes stay open, nothing answers."""
    os.kill(pid, signal.SIGSTOP)


def reap(pid: int) -> None:
    """Kill a frozen server a failed test may have left."""
    if is_running(pid):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def warm_start(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """MARKET_DATA_WARM_START=1 (the suite turns it off for every other test)."""
    monkeypatch.setenv("MARKET_DATA_WARM_START", "1")
    get_research_config.cache_clear()
    yield
    get_research_config.cache_clear()


async def test_starting_the_client_starts_the_server_before_the_first_call(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    client = MarketDataClient(launcher_parameters("--pid-file", str(pid_file)), call_timeout_s=10)
    try:
        started = await asyncio.wrap_future(client.start())
        warm = read_pid(pid_file)
        alive_before_any_call = is_running(warm)
        result = await client.call_tool("get_quote", {"symbol": "AAPL"})
        serving = read_pid(pid_file)
    finally:
        await client.aclose()

    assert started and alive_before_any_call
    assert not result.is_error and serving == warm, "the first call used the warm server"
    assert not is_running(warm)


async def test_the_process_warm_up_starts_the_process_wide_server_in_the_background(
    tmp_path: Path, warm_start: None
) -> None:
    pid_file = tmp_path / "server.pid"
    client = MarketDataClient(launcher_parameters("--pid-file", str(pid_file)), call_timeout_s=10)
    previous = set_market_data_client(client)
    try:
        warm_up_market_data()
        server = await wait_for_new_pid(pid_file, None)
        result = await client.call_tool("get_quote", {"symbol": "AAPL"})
    finally:
        set_market_data_client(previous)
        await client.aclose()

    assert not result.is_error and read_pid(pid_file) == server


def test_warm_up_is_off_with_its_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "_client", None)
    monkeypatch.setenv("MARKET_DATA_WARM_START", "0")
    get_research_config.cache_clear()
    try:
        warm_up_market_data()
    finally:
        get_research_config.cache_clear()

    assert session_module._client is None, "no process-wide client, so no server, was created"


async def test_a_failed_warm_up_is_logged_and_the_first_call_starts_the_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pid_file, broken = tmp_path / "server.pid", tmp_path / "broken"
    broken.touch()
    launcher = launcher_parameters("--pid-file", str(pid_file), "--fail-start-if", str(broken))
    client = MarketDataClient(launcher, call_timeout_s=10)
    try:
        with caplog.at_level(logging.WARNING, logger="datascraper.research_engine.data.session"):
            started = await asyncio.wrap_future(client.start())
        no_server = not pid_file.exists()
        broken.unlink()
        result = await client.call_tool("get_quote", {"symbol": "AAPL"})
    finally:
        await client.aclose()

    assert started is False and no_server
    assert "The market data server did not start" in caplog.text
    assert not result.is_error and pid_file.exists()


async def test_a_hung_server_is_found_by_the_health_check_killed_and_replaced(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    client = MarketDataClient(
        launcher_parameters("--pid-file", str(pid_file)),
        call_timeout_s=30,
        health_interval_s=0.5,
        health_timeout_s=0.5,
    )
    hung = None
    try:
        await asyncio.wrap_future(client.start())
        hung = read_pid(pid_file)
        stop(hung)
        # In flight on the frozen server: it must not wait out its 30 s.
        with pytest.raises(MarketDataTimeout) as in_flight:
            await client.call_tool("get_quote", {"symbol": "AAPL"})
        replacement = await wait_for_new_pid(pid_file, hung)
        after = await client.call_tool("get_quote", {"symbol": "MSFT"})
        await client.aclose()  # waits for the retired server's shutdown: SIGTERM after 2 s, SIGKILL after 4 s
        killed = not is_running(hung)
    finally:
        await client.aclose()
        if hung is not None:
            reap(hung)

    assert in_flight.value.message == (
        "The market data server stopped answering during get_quote; it is being restarted."
    )
    assert replacement != hung and not after.is_error and read_pid(pid_file) == replacement
    assert killed


async def test_a_call_that_times_out_checks_the_server_at_once(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    # The periodic check is an hour away: only the timed-out call can trigger this one.
    client = MarketDataClient(
        launcher_parameters("--pid-file", str(pid_file)),
        call_timeout_s=10,
        health_interval_s=3600,
        health_timeout_s=0.5,
    )
    hung = None
    try:
        await asyncio.wrap_future(client.start())
        hung = read_pid(pid_file)
        stop(hung)
        with pytest.raises(MarketDataTimeout):
            await client.call_tool("get_quote", {"symbol": "AAPL"}, timeout_s=0.5)
        replacement = await wait_for_new_pid(pid_file, hung)
        after = await client.call_tool("get_quote", {"symbol": "AAPL"})
    finally:
        await client.aclose()
        if hung is not None:
            reap(hung)

    assert replacement != hung and not after.is_error


async def test_a_healthy_server_is_kept_across_health_checks(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    client = MarketDataClient(
        launcher_parameters("--pid-file", str(pid_file)), call_timeout_s=10, health_interval_s=0.1
    )
    try:
        await asyncio.wrap_future(client.start())
        first = read_pid(pid_file)
        await asyncio.sleep(1.0)  # about ten checks
        result = await client.call_tool("get_quote", {"symbol": "AAPL"})
    finally:
        await client.aclose()

    assert read_pid(pid_file) == first and not result.is_error
