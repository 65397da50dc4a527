"""A fake SEC on 127.0.0.1: both of its hosts (www.sec.gov and data.sec.gov) as path prefixes of one
loopback server, serving the recorded-shape replies under `tests/fakes/sec/`.

As strict as the real one where it matters to a client:
- a request whose User-Agent names no contact e-mail gets 403 (the SEC's "undeclared automated tool" page);
- past 10 requests in any one second it answers 429 (the real one then blocks for ten minutes:
  `block_s` imitates that);
- a file on the wrong host is a 404, as is an unknown CIK, ticker file or document.

`FakeSecServer(recorded=path)` serves the real SEC's recorded replies instead (`../shared/recorded/sec`, see
`tests/recorded.py`: `data/` and `www/` hold each host's paths, a body over 100 kB stored as `<name>.gz` and
served decompressed), as strictly.

Tests point the client at `fake.data_url` / `fake.www_url` (the `SEC_DATA_URL` / `SEC_WWW_URL` settings),
read `fake.requests` to see what reached the SEC, script throttling with `fake.throttle(times, retry_after)`,
replace a file's reply (another body, a 404, a redirect) with `fake.serve(path, body, status=..., headers=...)`
and make one a body without end (no Content-Length) with `fake.stream_without_end(path)`, until `reset()`.

The fixture data: Apple (fiscal year ending in late September; CIK 320193; its fiscal 2024 10-K, its pages
ending in Apple's footer and its last note followed by the auditor's report as filed, an 8-K with items
2.02 and 9.01, its index page in EDGAR's layout and its Exhibit 99.1 earnings release, and two Form 4s),
NVIDIA (late January, so fiscal 2025 is calendar 2024; its Q3 FY2025 10-Q; its fiscal 2025 10-K restates
fiscal 2024's diluted EPS for the June 2024 10-for-1 split, 11.93 to 1.19), and TSMC (a foreign private
issuer filing 20-F and 6-K, with no XBRL company facts). The documents are short, written for the tests
with the real ones' headings and layout.
The company facts have the real ones' shape: a 10-K reports the fiscal year and no fourth quarter, a 10-Q its
quarter beside the year to date, cash flows only year to date (Apple's operating cash flow), and the calendar
frame of NVIDIA's fiscal 2025 net income sits only on its proxy statement's untagged copy (no `fy`/`fp`).
Figures are the companies' reported ones; accession numbers and Form 4 details have the real shape but are
illustrative, not to be cited.
"""

from __future__ import annotations

import asyncio
import gzip
import re
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.asgi_server import ThreadedAsgiServer

FIXTURES = Path(__file__).with_name("sec")
DATA_HOST = "/data.sec.gov"
WWW_HOST = "/www.sec.gov"
_CONTACT = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_UNDECLARED_TOOL = (
    b"<html><head><title>SEC.gov | Request Rate Threshold Exceeded</title></head><body>"
    b"<h1>Your Request Originates from an Undeclared Automated Tool</h1>"
    b"<p>Please declare your traffic by updating your user agent to include company specific information.</p>"
    b"</body></html>"
)
_THROTTLED = b"<html><body><h1>Request Rate Threshold Exceeded</h1></body></html>"
_CONTENT_TYPES = {".json": "application/json", ".htm": "text/html", ".html": "text/html", ".xml": "text/xml"}


@dataclass(frozen=True)
class SecRequest:
    host: str  # "data" or "www"
    path: str
    user_agent: str
    status: int
    at: float


