"""A fake Yahoo Finance at yfinance's HTTP boundary: the real `yfinance.Ticker` runs, Yahoo does not.

Why this seam: yfinance sends every request through one process-wide `YfData`, which holds a curl_cffi
`Session`. `FakeYahoo.session` is such a Session (a subclass, so yfinance accepts it) whose `request`
answers from canned replies instead of the network. Everything above it is yfinance's own code: the
cookie and crumb dance (fc.yahoo.com, /v1/test/getcrumb, the csrf fallback), the retry with the other
cookie strategy after a 4xx, `YFRateLimitError` on a 429, its `lru_cache`, and all of its parsing. A
loopback server would test the same code with a TLS proxy in between; patching `YfData` methods would skip
the cookie handling. Replies are built by `tests/fakes/yahoo_replies.py` from `tests/fakes/yahoo_listings.py`.

Some symbols script failures, at the wire:

| symbol  | behaviour                                                                          |
|---------|------------------------------------------------------------------------------------|
| EMPTY   | a listing with no data: empty chart, empty modules and statements, no news          |
| NOSUCH  | a symbol Yahoo does not know: 404 on chart and quoteSummary, empty lists elsewhere   |
| NANS    | finite price, but nulls, NaN and Infinity in the other figures                      |
| LIMIT   | HTTP 429 "Too Many Requests" on every request                                       |
| BOOM    | the connection fails (curl's "Could not resolve host")                              |
| NOINFO  | quoteSummary and /v7/finance/quote fail as BOOM does; chart, statements, news load   |
| NORATE  | no upgrade/downgrade history (yfinance raises YFDataException on the empty list)     |
| HANG    | blocks until `FakeYahoo.release` is set (or `hang_s` passes)                        |
| CRASH   | kills the whole process, as a segfaulting server would                              |

With `recorded` (tests/fakes/yahoo_recorded.py), a symbol Yahoo's real replies were recorded for (AAPL,
OCDO.L, WSKT.JK) is answered from those recordings instead of `yahoo_listings.py`.

`latency_s` delays every request naming a symbol (the benchmark's slow Yahoo); clearing `gate` holds every
such request until it is set again (to line up concurrent requests). `calls` records each of them as
(symbol, endpoint): "chart", "quoteSummary", "quote" (/v7), "income:yearly" and the like (fundamentals),
"earnings_dates", "news"; `queries` the same with the request's query. `refuse`, set by a test, answers a
request with the HTTP status it returns for (symbol, endpoint, query) instead (None: served as usual).

One fake serves the process at a time: yfinance's `YfData` is a singleton, and `ticker()` points it at
this fake's session.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yfinance
from curl_cffi.requests import Session
from curl_cffi.requests.exceptions import DNSError
from curl_cffi.requests.headers import Headers
from curl_cffi.requests.models import Request, Response
from yfinance import cache as yf_cache

from tests.fakes import yahoo_replies as replies
from tests.fakes.yahoo_listings import TODAY, listing
from tests.fakes.yahoo_recorded import RecordedYahoo

__all__ = ["TODAY", "FakeYahoo", "YahooWire"]

_UNKNOWN = {"NOSUCH"}
_NO_DATA = {"EMPTY"}
_FREQ = {"annual": "yearly", "quarterly": "quarterly", "trailing": "trailing"}

# yfinance keeps the timezone of each symbol and its cookie in SQLite files under the user's cache folder;
# the fake keeps them out of the test run (and keeps every run's requests the same).
yf_cache._TzCacheManager._tz_cache = yf_cache._TzCacheDummy()
yf_cache._CookieCacheManager._Cookie_cache = yf_cache._CookieCacheDummy()
yf_cache._ISINCacheManager._isin_cache = yf_cache._ISINCacheDummy()


class YahooWire(Session):  # type: ignore[misc]
    """A curl_cffi Session that never opens a socket: each request is answered by its `FakeYahoo`."""

    def __init__(self, yahoo: FakeYahoo) -> None:
        super().__init__()
        self.yahoo = yahoo

    def request(  # type: ignore[override]
        self, method: str, url: str, params: Any = None, json: Any = None, **kwargs: Any
    ) -> Response:
        return self.yahoo.serve(method, url, dict(params or {}), json)


class FakeYahoo:
    """The fake's shared state: latency, the hang release, the log of upstream requests, and the wire."""

    def __init__(self, *, latency_s: float = 0.0, hang_s: float = 30.0, recorded: RecordedYahoo | None = None) -> None:
        self.latency_s = latency_s
        self.recorded = recorded
        self.hang_s = hang_s
        self.release = threading.Event()
        self.gate = threading.Event()
        self.gate.set()
        self.calls: list[tuple[str, str]] = []
        self.queries: list[tuple[str, str, dict[str, str]]] = []
        self.refuse: Callable[[str, str, dict[str, str]], int | None] | None = None
        self._lock = threading.Lock()
        self.session = YahooWire(self)
        # A new fake starts with yfinance's process-wide reply cache empty, as a new process would.
        yfinance.data.YfData.cache_get.cache_clear()

    def ticker(self, symbol: str) -> yfinance.Ticker:
        """A real `yfinance.Ticker` on this fake's wire; pass this as the adapter's ticker factory."""
        return yfinance.Ticker(symbol, session=self.session)

    def upstream_calls(self, symbol: str | None = None, endpoint: str | None = None) -> int:
        """Requests that reached "Yahoo", for a symbol and an endpoint (e.g. "quoteSummary": one per quote)."""
        with self._lock:
            return sum(
                1
                for called, reached in self.calls
                if (symbol is None or called == symbol) and (endpoint is None or reached == endpoint)
            )

    # --- the wire ---------------------------------------------------------------------------------

    def serve(self, method: str, url: str, params: dict[str, Any], body: Any) -> Response:
        parts = urlsplit(url)
        query = {**dict(parse_qsl(parts.query)), **{k: str(v) for k, v in params.items()}}
        host, path = parts.hostname or "", parts.path
        if host == "fc.yahoo.com":
            return _reply(url, 404, "<html>Not found</html>", "text/html")
        if path == "/v1/test/getcrumb":
            return _reply(url, 200, "fake-crumb", "text/plain")
        if host.endswith("consent.yahoo.com") or host == "guce.yahoo.com":
            return _reply(url, 200, "<html><body>No consent form</body></html>", "text/html")
        symbol, endpoint = _route(path, query, body)
        if symbol is None:
            return _reply(url, 404, json.dumps({"error": "no such endpoint"}))
        self._access(symbol, endpoint, query)
        refused = self.refuse(symbol, endpoint, query) if self.refuse is not None else None
        if symbol == "LIMIT" or refused == 429:
            return _reply(url, 429, "Too Many Requests", "text/plain")
        if refused is not None:
            return _reply(url, refused, json.dumps({"finance": {"result": None, "error": {"code": str(refused)}}}))
        if symbol == "BOOM" or (symbol == "NOINFO" and endpoint in ("quoteSummary", "quote")):
            raise DNSError("Failed to perform, curl: (6) Could not resolve host: query2.finance.yahoo.com")
        if self.recorded is not None and symbol in self.recorded.symbols:
            status, reply = self.recorded.answer(symbol, endpoint, query)
            return _reply(url, status, json.dumps(reply, separators=(",", ":")))
        return self._answer(url, symbol, endpoint, query, body)

    def _access(self, symbol: str, endpoint: str, query: dict[str, str]) -> None:
        """One round trip to "Yahoo": logged, delayed, and held as the symbol scripts."""
        with self._lock:
            self.calls.append((symbol, endpoint))
            self.queries.append((symbol, endpoint, query))
        self.gate.wait(self.hang_s)
        if self.latency_s:
            time.sleep(self.latency_s)
        if symbol == "HANG":
            self.release.wait(self.hang_s)
        if symbol == "CRASH":
            os._exit(17)

    def _answer(self, url: str, symbol: str, endpoint: str, query: dict[str, str], body: Any) -> Response:
        known = listing(symbol) if symbol not in _UNKNOWN else None
        empty, nans = symbol in _NO_DATA, symbol == "NANS"
        if endpoint == "chart":
            if known is None:
                error = {"code": "Not Found", "description": "No data found, symbol may be delisted"}
                return _reply(url, 404, json.dumps({"chart": {"result": None, "error": error}}))
            reply = replies.chart(known, query, nans=nans)
            if empty:
                result = reply["chart"]["result"][0]
                result.pop("timestamp"), result.pop("events", None)
                result["indicators"] = {"quote": [{}], "adjclose": [{}]}
            return _reply(url, 200, json.dumps(reply))
        if endpoint == "quoteSummary":
            if known is None:
                error = {"code": "Not Found", "description": f"Quote not found for symbol: {symbol}"}
                return _reply(url, 404, json.dumps({"quoteSummary": {"result": None, "error": error}}))
            modules = query.get("modules", "").split(",")
            reply = replies.quote_summary(known, modules, empty=empty, nans=nans, empty_ratings=symbol == "NORATE")
            return _reply(url, 200, json.dumps(reply))
        if endpoint == "quote":
            return _reply(url, 200, json.dumps(replies.v7_quote(None if empty else known, nans=nans)))
        if endpoint == "news":
            count = int(((body or {}).get("serviceConfig") or {}).get("snippetCount", 10))
            return _reply(url, 200, json.dumps(replies.news(None if empty else known, count)))
        if endpoint == "earnings_dates":
            scale = known.scale if known is not None else 1.0
            return _reply(url, 200, replies.earnings_page(None if empty else known, scale), "text/html")
        # fundamentals-timeseries
        types = query.get("type", "").split(",")
        return _reply(url, 200, json.dumps(replies.timeseries(None if empty else known, types, nans=nans)))


