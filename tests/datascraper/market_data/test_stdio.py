"""The real entry point as a child process: every tool over stdio, the server dying under the client and
being restarted, a clean shutdown, and streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from datascraper import mcp_server
from datascraper.market_data.errors import MarketDataUnavailable
from datascraper.research_engine.data.market_data import fetch_market_data
from datascraper.research_engine.data.market_data_client import set_market_data_client
from datascraper.research_engine.data.server_target import PROJECT_ROOT, child_environment
from datascraper.research_engine.data.session import MarketDataClient
from tests.datascraper.market_data.support import ERROR_CASES, launcher_parameters
from tests.datascraper.market_data.test_tools import TOOL_CALLS, error_of
from tests.processes import free_port, wait_for_port


def read_pid(pid_file: Path) -> int:
    return int(pid_file.read_text())


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize(("tool", "arguments"), TOOL_CALLS)
async def test_every_tool_answers_over_stdio(
    stdio_client: MarketDataClient, tool: str, arguments: dict[str, Any]
) -> None:
    result = await stdio_client.call_tool(tool, arguments)

    assert not result.is_error, result.content
    assert result.structured_content["symbol"] == "AAPL"
    assert result.structured_content["url"].startswith("https://finance.yahoo.com/")


@pytest.mark.parametrize(
    ("symbol", "code"),
    ERROR_CASES,
)
async def test_each_error_code_crosses_stdio_as_one_sentence(
    stdio_client: MarketDataClient, symbol: str, code: str
) -> None:
    result = await stdio_client.call_tool("get_quote", {"symbol": symbol})

    assert error_of(result)[0] == code


def test_research_runs_on_several_event_loops_share_one_server(stdio_client: MarketDataClient, pid_file: Path) -> None:
    previous = set_market_data_client(stdio_client)
    findings = []

    def research_run(symbol: str) -> None:
        findings.append(asyncio.run(fetch_market_data([symbol, "AAPL"], "price_history")))

    try:
        asyncio.run(fetch_market_data(["AAPL"], "quote"))
        server_pid = read_pid(pid_file)
        runs = [threading.Thread(target=research_run, args=(symbol,)) for symbol in ("MSFT", "NVDA", "^GSPC")]
        for run in runs:
            run.start()
        for run in runs:
            run.join(timeout=30)
    finally:
        set_market_data_client(previous)

    assert sorted(len(finding.results) for finding in findings) == [2, 2, 2]
    assert read_pid(pid_file) == server_pid


async def test_a_dead_server_is_restarted_once_by_the_next_call_then_stopped_on_close(tmp_path: Path) -> None:
    pid_file, broken = tmp_path / "server.pid", tmp_path / "broken"
    launcher = launcher_parameters("--pid-file", str(pid_file), "--fail-start-if", str(broken))
    client = MarketDataClient(launcher, call_timeout_s=10, restart_backoff_s=1.0)
    try:
        assert not (await client.call_tool("get_quote", {"symbol": "AAPL"})).is_error
        first = read_pid(pid_file)

        os.kill(first, signal.SIGKILL)
        restarted = await client.call_tool("get_quote", {"symbol": "AAPL"})
        second = read_pid(pid_file)

        broken.touch()
        os.kill(second, signal.SIGKILL)
        with pytest.raises(MarketDataUnavailable):
            await client.call_tool("get_quote", {"symbol": "AAPL"})

        # Two failures in a row: the next start waits out the backoff, and calls meanwhile fail fast.
        broken.unlink()
        with pytest.raises(MarketDataUnavailable) as backing_off:
            await client.call_tool("get_quote", {"symbol": "MSFT"})
        await asyncio.sleep(1.0)
        recovered = await client.call_tool("get_quote", {"symbol": "MSFT"})
        last = read_pid(pid_file)
    finally:
        await client.aclose()

    assert "the next start is in" in backing_off.value.message
    assert not restarted.is_error and second != first and not is_running(first)
    assert not recovered.is_error and last not in (first, second)
    assert not is_running(last)


async def test_a_production_server_started_without_the_apps_secrets_still_serves() -> None:
    app_environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "the-apps-signing-secret",
    }
    parameters = launcher_parameters(django=True).model_copy(update={"env": child_environment(app_environment)})
    client = MarketDataClient(parameters, call_timeout_s=10)
    try:
        result = await client.call_tool("get_quote", {"symbol": "AAPL"})
    finally:
        await client.aclose()

    assert "DJANGO_SECRET_KEY" not in parameters.env
    assert not result.is_error, result.content


async def test_a_server_dying_mid_call_twice_gives_a_named_error(stdio_client: MarketDataClient) -> None:
    # CRASH kills the server during the call; the restarted server dies on the retry too.
    with pytest.raises(MarketDataUnavailable) as caught:
        await stdio_client.call_tool("get_quote", {"symbol": "CRASH"})

    assert caught.value.message == "The market data server stopped again after a restart."


async def test_the_server_answers_over_streamable_http_on_localhost() -> None:
    port = free_port()
    parameters = launcher_parameters("--http", "--port", str(port))
    server = subprocess.Popen(
        [parameters.command, *parameters.args], env=parameters.env, cwd=PROJECT_ROOT, stderr=subprocess.DEVNULL
    )
    client = MarketDataClient(f"http://127.0.0.1:{port}/mcp", call_timeout_s=10)
    try:
        await asyncio.to_thread(wait_for_port, port, server)
        result = await client.call_tool("get_quote", {"symbol": "^GSPC"})
        failure = await client.call_tool("get_quote", {"symbol": "LIMIT"})
    finally:
        await client.aclose()
        server.terminate()
        server.wait(timeout=10)

    assert result.structured_content["url"] == "https://finance.yahoo.com/quote/%5EGSPC"
    assert error_of(failure)[0] == "rate_limited"


def test_the_entry_point_serves_stdio_by_default_and_http_on_request() -> None:
    assert mcp_server.parse_args([]).http is False
    options = mcp_server.parse_args(["--http", "--port", "9001", "--upstream-timeout", "2.5"])
    assert (options.http, options.port, options.upstream_timeout) == (True, 9001, 2.5)
