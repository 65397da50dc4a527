"""Briefs fired on schedule by real processes racing for them, on the test PostgreSQL and Redis: one brief
per slot and one delivery of it, whether two queue workers' periodic ticks or two web processes'
in-process schedulers (beside web processes that also have BRIEFS_SCHEDULER=1) are looking.

Every process is real: uvicorn web processes served as `make run` serves them, `manage.py runworker`
workers, and the market data server they all connect to (the real entry point over the fake yfinance,
speaking streamable HTTP), with its filing tools on the fake SEC. The fakes' data is of 2025, so a brief
made now finds nothing material and makes no model call; it is delivered to a webhook receiver on loopback.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings

from chat.models import Brief, Delivery, Watchlist
from tests.datascraper.filings.conftest import USER_AGENT
from tests.fakes.sec_server import FakeSecServer
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.processes import ROOT, app_environment, free_port, running_apps, wait_for_port

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.processes,
    pytest.mark.skipif(not settings.IS_POSTGRES or not settings.REDIS_URL, reason="needs PostgreSQL and Redis"),
]

SECRET = "placeholder-webhook-secret"
TICK = "1"  # seconds: the processes look often, so that they race


@pytest.fixture
def market_data_url() -> Iterator[str]:
    """The market data server as its own service (MARKET_DATA_MCP_URL), over the fake yfinance and SEC."""
    with FakeSecServer() as sec:
        port = free_port()
        env = app_environment(SEC_USER_AGENT=USER_AGENT, SEC_DATA_URL=sec.data_url, SEC_WWW_URL=sec.www_url)
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.market_data_launcher", "--http", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port(port, server)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.kill()
            server.wait(timeout=10)


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver().start()
    yield receiver
    receiver.stop()


async def watchlist_due_now(receiver: WebhookReceiver) -> tuple[Watchlist, datetime]:
    """A daily watchlist whose firing is this very minute, made a day ago; its slot."""
    slot = datetime.now(UTC).replace(second=0, microsecond=0)
    row = await Watchlist.objects.acreate(
        session_key="scheduled-briefs",
        name="Morning tech",
        symbols=["AAPL"],
        schedule=f"{slot.minute} {slot.hour} * * *",
        timezone="UTC",
        channels=[{"type": "webhook", "url": receiver.url, "secret": SECRET}],
    )
    await Watchlist.objects.filter(pk=row.pk).aupdate(next_run_at=slot, created_at=slot - timedelta(days=1))
    return row, slot


def model_calls(fake_openai) -> list:
    """What was asked of a model (each process also lists the models as it starts: not a call)."""
    return [request for request in fake_openai.requests if request.method == "POST"]


async def until(predicate, timeout: float = 60, interval: float = 0.1):
    async with asyncio.timeout(timeout):
        while not (value := await predicate()):
            await asyncio.sleep(interval)
        return value


async def assert_one_brief_delivered_once(row: Watchlist, slot: datetime, receiver: WebhookReceiver) -> None:
    async def finished() -> bool:
        return await Brief.objects.filter(watchlist=row).exclude(status=Brief.Status.RUNNING).aexists()

    async def delivered() -> bool:
        return await Delivery.objects.filter(brief__watchlist=row, status=Delivery.Status.DELIVERED).aexists()

    await until(finished)
    await until(delivered)
    # Several more ticks of every process: none may start the slot again or deliver it again.
    await asyncio.sleep(5 * float(TICK))

    [brief] = [b async for b in Brief.objects.filter(watchlist=row)]
    assert brief.scheduled_for == slot and brief.status == Brief.Status.DONE
    assert brief.answer.startswith("Nothing material changed since") and brief.run_id is None
    assert (await Watchlist.objects.aget(pk=row.pk)).next_run_at == slot + timedelta(days=1)
    [request] = receiver.requests
    assert json.loads(request.body)["id"] == str(brief.pk)
    signature = "sha256=" + hmac.new(SECRET.encode(), request.body, hashlib.sha256).hexdigest()
    assert request.headers["X-Signature-256"] == signature
    [delivery] = [d async for d in Delivery.objects.filter(brief=brief)]
    assert [attempt["outcome"] for attempt in delivery.attempts] == ["delivered"]


async def test_two_web_processes_and_two_workers_fire_a_slot_once_and_deliver_it_once(
    market_data_url, receiver, fake_openai
):
    row, slot = await watchlist_due_now(receiver)
    env = {"MARKET_DATA_MCP_URL": market_data_url, "BRIEFS_SCHEDULER": "1", "BRIEFS_TICK": TICK}
    with running_apps(RUNS_BACKEND="queue", WEBHOOK_ALLOW_PRIVATE="1", **env) as apps:
        apps.web()
        apps.web()
        apps.worker()
        apps.worker()
        await assert_one_brief_delivered_once(row, slot, receiver)
    assert model_calls(fake_openai) == []


async def test_two_web_processes_schedulers_fire_a_slot_once_and_deliver_it_once(
    market_data_url, receiver, fake_openai
):
    row, slot = await watchlist_due_now(receiver)
    env = {"MARKET_DATA_MCP_URL": market_data_url, "BRIEFS_SCHEDULER": "1", "BRIEFS_TICK": TICK}
    with running_apps(RUNS_BACKEND="inprocess", WEBHOOK_ALLOW_PRIVATE="1", **env) as apps:
        apps.web()
        apps.web()
        await assert_one_brief_delivered_once(row, slot, receiver)
    assert model_calls(fake_openai) == []
