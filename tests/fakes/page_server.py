"""Web pages on 127.0.0.1 for citation verification: articles, errors, redirects, slow and oversized pages.

A real HTTP server in a thread (the standard library's), so the fetcher under test does real DNS-free
connections, redirects, timeouts and partial reads. It counts the requests per path, so a test can assert
that a page cited twice was fetched once, and notes when the first request came.

    pages = FakePageServer().start()
    pages.add("/apple", article("Apple results", "Apple reported revenue of $391.04 billion."))
    pages.add("/moved", redirect_to="http://10.0.0.1/internal")
    pages.add("/slow", article(...), delay_s=2)
"""

from __future__ import annotations

import html
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Page:
    body: bytes = b""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # before the status line: longer than the fetch timeout is a timeout


def article(title: str, *paragraphs: str, filler_paragraphs: int = 3) -> bytes:
    """An article page as news sites write them: navigation, the article, related links, a footer."""
    body = "".join(f"<p>{html.escape(text)}</p>" for text in paragraphs)
    filler = "".join(
        f"<p>Paragraph {i} of background on the company's products, its markets and its history, written "
        "to give the page a body of ordinary length around the facts that matter.</p>"
        for i in range(1, filler_paragraphs + 1)
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head><body>"
        "<nav><a href='/'>Home</a> <a href='/markets'>Markets</a> <a href='/tech'>Technology</a></nav>"
        f"<main><article><h1>{html.escape(title)}</h1>{body}{filler}</article></main>"
        "<aside><h2>Related</h2><ul><li><a href='/a'>Other story</a></li></ul></aside>"
        "<footer>Copyright Example News. All rights reserved.</footer></body></html>"
    ).encode()


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that hangs up (the size cap, a timeout, a closed keep-alive) is expected here.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakePageServer:
    def __init__(self) -> None:
        self._pages: dict[str, Page] = {}
        self._lock = threading.Lock()
        self.hits: Counter[str] = Counter()
        self.first_hit_at: float | None = None  # time.monotonic() of the first request
        self.in_flight = 0
        self.peak_in_flight = 0  # the most requests being answered at one moment
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-pages", daemon=True
        )

    def start(self) -> FakePageServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def add(
        self,
        path: str,
        body: bytes | str = b"",
        *,
        status: int = 200,
        content_type: str = "text/html; charset=utf-8",
        redirect_to: str | None = None,
        delay_s: float = 0.0,
    ) -> str:
        """Serve `body` at `path` (or a 302 to `redirect_to`); returns the page's URL."""
        headers = {"Location": redirect_to} if redirect_to is not None else {}
        page = Page(
            body=body.encode() if isinstance(body, str) else body,
            status=302 if redirect_to is not None else status,
            content_type=content_type,
            headers=headers,
            delay_s=delay_s,
        )
        with self._lock:
            self._pages[path] = page
        return self.url(path)

    def _page(self, path: str) -> Page:
        with self._lock:
            self.hits[path] += 1
            if self.first_hit_at is None:
                self.first_hit_at = time.monotonic()
            return self._pages.get(path, Page(body=b"<html><body>Not found</body></html>", status=404))

    def _count_in_flight(self, step: int) -> None:
        with self._lock:
            self.in_flight += step
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                page = server._page(self.path)
                server._count_in_flight(+1)
                try:
                    if page.delay_s:
                        time.sleep(page.delay_s)
                    self.send_response(page.status)
                    self.send_header("Content-Type", page.content_type)
                    self.send_header("Content-Length", str(len(page.body)))
                    for name, value in page.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(page.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading (the size cap, a timeout): expected
                finally:
                    server._count_in_flight(-1)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        return Handler

    def __enter__(self) -> FakePageServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
