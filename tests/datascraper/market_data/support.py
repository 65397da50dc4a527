"""Helpers shared by the market data tests: an in-memory MCP caller and the fake-yfinance stdio command."""

from __future__ import annotations

import os
import sys
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, Tool

from datascraper.mcp_server import MarketDataServer
from datascraper.research_engine.data.server_target import PROJECT_ROOT


class InMemoryMCP:
    """A real MCP client connected in memory, one session per call.

    A session must be entered and exited in the same task, and an async fixture's setup and teardown
    run in different tasks; a session per call keeps each inside the test's own task.
    """

    def __init__(self, server: MarketDataServer) -> None:
        self.server = server

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        async with Client(self.server) as client:
            return await client.call_tool(name, arguments)

    async def list_tools(self) -> list[Tool]:
        async with Client(self.server) as client:
            return (await client.list_tools()).tools


def launcher_parameters(*args: str, django: bool = False) -> StdioServerParameters:
    """The real server entry point with the fake yfinance, as a stdio child.

    Without `django`, DJANGO_SETTINGS_MODULE is left out, so the child starts faster and uses the
    in-process cache; with it, the child sets up Django as it does when the app starts it.
    """
    env = dict(os.environ)
    if not django:
        env.pop("DJANGO_SETTINGS_MODULE", None)
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "tests.fakes.market_data_launcher", *args],
        env=env,
        cwd=PROJECT_ROOT,
    )


# One fake symbol per error code of the tools (see tests/fakes/yfinance.py).
ERROR_CASES = [
    ("XX$", "invalid_symbol"),
    ("EMPTY", "no_data"),
    ("NOSUCH", "no_data"),
    ("LIMIT", "rate_limited"),
    ("BOOM", "upstream_error"),
    ("HANG", "timeout"),
]
