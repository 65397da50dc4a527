"""The SEC's EDGAR as a source: reported XBRL figures, a company's filings, a filing section's text and
Form 4 insider transactions, each result citing the filing it came from.

Beside `market_data/` (Yahoo), not inside it: a source of its own, served by the same MCP server
(`tools.py` says why). Plain HTTP to the SEC's JSON APIs rather than `edgartools` (docs/filings.md says why).
"""
