"""One shared SDK client per event loop, for every provider.

An SDK client keeps one connection pool, and the pool belongs to the event loop that opened its connections:
a different running loop (a CLI's `asyncio.run`, a test) must get a client of its own. `PerLoop` keeps the
client a provider built, and builds another when the running loop, or what the client was built from (an
address, a key), has changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Client = TypeVar("Client")


class PerLoop(Generic[Client]):
    def __init__(self) -> None:
        self._client: Client | None = None
        self._made_for: tuple[object, ...] | None = None

    def get(self, build: Callable[[], Client], *made_from: Hashable) -> Client:
        """The client for the running loop and `made_from`, built by `build` when there is none yet."""
        wanted = (_running_loop(), *made_from)
        if self._client is None or self._made_for != wanted:
            self._client = build()
            self._made_for = wanted
        return self._client

    def reset(self) -> None:
        """Forget the client, so the next call builds one from the configuration again (tests, config reload)."""
        self._client = None
        self._made_for = None


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
