"""`python -m datascraper.mcp_server`: the market data MCP server (Yahoo Finance and SEC filings) over stdio,
or over streamable HTTP on 127.0.0.1 with `--http --port N`.

When DJANGO_SETTINGS_MODULE and REDIS_URL are set (the app starts the server with its own environment,
secrets removed), Django is set up so the tools share the app's cache in Redis; otherwise the cache is
in-process and bounded in bytes (Django's in-process cache is bounded only in entries, and shares nothing).
"""

from __future__ import annotations

import argparse
import os
import secrets
from collections.abc import Sequence

from datascraper.filings.service import FilingsService
from datascraper.market_data.cache import DjangoCacheStore, TTLCache
from datascraper.market_data.server import build_server
from datascraper.market_data.yahoo import DEFAULT_UPSTREAM_TIMEOUT_S, TickerFactory, YahooFinanceAdapter


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m datascraper.mcp_server",
        description="The Yahoo Finance MCP server: stdio by default, streamable HTTP on 127.0.0.1 with --http.",
    )
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1 instead of stdio")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    parser.add_argument(
        "--upstream-timeout",
        type=float,
        default=DEFAULT_UPSTREAM_TIMEOUT_S,
        help=f"seconds to wait for one yfinance call (default {DEFAULT_UPSTREAM_TIMEOUT_S:g})",
    )
    return parser.parse_args(argv)


def build_cache() -> TTLCache:
    """The app's Django cache when Django is configured with Redis, else an in-process one."""
    if os.environ.get("DJANGO_SETTINGS_MODULE") and os.environ.get("REDIS_URL", "").strip():
        import django

        # The app withholds DJANGO_SECRET_KEY, which production settings require; this server signs nothing.
        os.environ.setdefault("DJANGO_SECRET_KEY", secrets.token_urlsafe(50))
        django.setup()
        return TTLCache(DjangoCacheStore())
    return TTLCache()


def main(argv: Sequence[str] | None = None, *, ticker_factory: TickerFactory | None = None) -> None:
    """Serve until stdin closes (stdio) or the process is stopped (HTTP).

    `ticker_factory` replaces `yfinance.Ticker`; the test launcher passes a fake.
    """
    args = parse_args(argv)
    cache = build_cache()
    adapter = YahooFinanceAdapter(ticker_factory, cache=cache, timeout_s=args.upstream_timeout)
    server = build_server(adapter, FilingsService.from_env(cache=cache))
    if args.http:
        server.run(transport="streamable-http", host="127.0.0.1", port=args.port)
    else:
        server.run()


if __name__ == "__main__":
    main()
