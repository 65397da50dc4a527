"""The SEC request budget, one per deployment: this machine's window in a locked file, shared by every process
on the machine, and the deployment's in Redis when it is set. Here each limiter stands for a process (their
windows are what processes share); tests/datascraper/filings/test_budget_processes.py runs real ones."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import pytest

from datascraper.filings.client import SecClient
from datascraper.filings.config import FilingsConfig
from datascraper.filings.errors import FilingsNotConfigured, FilingsTimeout
from datascraper.filings.limiter import MachineWindow, RequestLimiter, machine_window_path
from tests.datascraper.filings.conftest import USER_AGENT, most_in_any_second
from tests.fakes.sec_server import FakeSecServer

pytestmark = pytest.mark.timeout(30)

REDIS_URL = os.environ.get("REDIS_URL", "")
needs_redis = pytest.mark.skipif(not REDIS_URL, reason="needs REDIS_URL (make test-postgres sets it)")
DOCUMENT = "/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"


def limiter(path: Path, *, redis_url: str | None = None, redis_key: str = "", max_requests: int = 3) -> RequestLimiter:
    """A limiter that never waits: a request past the budget is a FilingsTimeout at once."""
    return RequestLimiter(
        max_requests, 2, machine_path=path, redis_url=redis_url, redis_key=redis_key or uuid.uuid4().hex, max_wait_s=0
    )


async def test_processes_on_one_machine_share_its_window(tmp_path: Path) -> None:
    web, worker = limiter(tmp_path / "window"), limiter(tmp_path / "window")

    await web.acquire()
    await web.acquire()
    await worker.acquire()

    with pytest.raises(FilingsTimeout):
        await worker.acquire()
    with pytest.raises(FilingsTimeout):
        await web.acquire()


async def test_a_slot_comes_free_when_its_request_leaves_the_window(tmp_path: Path) -> None:
    now = [1000.0]
    window = MachineWindow(tmp_path / "window", 2, 2.0, clock=lambda: now[0])
    window.take()
    now[0] += 0.5
    window.take()

    refused, wait = window.take()
    now[0] += wait
    taken, _ = window.take()

    assert (refused, wait) == (None, 1.5)
    assert taken == now[0]


def test_a_clock_set_back_keeps_the_requests_in_the_window(tmp_path: Path) -> None:
    now = [1000.0]
    window = MachineWindow(tmp_path / "window", 1, 2.0, clock=lambda: now[0])
    window.take()

    now[0] -= 3600
    refused, wait = window.take()

    assert (refused, wait) == (None, 2.0)


def test_a_torn_window_file_counts_as_full(tmp_path: Path) -> None:
    path = tmp_path / "window"
    path.write_bytes(b"\x00\x01\x02")  # a process killed while writing its stamps

    refused, wait = MachineWindow(path, 10, 2.0).take()

    assert refused is None and wait == 2.0


async def test_a_budget_directory_it_cannot_write_is_a_named_failure_without_the_path(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")

    with pytest.raises(FilingsNotConfigured) as refused:
        await limiter(not_a_directory / "window").acquire()

    assert "SEC_LIMITER_DIR" in refused.value.message and str(tmp_path) not in refused.value.message


def test_each_sec_has_its_own_budget_on_this_machine(tmp_path: Path) -> None:
    def path(data_url: str, www_url: str) -> Path:
        config = FilingsConfig(data_url=data_url, www_url=www_url, limiter_dir=str(tmp_path))
        return RequestLimiter.from_config(config).machine.path

    real = path("https://data.sec.gov", "https://www.sec.gov")

    assert real == path("https://data.sec.gov/", "https://www.sec.gov/")
    assert real != path("http://127.0.0.1:8001/data.sec.gov", "http://127.0.0.1:8001/www.sec.gov")
    assert real.parent == tmp_path and machine_window_path(None, "k").parent.is_dir()


async def test_a_limiter_waits_no_longer_than_its_bound(tmp_path: Path) -> None:
    one = RequestLimiter(1, 1, machine_path=tmp_path / "window", max_wait_s=0.0)
    await one.acquire()

    with pytest.raises(FilingsTimeout):
        await one.acquire()


async def test_when_redis_fails_this_machine_s_window_still_limits(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    down = "redis://127.0.0.1:9/0"
    web, worker = limiter(tmp_path / "window", redis_url=down), limiter(tmp_path / "window", redis_url=down)

    for process in (web, worker, web):
        await process.acquire()

    with pytest.raises(FilingsTimeout):
        await worker.acquire()
    assert "this machine's window limits alone" in caplog.text


@needs_redis
async def test_machines_sharing_redis_share_one_budget(tmp_path: Path) -> None:
    key = uuid.uuid4().hex
    here, there = (limiter(tmp_path / name, redis_url=REDIS_URL, redis_key=key) for name in ("here", "there"))

    await here.acquire()
    await there.acquire()
    await there.acquire()

    with pytest.raises(FilingsTimeout):
        await here.acquire()


@needs_redis
async def test_a_slot_redis_refuses_is_given_back_to_this_machine(tmp_path: Path) -> None:
    key = uuid.uuid4().hex
    there = limiter(tmp_path / "there", redis_url=REDIS_URL, redis_key=key)
    for _ in range(3):
        await there.acquire()

    with pytest.raises(FilingsTimeout):
        await limiter(tmp_path / "here", redis_url=REDIS_URL, redis_key=key).acquire()

    # Nothing left this machine, so its window is whole: a process without Redis takes all three slots.
    alone = limiter(tmp_path / "here")
    for _ in range(3):
        await alone.acquire()


@needs_redis
async def test_clients_of_two_machines_stay_under_ten_a_second_at_the_sec_together(
    fake_sec: FakeSecServer, tmp_path: Path
) -> None:
    clients = [
        SecClient(
            FilingsConfig(
                user_agent=USER_AGENT,
                data_url=fake_sec.data_url,
                www_url=fake_sec.www_url,
                limiter_dir=str(tmp_path / machine),
                redis_url=REDIS_URL,
            )
        )
        for machine in ("a", "b")
    ]

    await asyncio.gather(*(clients[n % 2].get(f"{fake_sec.www_url}{DOCUMENT}") for n in range(12)))

    assert [r.status for r in fake_sec.requests] == [200] * 12
    assert most_in_any_second([r.at for r in fake_sec.requests]) <= 10
    for client in clients:
        await client.aclose()
