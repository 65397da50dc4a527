"""The SEC request budget: at most N requests in any window of W seconds (`FilingsConfig.max_requests` and
`limit_window_s` say why 10 in 2 seconds), for every process of the deployment together.

The SEC counts requests per address and, past 10 a second, blocks that address for about ten minutes, for
every user of the deployment. Every process that asks the SEC (the market data server each web process,
worker, `ask`, `evaluate` and `doctor` starts, or the one they share) therefore draws on one budget, kept in
two moving windows, each a log of the times requests left:

- **This machine's**, always: a few bytes in a file (`SEC_LIMITER_DIR`, the system's temporary directory by
  default), read and written under an exclusive `flock`. Every process on the machine that asks the same
  SEC shares it, with no server to run; it holds when Redis is not configured, and when Redis fails.
- **The deployment's**, when `REDIS_URL` is set: `limits`' moving window in Redis (a maintained library),
  shared by processes on every machine.

A request takes a slot in this machine's window, then in Redis'; when Redis has no slot, the machine's is
given back, so neither window counts a request that did not leave. When Redis fails, the machine's window
alone limits for `REDIS_RETRY_S`, then Redis is asked again. Both windows are keyed by the SEC's URLs, so a
test's fake SEC never shares a budget with the real one.

Without Redis, processes on several machines each keep their own machine's budget, and together may exceed
it: a deployment spread over machines sets `REDIS_URL` (its queue needs Redis anyway). The database was the
other candidate for sharing the budget without Redis; it is not used because `datascraper` holds no Django
below its entry points (the market data server runs without Django), and a file lock needs no connection,
migration or cleanup.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import hashlib
import logging
import os
import struct
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from limits import RateLimitItemPerSecond
from limits.aio.storage import RedisStorage
from limits.aio.strategies import MovingWindowRateLimiter

from datascraper.filings.config import FilingsConfig
from datascraper.filings.errors import FilingsNotConfigured, FilingsTimeout

logger = logging.getLogger(__name__)

# The longest one request waits for a slot before giving up with a named timeout.
DEFAULT_MAX_WAIT_S = 15.0
# After Redis fails (or takes longer than REDIS_TIMEOUT_S to answer), this machine's window limits alone for
# this long before Redis is asked again.
REDIS_RETRY_S = 30.0
REDIS_TIMEOUT_S = 1.0
# The shortest and longest sleep between two tries for a slot.
_SHORTEST_SLEEP_S = 0.01
_LONGEST_SLEEP_S = 1.0
_STAMP = struct.Struct("d")

Clock = Callable[[], float]


def budget_key(data_url: str, www_url: str) -> str:
    """One key per SEC: the real one's two hosts, or a test's fake."""
    return hashlib.sha256(f"{data_url} {www_url}".encode()).hexdigest()[:16]


def machine_window_path(directory: str | None, key: str) -> Path:
    """Where this machine keeps the budget of the SEC `key` names: per user, since each user's processes
    create and lock their own file."""
    return Path(directory or tempfile.gettempdir()) / f"sec-requests-{os.geteuid()}-{key}"


def budget_sharing(config: FilingsConfig) -> str:
    """How `config`'s SEC budget is shared, in a line for `manage.py doctor`."""
    path = machine_window_path(config.limiter_dir, budget_key(config.data_url, config.www_url))
    window = f"SEC budget {config.max_requests} requests per {config.limit_window_s} s"
    if config.redis_url:
        return f"{window}, shared through Redis by every process (through {path} on this machine if Redis fails)"
    return f"{window}, shared through {path} by this machine's processes (REDIS_URL shares it across machines)"


class MachineWindow:
    """A moving window of request times in a small file, shared by every process on the machine that opens
    the same path. Blocking (a file lock held for microseconds): call it from a worker thread."""

    def __init__(self, path: Path, max_requests: int, window_s: float, *, clock: Clock = time.time) -> None:
        self.path = path
        self._max_requests = max_requests
        self._window_s = window_s
        self._clock = clock

    def take(self) -> tuple[float | None, float]:
        """(the stamp of the slot taken, 0.0), or (None, seconds until the oldest request leaves the window).

        Raises:
            FilingsNotConfigured: the file cannot be opened (a directory this user cannot write, or a file
                another user owns); the path is logged, not told.
        """
        with self._locked() as fd:
            now = self._clock()
            stamps = self._read(fd, now)
            if len(stamps) >= self._max_requests:
                return None, min(stamps) + self._window_s - now
            self._write(fd, [*stamps, now])
            return now, 0.0

    def give_back(self, stamp: float) -> None:
        """Remove a slot taken by `take` whose request did not leave."""
        with self._locked() as fd:
            stamps = self._read(fd, self._clock())
            if stamp in stamps:
                stamps.remove(stamp)
                self._write(fd, stamps)

    def _locked(self) -> _LockedFile:
        return _LockedFile(self.path)

    def _read(self, fd: int, now: float) -> list[float]:
        raw = os.pread(fd, _STAMP.size * self._max_requests * 2, 0)
        if len(raw) % _STAMP.size:
            # A torn write (a process killed while writing 80 bytes): count the window as full, from now.
            return [now] * self._max_requests
        # A stamp in the future (the clock was set back) counts as now: kept, never forgotten early.
        stamps = [min(stamp, now) for (stamp,) in _STAMP.iter_unpack(raw)]
        return [stamp for stamp in stamps if now - stamp < self._window_s]

    @staticmethod
    def _write(fd: int, stamps: list[float]) -> None:
        raw = b"".join(_STAMP.pack(stamp) for stamp in stamps)
        os.pwrite(fd, raw, 0)
        os.ftruncate(fd, len(raw))