class FakeSecServer:
    """The fake, running uvicorn in a background thread on a free port of 127.0.0.1."""

    def __init__(self, *, max_per_second: int = 10, block_s: float = 0.0, recorded: Path | None = None) -> None:
        self.recorded = recorded
        self.max_per_second = max_per_second
        self.block_s = block_s
        self.requests: list[SecRequest] = []
        self.delay_s = 0.0  # every reply waits this long (a slow SEC; a client's timeout)
        self._lock = threading.Lock()
        self._recent: deque[float] = deque()
        self._blocked_until = 0.0
        self._forced: list[int | None] = []  # scripted 429s, each with its Retry-After
        self._server: ThreadedAsgiServer | None = None
        self._served: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        self._endless: set[str] = set()
        self.streamed_bytes = 0  # what the bodies without end sent before their client went away
        self.url = ""

    # lifecycle

    @property
    def data_url(self) -> str:
        return f"{self.url}{DATA_HOST}"

    @property
    def www_url(self) -> str:
        return f"{self.url}{WWW_HOST}"

    def start(self) -> FakeSecServer:
        self._server = ThreadedAsgiServer(self._app, name="fake-sec").start()
        self.url = self._server.url
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> FakeSecServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # scripting and inspection

    def throttle(self, times: int = 1, *, retry_after: int | None = None) -> None:
        """The next `times` requests get 429 (with `Retry-After` when given), whatever their rate."""
        with self._lock:
            self._forced.extend([retry_after] * times)

    def serve(self, path: str, body: bytes, *, status: int = 200, headers: dict[str, str] | None = None) -> None:
        """Answer `path` (e.g. `/data.sec.gov/api/xbrl/companyfacts/CIK0000320193.json`) with `body`, `status`
        and `headers` instead of the fixture file: a benchmark's real-size reply, say, a 404, or a redirect
        (`status=302, headers={"location": url}`). Until `reset()`."""
        with self._lock:
            self._served[path] = (status, body, headers or {})

    def stream_without_end(self, path: str) -> None:
        """Answer `path` with a 200 whose body never ends (chunked, no Content-Length), until its client
        goes away; `streamed_bytes` says how much was sent. Until `reset()`."""
        with self._lock:
            self._endless.add(path)

    def paths(self, status: int | None = None) -> list[str]:
        with self._lock:
            return [r.path for r in self.requests if status is None or r.status == status]

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._recent.clear()
            self._forced.clear()
            self._served.clear()
            self._endless.clear()
            self.streamed_bytes = 0
            self._blocked_until = 0.0

    # the wire

    async def _app(
        self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        user_agent = headers.get("user-agent", "")
        path = scope["path"]
        status, body, extra = self._answer(scope["method"], path, user_agent)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if status == 200 and path in self._endless:
            await self._send_without_end(receive, send)
            return
        content_type = _CONTENT_TYPES.get(Path(path).suffix, "text/html") if status == 200 else "text/html"
        pairs = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
        pairs += [(k.encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": pairs})
        await send({"type": "http.response.body", "body": body})

    async def _send_without_end(
        self, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watching = asyncio.create_task(watch())
        chunk = b"<p>" + b"x" * 65_536 + b"</p>"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/html")]})
        while not gone.is_set():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            self.streamed_bytes += len(chunk)
            await asyncio.sleep(0)
        watching.cancel()

    def _answer(self, method: str, path: str, user_agent: str) -> tuple[int, bytes, dict[str, str]]:
        now = time.monotonic()
        with self._lock:
            host = "data" if path.startswith(DATA_HOST) else "www" if path.startswith(WWW_HOST) else "?"
            status, body, extra = self._decide(method, path, user_agent, host, now)
            self.requests.append(SecRequest(host, path.removeprefix(f"/{host}.sec.gov"), user_agent, status, now))
        return status, body, extra

    def _decide(
        self, method: str, path: str, user_agent: str, host: str, now: float
    ) -> tuple[int, bytes, dict[str, str]]:
        if not _CONTACT.search(user_agent):
            return 403, _UNDECLARED_TOOL, {}
        if self._forced:
            retry_after = self._forced.pop(0)
            return 429, _THROTTLED, {"retry-after": str(retry_after)} if retry_after is not None else {}
        while self._recent and now - self._recent[0] >= 1.0:
            self._recent.popleft()
        self._recent.append(now)
        if now < self._blocked_until or len(self._recent) > self.max_per_second:
            self._blocked_until = max(self._blocked_until, now + self.block_s)
            return 429, _THROTTLED, {}
        if method != "GET":
            return 405, b"", {}
        if path in self._served:
            return self._served[path]
        if path in self._endless:
            return 200, b"", {}
        body = self._body(host, path)
        if body is None:
            return 404, b"<html><body>Not Found</body></html>", {}
        return 200, body, {}

    def _body(self, host: str, path: str) -> bytes | None:
        relative = path.removeprefix(f"/{host}.sec.gov/")
        if host == "www":
            allowed = relative == "files/company_tickers.json" or relative.startswith("Archives/edgar/data/")
            local = relative.removeprefix("files/")
        elif host == "data":
            allowed = relative.startswith("submissions/") or relative.startswith("api/xbrl/companyfacts/")
            local = relative.removeprefix("api/xbrl/")
        else:
            return None
        if not allowed or ".." in relative:
            return None
        if self.recorded is None:
            file = FIXTURES / local
            return file.read_bytes() if file.is_file() else None
        file = self.recorded / host / relative
        if file.is_file():
            return file.read_bytes()
        packed = file.with_name(file.name + ".gz")
        return gzip.decompress(packed.read_bytes()) if packed.is_file() else None
