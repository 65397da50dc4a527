"""What the fakes of the keyed search APIs (Tavily, Brave, Exa; `tests/fakes/search_apis.py`) share: a
JSON server on 127.0.0.1 that records every request, and the results they serve, each API in its own shape.

    api = FakeTavily().start()          # any of the three
    api.hits = [SearchHit(pages.url("/apple"), "Apple results", "Revenue was ...", date(2025, 6, 12))]
    api.rate_limited = 2                # the next two searches answer the API's 429
    api.failing = 1                     # the next search answers 503
    api.stalled = 1                     # the next search answers only after `stall_s` (a client timeout)
    api.requests[-1].body / .params / .headers
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from datetime import date
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.page_server import _QuietServer

PLACEHOLDER_KEY = "placeholder-key-search"


@dataclass(frozen=True)
class SearchHit:
    """One result, before an API renders it in its own JSON."""

    url: str
    title: str
    excerpt: str = ""
    published: date | None = None


@dataclass
class ApiRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    params: dict[str, list[str]]
    body: Any = None  # the parsed JSON body; None without one

    @property
    def header_names(self) -> set[str]:
        return set(self.headers)


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class FakeSearchAPI:
    """The shared machinery; a subclass answers one request (`_answer`) as its API does."""

    name = "search"

    def __init__(self, key: str = PLACEHOLDER_KEY) -> None:
        self.key = key
        self.hits: list[SearchHit] = []
        self.rate_limited = 0
        self.failing = 0
        self.stalled = 0
        self.stall_s = 2.0
        self.requests: list[ApiRequest] = []
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"fake-{self.name}", daemon=True
        )

    @property
    def url(self) -> str:
        """What the API's base URL setting holds: the host alone."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeSearchAPI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeSearchAPI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _answer(self, request: ApiRequest) -> Answer:
        raise NotImplementedError

    def _rate_limit_answer(self) -> Answer:
        raise NotImplementedError

    def _respond(self, request: ApiRequest) -> Answer:
        """The scripted failures first (each counts a search the API received), then the API's own answer."""
        with self._lock:
            self.requests.append(request)
            stalled, self.stalled = self.stalled > 0, max(self.stalled - 1, 0)
            if self.rate_limited:
                self.rate_limited -= 1
                return self._rate_limit_answer()
            if self.failing:
                self.failing -= 1
                return Answer(503, {"message": "Service Unavailable"})
        if stalled:
            time.sleep(self.stall_s)
        return self._answer(request)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                split = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = ValueError("not JSON")
                request = ApiRequest(
                    method=self.command,
                    path=split.path,
                    headers={name.lower(): value for name, value in self.headers.items()},
                    params=parse_qs(split.query, keep_blank_values=True),
                    body=body,
                )
                answer = fake._respond(request)
                payload = json.dumps(answer.body).encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = _serve  # noqa: N815 (the standard library's names)
            do_POST = _serve  # noqa: N815

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        return Handler
