"""An ASGI app served by uvicorn on a free port of 127.0.0.1, in a thread of the test process.

Used for the app under test (sharing the process lets tests use pytest-django's test database while the
app runs its background runs on uvicorn's own event loop, as in production) and for the fake OpenAI
server.
"""

from __future__ import annotations

import socket
import threading
import time

import uvicorn


class ThreadedAsgiServer:
    def __init__(self, app, *, name: str) -> None:
        # IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
        # and without it small SSE writes wait ~40 ms for delayed ACKs.
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app,
            log_config=None,  # leave the process's logging alone (pytest and Django configure it)
            interface="asgi3",
            lifespan="off",
            loop="asyncio",
            http="h11",
            ws="none",
            proxy_headers=False,  # as `make run` serves the app: X-Forwarded-* are the app's to read
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, name=name, daemon=True)

    def start(self) -> ThreadedAsgiServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"{self._thread.name}: uvicorn did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._server.force_exit = True
        self._thread.join(timeout=10)
        self._sock.close()