class _LockedFile:
    """The window's file, opened (created 0600, never through a symlink) and locked for one read-modify-write.

    A new descriptor each time: `flock` excludes descriptors, so two threads of one process exclude each
    other as two processes do."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> int:
        try:
            try:
                self.fd = self._open()
            except FileNotFoundError:  # the configured directory does not exist yet
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                self.fd = self._open()
            if os.fstat(self.fd).st_uid != os.geteuid():
                raise OSError(errno.EPERM, "owned by another user")
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except OSError as exc:
            self._close()
            logger.error("The SEC request budget file %s cannot be used: %s", self.path, exc)
            raise FilingsNotConfigured(
                "The SEC request budget cannot be kept on this machine: set SEC_LIMITER_DIR to a directory "
                "this server can write (the server's log names the file)."
            ) from exc
        return self.fd

    def __exit__(self, *exc_info: object) -> None:
        self._close()

    def _open(self) -> int:
        return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)

    def _close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing releases the lock
            self.fd = -1


class RequestLimiter:
    """`await limiter.acquire()` before each request; it returns once the request fits in every window."""

    def __init__(
        self,
        max_requests: int,
        window_s: int,
        *,
        machine_path: Path,
        redis_url: str | None = None,
        redis_key: str = "sec-edgar",
        max_wait_s: float = DEFAULT_MAX_WAIT_S,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.machine = MachineWindow(machine_path, max_requests, window_s)
        self._redis = (
            MovingWindowRateLimiter(RedisStorage(f"async+{redis_url}", implementation="redispy")) if redis_url else None
        )
        self._item = RateLimitItemPerSecond(max_requests, window_s, namespace=f"sec-edgar:{redis_key}")
        self._redis_down_until = 0.0
        self._max_wait_s = max_wait_s
        self._sleep = sleep

    @classmethod
    def from_config(cls, config: FilingsConfig) -> RequestLimiter:
        """The budget of the SEC `config` points at, on this machine and in `REDIS_URL`'s Redis."""
        key = budget_key(config.data_url, config.www_url)
        return cls(
            config.max_requests,
            config.limit_window_s,
            machine_path=machine_window_path(config.limiter_dir, key),
            redis_url=config.redis_url,
            redis_key=key,
        )

    async def acquire(self) -> None:
        """Wait for a slot in this machine's window and, with Redis, in the deployment's.

        Raises:
            FilingsTimeout: no slot came free within `max_wait_s` (our own processes are saturating the
                budget); the caller answers a named failure instead of queueing without bound.
            FilingsNotConfigured: this machine's window cannot be kept (see `MachineWindow.take`).
        """
        deadline = time.monotonic() + self._max_wait_s
        while True:
            stamp, wait = await asyncio.to_thread(self.machine.take)
            if stamp is not None:
                redis_wait = await self._deployment_wait()
                if redis_wait is None:
                    return
                await asyncio.to_thread(self.machine.give_back, stamp)
                wait = redis_wait
            wait = min(max(wait, _SHORTEST_SLEEP_S), _LONGEST_SLEEP_S)
            if time.monotonic() + wait > deadline:
                raise FilingsTimeout("Too many SEC requests are queued right now; try again shortly.")
            await self._sleep(wait)

    async def _deployment_wait(self) -> float | None:
        """None once Redis counted the request (or there is no Redis to ask), else the seconds to wait."""
        if self._redis is None or time.monotonic() < self._redis_down_until:
            return None
        try:
            async with asyncio.timeout(REDIS_TIMEOUT_S):
                if await self._redis.hit(self._item, "requests"):
                    return None
                stats = await self._redis.get_window_stats(self._item, "requests")
        except Exception as exc:  # Redis down, unreachable or silent: the redis client's errors are many
            self._redis_down_until = time.monotonic() + REDIS_RETRY_S
            logger.warning(
                "The shared SEC limiter's Redis failed (%r); this machine's window limits alone for %g s.",
                exc,
                REDIS_RETRY_S,
            )
            return None
        # reset_time is when the oldest request leaves the window (epoch seconds).
        return stats.reset_time - time.time()
