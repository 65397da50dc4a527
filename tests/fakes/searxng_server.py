"""A SearxNG instance on 127.0.0.1, at its wire: `GET /search?q=...&format=json`.

As the real one: JSON only when `json` is among its enabled formats (`search.formats` in settings.yml),
else 403 Forbidden with an HTML body; `format` absent is its HTML page; 429 from its limiter when told;
a query without `q` is a 400. Its JSON answer has SearxNG's shape (`query`, `number_of_results`, `results`
with `url`, `title`, `content`, `publishedDate`, `engine`, `engines`, `score`, `category`, and the empty
`answers`, `corrections`, `infoboxes`, `suggestions`, `unresponsive_engines`). It records every query.

    searx = FakeSearxng().start()
    searx.results = [searx_result(pages.url("/apple"), "Apple results", "Revenue was ...")]
    searx.formats = ("html",)        # the JSON format not enabled: 403
    searx.rate_limited = 2           # the next two searches answer 429
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.page_server import _QuietServer


def searx_result(url: str, title: str, content: str = "", published: str | None = None, engine: str = "duckduckgo"):
    """One result as SearxNG's JSON carries it (`publishedDate` ISO 8601 or null)."""
    return {
        "url": url,
        "title": title,
        "content": content,
        "publishedDate": published,
        "engine": engine,
        "engines": [engine],
        "positions": [1],
        "score": 1.0,
        "category": "general",
        "template": "default.html",
        "parsed_url": list(urlsplit(url)),
    }


class FakeSearxng:
    def __init__(self) -> None:
        self.results: list[dict[str, Any]] = []
        self.formats: tuple[str, ...] = ("html", "json")
        self.rate_limited = 0  # how many of the next searches answer 429
        self.queries: list[dict[str, list[str]]] = []
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-searxng", daemon=True
        )

    @property
    def url(self) -> str:
        """What SEARXNG_URL holds: the instance's root."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeSearxng:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeSearxng:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _answer(self, target: str) -> tuple[int, str, bytes]:
        split = urlsplit(target)
        if split.path not in ("/search", "/"):
            return 404, "text/html", b"<html><body>Not Found</body></html>"
        params = parse_qs(split.query)
        with self._lock:
            self.queries.append(params)
            if self.rate_limited:
                self.rate_limited -= 1
                return 429, "text/plain", b"Too Many Requests"
        output = params.get("format", ["html"])[0]
        if output not in self.formats:
            return 403, "text/html", b"<html><body><h1>Forbidden</h1></body></html>"
        query = params.get("q", [""])[0]
        if not query:
            return 400, "text/html", b"<html><body>Bad Request</body></html>"
        if output != "json":
            return 200, "text/html; charset=utf-8", b"<html><body>results</body></html>"
        body = {
            "query": query,
            "number_of_results": 0,  # SearxNG often reports 0: only some engines give a count
            "results": self.results,
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        }
        return 200, "application/json", json.dumps(body).encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                status, content_type, body = server._answer(self.path)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        return Handler
