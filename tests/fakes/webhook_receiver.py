"""A webhook receiver on 127.0.0.1: records every request (headers and exact body bytes) and answers with
the statuses it is told, in turn; `"stall"` holds the request without answering until the receiver stops
(longer than any attempt's timeout).

    receiver = WebhookReceiver(answers=[500, 500, 200]).start()
    ... receiver.url ...
    receiver.requests[0].body, receiver.requests[0].headers["X-Signature-256"]

After the listed answers it answers 200. A refusal's body is `refusal_body` (a receiver may echo what it
was sent, even a secret). A real HTTP server in a thread (the standard library's), so the
sender under test makes real connections, timeouts included.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = int | str  # a status, or "stall"


@dataclass(frozen=True)
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # A sender that gives up on a stalled answer hangs up: expected here.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class WebhookReceiver:
    def __init__(
        self,
        answers: list[Answer] | None = None,
        *,
        path: str = "/hooks/briefs",
        refusal_body: bytes = b'{"error": "the receiver says no"}',
    ) -> None:
        self._answers = list(answers or [])
        self.refusal_body = refusal_body
        self._lock = threading.Lock()
        self._released = threading.Event()
        self.requests: list[ReceivedRequest] = []
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}{path}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-webhook", daemon=True
        )

    def start(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()
        self._server.shutdown()
        self._server.server_close()

    def _next_answer(self, request: ReceivedRequest) -> Answer:
        with self._lock:
            self.requests.append(request)
            return self._answers.pop(0) if self._answers else 200

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                answer = receiver._next_answer(ReceivedRequest("POST", self.path, dict(self.headers.items()), body))
                if answer == "stall":
                    receiver._released.wait()
                    return
                status = int(answer)
                reply = b'{"ok": true}' if status < 300 else receiver.refusal_body
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", "http://127.0.0.1:1/elsewhere")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler
