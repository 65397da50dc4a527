"""One SEC budget for the deployment, across real processes.

What asks the SEC is the market data server: each web process, worker, `ask`, `evaluate` and `doctor` starts
its own (`python -m datascraper.mcp_server` as a stdio child, with the app's environment). Here four of them
are started exactly so, as two web processes, a worker and `evaluate` would start theirs, and all four read a
company's Form 4s at once. The fake SEC answers 429 past 10 requests in any second; its request log must show
none, with Redis (the servers on four machines, sharing only Redis), without it (one machine, sharing its
window file), and with a Redis that is down.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from django.conf import settings
from mcp import StdioServerParameters

from datascraper.filings.schemas import InsiderTransactions
from datascraper.research_engine.data.server_target import PROJECT_ROOT, child_environment
from datascraper.research_engine.data.session import MarketDataClient
from tests.datascraper.filings.conftest import USER_AGENT, most_in_any_second
from tests.fakes.sec_server import FIXTURES, FakeSecServer
from tests.processes import app_environment, free_port

pytestmark = [pytest.mark.processes, pytest.mark.timeout(120)]

PROCESSES = ("web 1", "web 2", "worker", "evaluate")
FORM4S = 6
APPLE_SUBMISSIONS = "/data.sec.gov/submissions/CIK0000320193.json"


def submissions_with_form4s(count: int) -> bytes:
    """Apple's submissions with `count` more Form 4s listed (the SEC has none of their documents: a 404
    each, which the SEC counts as it counts any request)."""
    payload = json.loads((FIXTURES / "submissions/CIK0000320193.json").read_text())
    recent = payload["filings"]["recent"]
    first = {name: values[0] for name, values in recent.items()}
    for n in range(count):
        row = {**first, "accessionNumber": f"0000320193-25-{900 + n:06d}", "primaryDocument": f"form4-{n}.xml"}
        for name, values in recent.items():
            values.insert(0, row[name])
    return json.dumps(payload).encode()


def server(env: dict[str, str]) -> MarketDataClient:
    """The market data server as an app process starts it: our interpreter, the entry point, the app's
    environment without its secrets."""
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "datascraper.mcp_server"], env=child_environment(env), cwd=PROJECT_ROOT
    )
    return MarketDataClient(parameters, call_timeout_s=60)


async def read_form4s_at_once(fake_sec: FakeSecServer, environments: list[dict[str, str]]) -> list[InsiderTransactions]:
    fake_sec.serve(APPLE_SUBMISSIONS, submissions_with_form4s(FORM4S))
    servers = [server(env) for env in environments]
    try:
        started = await asyncio.gather(*(asyncio.wrap_future(s.start()) for s in servers))
        assert all(started), "a market data server did not start"
        results = await asyncio.gather(
            *(s.call_tool("get_insider_transactions", {"ticker": "AAPL", "filings_wanted": FORM4S}) for s in servers)
        )
    finally:
        await asyncio.gather(*(s.aclose() for s in servers))
    assert not any(r.is_error for r in results), [r.content for r in results if r.is_error]
    return [InsiderTransactions.model_validate(r.structured_content) for r in results]


def environment(fake_sec: FakeSecServer, limiter_dir: Path, redis_url: str) -> dict[str, str]:
    return app_environment(
        SEC_USER_AGENT=USER_AGENT,
        SEC_DATA_URL=fake_sec.data_url,
        SEC_WWW_URL=fake_sec.www_url,
        SEC_LIMITER_DIR=str(limiter_dir),
        REDIS_URL=redis_url,
    )


def assert_never_over_ten_a_second(fake_sec: FakeSecServer) -> None:
    statuses = [r.status for r in fake_sec.requests]
    assert 429 not in statuses, f"the SEC throttled {statuses.count(429)} of {len(statuses)} requests"
    assert most_in_any_second([r.at for r in fake_sec.requests]) <= 10
    # Every server read every Form 4 itself (a 404 is not cached): the budget, not a cache, kept the rate.
    assert len(fake_sec.paths(404)) == len(PROCESSES) * FORM4S


async def test_without_redis_the_processes_of_a_machine_share_one_budget(
    fake_sec: FakeSecServer, tmp_path: Path
) -> None:
    environments = [environment(fake_sec, tmp_path / "machine", redis_url="") for _ in PROCESSES]

    read = await read_form4s_at_once(fake_sec, environments)

    assert [r.company for r in read] == ["Apple Inc."] * len(PROCESSES)
    assert_never_over_ten_a_second(fake_sec)


@pytest.mark.skipif(not settings.REDIS_URL, reason="needs REDIS_URL (make test-postgres sets it)")
async def test_with_redis_processes_on_different_machines_share_one_budget(
    fake_sec: FakeSecServer, tmp_path: Path
) -> None:
    # A window file of its own for each server, as on four machines: only Redis is shared.
    environments = [environment(fake_sec, tmp_path / name, redis_url=settings.REDIS_URL) for name in PROCESSES]

    await read_form4s_at_once(fake_sec, environments)

    assert_never_over_ten_a_second(fake_sec)


async def test_when_redis_is_down_the_processes_of_a_machine_still_share_one_budget(
    fake_sec: FakeSecServer, tmp_path: Path
) -> None:
    down = f"redis://127.0.0.1:{free_port()}/0"
    environments = [environment(fake_sec, tmp_path / "machine", redis_url=down) for _ in PROCESSES]

    await read_form4s_at_once(fake_sec, environments)

    assert_never_over_ten_a_second(fake_sec)
