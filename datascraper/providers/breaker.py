"""A breaker per provider capability, shared by the process: a hung provider is noticed once.

Without it, a web search that hangs holds its sub-question to the timeout, and every later round sends new
searches to the provider that just timed out, so the run waits until its research deadline. With it, the
first timeout opens the breaker: calls started while it is open fail at once (`ProviderUnresponsive`),
so the run goes on with what it found; after `cooldown_s` the next call is let through as a trial, and
a success closes the breaker again.
"""

from __future__ import annotations

import logging
import math
import threading
import time

from datascraper.errors import UpstreamTimeout

logger = logging.getLogger(__name__)


class ProviderUnresponsive(UpstreamTimeout):
    def __init__(self, capability: str, retry_in_s: float) -> None:
        super().__init__(
            f"The model provider's {capability} did not answer a moment ago; it is tried again in "
            f"{math.ceil(retry_in_s)} s."
        )


class Breaker:
    def __init__(self, capability: str) -> None:
        self.capability = capability
        self._lock = threading.Lock()  # runs of several event loops (threads) share one process
        self._open_until = 0.0

    def check(self) -> None:
        """Raise `ProviderUnresponsive` while open."""
        with self._lock:
            left = self._open_until - time.monotonic()
        if left > 0:
            raise ProviderUnresponsive(self.capability, left)

    def trip(self, cooldown_s: float) -> None:
        """A call timed out: refuse new calls for `cooldown_s`."""
        with self._lock:
            self._open_until = time.monotonic() + cooldown_s
        logger.warning("The provider's %s timed out; new calls wait %.0f s.", self.capability, cooldown_s)

    def close(self) -> None:
        with self._lock:
            self._open_until = 0.0


WEB_SEARCH = Breaker("web search")


def reset_breakers() -> None:
    """Close every breaker (a new configuration, or between tests)."""
    WEB_SEARCH.close()
