"""Market data for numerical sub-questions: our Yahoo Finance MCP server and the client that calls it.

`yahoo` is the one yfinance adapter, `server` exposes it as MCP tools, `client` holds the process-wide
session and `fetch_market_data`, the routing function of the research engine. Nothing here imports Django
at module level; the Django cache is used only when the entry point finds Django configured.
"""