def _route(path: str, query: dict[str, str], body: Any) -> tuple[str | None, str]:
    """The symbol a request is about and the endpoint's name in `calls`."""
    if path.startswith("/v8/finance/chart/"):
        return path.rsplit("/", 1)[1], "chart"
    if path.startswith("/v10/finance/quoteSummary/"):
        return path.rsplit("/", 1)[1], "quoteSummary"
    if path.startswith("/v7/finance/quote"):
        return query.get("symbols"), "quote"
    if "/fundamentals-timeseries/" in path:
        types = query.get("type", "")
        if not types:  # shares outstanding (fast_info.shares): not modelled
            return query.get("symbol"), "shares"
        asked_for = replies.statement_kind(types.split(","))
        if asked_for is None:
            return query.get("symbol"), "key_statistics"
        return query.get("symbol"), f"{asked_for[0]}:{_FREQ[asked_for[1]]}"
    if path == "/calendar/earnings":
        return query.get("symbol"), "earnings_dates"
    if path == "/xhr/ncp":
        symbols = ((body or {}).get("serviceConfig") or {}).get("s") or [None]
        return symbols[0], "news"
    return None, ""


def _reply(url: str, status: int, text: str, content_type: str = "application/json") -> Response:
    """A curl_cffi Response as the real Session returns it, so `raise_for_status` raises curl_cffi's HTTPError."""
    response = Response(request=Request(url, Headers(), "GET"))
    response.url = url
    response.status_code = status
    response.ok = status < 400
    response.reason = {200: "OK", 404: "Not Found", 429: "Too Many Requests"}.get(status, "Error")
    response.headers = Headers({"content-type": f"{content_type}; charset=utf-8"})
    response.content = text.encode()
    return response
