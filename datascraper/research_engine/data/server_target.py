"""Which market data server research reaches: our server as a stdio child of this interpreter (the default),
or the streamable HTTP server `MARKET_DATA_MCP_URL` names (the server run as its own service, shared by every
app process).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from mcp.client.stdio import StdioServerParameters
from mcp.server.mcpserver import MCPServer

from datascraper.market_data.errors import MarketDataUnavailable

PROJECT_ROOT = Path(__file__).resolve().parents[3]
_SECRET_NAME = re.compile("KEY|SECRET|TOKEN|PASSWORD", re.IGNORECASE)

ServerTarget = MCPServer | StdioServerParameters | str
"""The server object (in-process, for tests), a stdio command, or a streamable HTTP URL."""

MARKET_DATA_MCP_URL_VARIABLE = "MARKET_DATA_MCP_URL"


def default_server_target() -> ServerTarget:
    """The server `MARKET_DATA_MCP_URL` names (streamable HTTP), or else our server as a stdio child.

    Raises:
        MarketDataUnavailable: the variable is set but is not an http(s) URL; its value is not repeated,
            since a URL may carry credentials.
    """
    url = os.environ.get(MARKET_DATA_MCP_URL_VARIABLE, "").strip()
    if not url:
        return default_server_parameters()
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise MarketDataUnavailable(
            f"{MARKET_DATA_MCP_URL_VARIABLE} must be an http(s) URL such as http://127.0.0.1:8765/mcp."
        )
    return url


def default_server_parameters() -> StdioServerParameters:
    """Our server as a stdio child of this interpreter, with this process's environment minus its secrets.

    The SDK gives a stdio child only a handful of variables unless `env` is passed; the server needs
    DJANGO_SETTINGS_MODULE and REDIS_URL to share the app's cache, but no API key or signing secret.
    """
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "datascraper.mcp_server"],
        env=child_environment(os.environ),
        cwd=PROJECT_ROOT,
    )


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without the variables whose name marks a secret (…KEY, …SECRET, …TOKEN, …PASSWORD)."""
    return {name: value for name, value in environ.items() if not _SECRET_NAME.search(name)}
