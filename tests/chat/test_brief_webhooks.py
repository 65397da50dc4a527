"""A finished brief posted to its webhooks: signed so the receiver can check it, retried on 5xx and
time-outs, not retried on a 4xx or a redirect, never sent twice, every attempt recorded without the secret,
and the address judged again when it is sent.

The receiver is a real HTTP server on 127.0.0.1 (tests/fakes/webhook_receiver.py); pauses between attempts
are set to nothing (BRIEFS_DELIVERY_BACKOFF=0), so no test waits on the clock.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
from datetime import UTC, datetime, timedelta

import pytest

from chat.models import Delivery
from chat.services.delivery import backoff_s, deliver_brief, deliver_due
from tests.chat.brief_rows import ANSWER, SOURCES, finished_brief
from tests.fakes.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "placeholder-webhook-secret"


@pytest.fixture(autouse=True)
def fast_delivery(settings):
    settings.BRIEFS_DELIVERY_BACKOFF = 0
    settings.BRIEFS_DELIVERY_TIMEOUT = 1
    settings.WEBHOOK_ALLOW_PRIVATE = True


@pytest.fixture
def receiver_answering():
    started: list[WebhookReceiver] = []

    def start(*answers: int | str) -> WebhookReceiver:
        started.append(WebhookReceiver(list(answers)).start())
        return started[-1]

    yield start
    for receiver in started:
        receiver.stop()


async def webhook_brief(receiver: WebhookReceiver):
    return await finished_brief([{"type": "webhook", "url": receiver.url, "secret": SECRET}])


async def delivery_of(brief) -> Delivery:
    return await Delivery.objects.aget(brief=brief, channel=0)


def outcomes(delivery: Delivery) -> list[tuple[str, int | None]]:
    return [(attempt["outcome"], attempt["status_code"]) for attempt in delivery.attempts]


async def test_the_brief_is_posted_as_json_signed_with_the_channels_secret(receiver_answering):
    receiver = receiver_answering(200)
    brief = await webhook_brief(receiver)

    await deliver_brief(brief.id)

    [request] = receiver.requests
    expected = "sha256=" + hmac.new(SECRET.encode(), request.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(request.headers["X-Signature-256"], expected)
    assert request.headers["Content-Type"] == "application/json"
    body = json.loads(request.body)
    assert next(iter(body)) == "id" and body["id"] == str(brief.id)
    assert body["watchlist_id"] == str(brief.watchlist_id) and body["status"] == "done"
    assert (body["answer"], body["sources"], body["run_id"]) == (ANSWER, SOURCES, None)
    assert datetime.fromisoformat(body["until"]) == brief.until
    delivery = await delivery_of(brief)
    assert request.headers["X-Delivery-Id"] == str(delivery.id)
    assert delivery.status == "delivered" and delivery.delivered_at is not None
    assert outcomes(delivery) == [("delivered", 200)]


async def test_a_signature_made_with_another_secret_does_not_match(receiver_answering):
    receiver = receiver_answering(200)
    await deliver_brief((await webhook_brief(receiver)).id)

    [request] = receiver.requests
    forged = "sha256=" + hmac.new(b"another-secret", request.body, hashlib.sha256).hexdigest()
    assert not hmac.compare_digest(request.headers["X-Signature-256"], forged)


async def test_server_errors_are_retried_until_the_receiver_accepts(receiver_answering):
    receiver = receiver_answering(500, 500, 200)
    brief = await webhook_brief(receiver)

    await deliver_brief(brief.id)

    assert len(receiver.requests) == 3
    assert len({request.body for request in receiver.requests}) == 1  # the same body each time
    delivery = await delivery_of(brief)
    assert delivery.status == "delivered"
    assert outcomes(delivery) == [("temporary_failure", 500), ("temporary_failure", 500), ("delivered", 200)]
    assert delivery.attempts[0]["error"].startswith("http_500")
    assert all(set(attempt) == {"at", "outcome", "status_code", "error"} for attempt in delivery.attempts)


async def test_a_client_error_fails_the_delivery_at_once(receiver_answering):
    receiver = receiver_answering(400, 200)
    brief = await webhook_brief(receiver)

    await deliver_brief(brief.id)
    assert await deliver_due() == 0

    assert len(receiver.requests) == 1
    delivery = await delivery_of(brief)
    assert delivery.status == "failed" and delivery.next_attempt_at is None
    assert outcomes(delivery) == [("permanent_failure", 400)]
    assert delivery.attempts[0]["error"] == 'http_400: {"error": "the receiver says no"}'


async def test_a_redirect_is_not_followed(receiver_answering):
    receiver = receiver_answering(302)
    brief = await webhook_brief(receiver)

    await deliver_brief(brief.id)

    assert len(receiver.requests) == 1
    delivery = await delivery_of(brief)
    assert delivery.status == "failed" and outcomes(delivery) == [("permanent_failure", 302)]


async def test_five_failures_fail_the_delivery(receiver_answering):
    receiver = receiver_answering(500, 503, 502, 500, 500, 200)
    brief = await webhook_brief(receiver)

    await deliver_brief(brief.id)
    assert await deliver_due() == 0

    assert len(receiver.requests) == 5
    delivery = await delivery_of(brief)
    assert delivery.status == "failed"
    assert [code for _, code in outcomes(delivery)] == [500, 503, 502, 500, 500]


async def test_a_receiver_that_does_not_answer_in_time_is_tried_again(receiver_answering, settings):
    settings.BRIEFS_DELIVERY_TIMEOUT = 0.3
    receiver = receiver_answering("stall", 200)
    brief = await webhook_brief(receiver)

    await deliver_brief(brief.id)

    delivery = await delivery_of(brief)
    assert delivery.status == "delivered"
    assert outcomes(delivery) == [("temporary_failure", None), ("delivered", 200)]
    assert delivery.attempts[0]["error"] == "timeout"


async def test_a_refused_connection_is_tried_again(receiver_answering):
    receiver = receiver_answering()
    receiver.stop()  # nothing listens on its port any more
    brief = await webhook_brief(receiver)

    await deliver_brief(brief.id)

    delivery = await delivery_of(brief)
    assert delivery.status == "failed"
    assert [attempt["error"] for attempt in delivery.attempts] == ["connect_failed"] * 5


async def test_a_private_address_is_refused_when_sending(receiver_answering, settings):
    receiver = receiver_answering(200)
    brief = await webhook_brief(receiver)  # stored while private addresses were allowed
    settings.WEBHOOK_ALLOW_PRIVATE = False

    await deliver_brief(brief.id)

    assert receiver.requests == []
    delivery = await delivery_of(brief)
    assert delivery.status == "failed"
    assert delivery.attempts[0]["outcome"] == "permanent_failure"
    assert delivery.attempts[0]["error"].startswith("webhook_not_public")


async def test_delivering_a_brief_twice_sends_it_once(receiver_answering):
    receiver = receiver_answering(200, 200)
    brief = await webhook_brief(receiver)

    await deliver_brief(brief.id)
    await deliver_brief(brief.id)

    assert len(receiver.requests) == 1
    assert await Delivery.objects.filter(brief=brief).acount() == 1


def run_in_threads(count: int, coroutine_function, *args) -> None:
    """Run `coroutine_function(*args)` on `count` threads at once, each with its own event loop."""
    barrier = threading.Barrier(count)
    failures: list[BaseException] = []

    def run() -> None:
        barrier.wait()
        try:
            asyncio.run(coroutine_function(*args))
        except BaseException as exc:  # noqa: BLE001 (reported below)
            failures.append(exc)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


async def test_two_processes_delivering_the_same_brief_send_it_once(receiver_answering):
    receiver = receiver_answering(200, 200)
    brief = await webhook_brief(receiver)

    await asyncio.to_thread(run_in_threads, 2, deliver_brief, brief.id)

    assert len(receiver.requests) == 1
    delivery = await delivery_of(brief)
    assert delivery.status == "delivered" and len(delivery.attempts) == 1


async def retrying_delivery(brief, *, due_at: datetime) -> Delivery:
    """A delivery as a stopped process leaves it: one failed attempt, the next one due at `due_at`."""
    failed = {"at": (due_at - timedelta(seconds=5)).isoformat(), "outcome": "temporary_failure"}
    return await Delivery.objects.acreate(
        brief=brief,
        channel=0,
        kind="webhook",
        status="retrying",
        attempts=[{**failed, "status_code": 500, "error": "http_500"}],
        next_attempt_at=due_at,
    )


async def test_a_retry_left_by_a_stopped_process_is_made_when_due(receiver_answering):
    receiver = receiver_answering(200)
    brief = await webhook_brief(receiver)
    await retrying_delivery(brief, due_at=datetime.now(UTC) + timedelta(hours=1))

    assert await deliver_due() == 0  # not due yet
    await Delivery.objects.filter(brief=brief).aupdate(next_attempt_at=datetime.now(UTC) - timedelta(seconds=1))
    assert await deliver_due() == 1

    assert len(receiver.requests) == 1
    delivery = await delivery_of(brief)
    assert delivery.status == "delivered"
    assert outcomes(delivery) == [("temporary_failure", 500), ("delivered", 200)]


async def test_two_workers_taking_due_retries_send_each_once(receiver_answering):
    receiver = receiver_answering(200, 200)
    brief = await webhook_brief(receiver)
    await retrying_delivery(brief, due_at=datetime.now(UTC) - timedelta(seconds=1))

    await asyncio.to_thread(run_in_threads, 2, deliver_due)

    assert len(receiver.requests) == 1
    assert (await delivery_of(brief)).status == "delivered"


async def test_the_secret_is_never_logged_nor_recorded(receiver_answering, caplog):
    caplog.set_level("DEBUG")
    receiver = receiver_answering(500, 400)
    receiver.refusal_body = f'{{"error": "not signed with {SECRET}"}}'.encode()  # a receiver echoing it
    brief = await webhook_brief(receiver)

    await deliver_brief(brief.id)

    delivery = await delivery_of(brief)
    assert len(delivery.attempts) == 2
    assert SECRET not in json.dumps(delivery.attempts)
    assert SECRET not in caplog.text and "attempt 2 permanent_failure" in caplog.text
    assert delivery.attempts[1]["error"] == 'http_400: {"error": "not signed with [hidden]"}'
    assert all(SECRET.encode() not in request.body for request in receiver.requests)


async def test_a_channel_removed_since_the_brief_fails_its_delivery(receiver_answering):
    receiver = receiver_answering(200)
    brief = await webhook_brief(receiver)
    await retrying_delivery(brief, due_at=datetime.now(UTC) - timedelta(seconds=1))
    watchlist = brief.watchlist
    watchlist.channels = [{"type": "email", "to": "analyst@example.com"}]
    await watchlist.asave()

    await deliver_due()

    assert receiver.requests == []
    delivery = await delivery_of(brief)
    assert delivery.status == "failed" and delivery.attempts[-1]["error"].startswith("channel_removed")


def test_pauses_double_and_stay_under_a_minute(settings):
    settings.BRIEFS_DELIVERY_BACKOFF = 5
    assert [backoff_s(n) for n in range(1, 5)] == [5, 10, 20, 40]
    settings.BRIEFS_DELIVERY_BACKOFF = 20
    assert max(backoff_s(n) for n in range(1, 5)) < 60
