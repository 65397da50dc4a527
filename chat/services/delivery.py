"""Delivering a finished brief to each channel of its watchlist, every attempt recorded, none sent twice.

`deliver_brief(brief_id)` (async, for the event loop a brief finishes on, in a web process or a queue
worker) records one `Delivery` per channel (the unique constraint on brief and channel makes a second call
add none), then tries each until it is delivered or failed, sleeping between attempts on this loop: a
failure waits BRIEFS_DELIVERY_BACKOFF seconds, doubled after each further one and always under 60 s; 5
attempts in all; a permanent failure (a 4xx, a refused address, an SMTP 5xx) is not tried again.

Exactly once, across processes: an attempt is taken by one conditional UPDATE (the delivery still open
and due, `next_attempt_at` moved a lease ahead), so of two processes trying the same delivery one sends
and the other stops. What the attempt came to is then written with the row locked. A delivered row is
never open again. A process that stops between attempts (a restart, a cancel) leaves `next_attempt_at`
saying when the next one is due: `deliver_due()`, called by a scheduler or worker loop, takes those; one
that stops during an attempt leaves the lease, after which the attempt is made again (the receiver may
then see the brief twice: `X-Delivery-Id` and the brief's `id` let it tell).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction

from chat.brief_schemas import webhook_body
from chat.db_calls import db_call
from chat.models import Brief, Delivery
from chat.services import email_sender, webhook_sender
from chat.services.delivery_attempt import AttemptResult, permanent, temporary

logger = logging.getLogger(__name__)

ATTEMPTS_IN_ALL = 5
MAX_BACKOFF_S = 59.0
OPEN = (Delivery.Status.PENDING, Delivery.Status.RETRYING)
# Beyond the longest an attempt may take: an SMTP exchange is several operations of EMAIL_TIMEOUT each.
LEASE_MARGIN_S = 30.0
DUE_BATCH = 100


def backoff_s(failures: int) -> float:
    """The pause after the `failures`-th failed attempt."""
    return min(settings.BRIEFS_DELIVERY_BACKOFF * 2 ** (failures - 1), MAX_BACKOFF_S)


def _lease() -> timedelta:
    return timedelta(seconds=max(settings.BRIEFS_DELIVERY_TIMEOUT, 4 * settings.EMAIL_TIMEOUT) + LEASE_MARGIN_S)


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class ClaimedAttempt:
    """An attempt this process took: the delivery, its brief (watchlist loaded), and when it began."""

    delivery: Delivery
    started: datetime


_background: set[asyncio.Task] = set()


def deliver_in_background(brief_id: uuid.UUID) -> None:
    """From the event loop a brief ended on: deliver it in a task of this loop (its deliveries are already
    recorded with the brief's end, so one that this process does not finish is left to `deliver_due`)."""
    task = asyncio.get_running_loop().create_task(deliver_brief(brief_id), name=f"deliver-brief-{brief_id}")
    _background.add(task)
    task.add_done_callback(_background.discard)


async def deliver_run_brief(run_id: uuid.UUID) -> None:
    """After a run's answer is stored: deliver the brief it wrote, if it wrote one. Never raises: the run is
    done whatever happens here, and deliveries not started now are taken by `deliver_due`."""
    try:
        brief_id = await db_call(lambda: Brief.objects.filter(run_id=run_id).values_list("pk", flat=True).first())
    except Exception:
        logger.exception("run %s: its brief's delivery is left to the scheduler", run_id)
        return
    if brief_id is not None:
        deliver_in_background(brief_id)


async def deliver_brief(brief_id: uuid.UUID) -> None:
    """Deliver a finished (`done`) brief to its watchlist's channels. Returns when every delivery is
    delivered or failed, or was taken by another process; cancelling it leaves the rest to `deliver_due`."""
    delivery_ids = await db_call(_open_deliveries, brief_id)
    await asyncio.gather(*(_deliver(delivery_id, keep_trying=True) for delivery_id in delivery_ids))


async def deliver_due() -> int:
    """Make one attempt at each delivery whose next attempt is due (left by a process that stopped, or by
    another's failed attempt); how many were tried. For a scheduler or worker loop to call every few seconds."""
    delivery_ids = await db_call(_due, _now())
    await asyncio.gather(*(_deliver(delivery_id, keep_trying=False) for delivery_id in delivery_ids))
    return len(delivery_ids)


def record_deliveries(brief: Brief) -> None:
    """One pending delivery per channel of a `done` brief's watchlist, due now; none added twice. Called in
    the transaction that ends the brief, so a finished brief never lacks its deliveries."""
    now = _now()
    Delivery.objects.bulk_create(
        [
            Delivery(brief=brief, channel=index, kind=channel["type"], next_attempt_at=now)
            for index, channel in enumerate(brief.watchlist.channels)
        ],
        ignore_conflicts=True,
    )


def _open_deliveries(brief_id: uuid.UUID) -> list[uuid.UUID]:
    brief = Brief.objects.select_related("watchlist").get(pk=brief_id)
    if brief.status != Brief.Status.DONE:
        logger.warning("brief %s is %s: not delivered", brief_id, brief.status)
        return []
    record_deliveries(brief)
    return list(Delivery.objects.filter(brief=brief, status__in=OPEN).values_list("id", flat=True))


def _due(now: datetime) -> list[uuid.UUID]:
    due = Delivery.objects.filter(status__in=OPEN, next_attempt_at__lte=now).order_by("next_attempt_at")
    return list(due.values_list("id", flat=True)[:DUE_BATCH])


async def _deliver(delivery_id: uuid.UUID, *, keep_trying: bool) -> None:
    while True:
        claim = await db_call(_claim, delivery_id, _now())
        if claim is None:
            return  # delivered, failed, or another process has the attempt (and what follows it)
        result = await _attempt(claim.delivery)
        delivery = await db_call(_record, delivery_id, claim.started, result)
        if not keep_trying or delivery.status != Delivery.Status.RETRYING or delivery.next_attempt_at is None:
            return
        await asyncio.sleep(max(0.0, (delivery.next_attempt_at - _now()).total_seconds()))


def _claim(delivery_id: uuid.UUID, now: datetime) -> ClaimedAttempt | None:
    """Take the next attempt at the delivery, if it is open and due and nobody has it: one UPDATE, so two
    processes never both take it."""
    taken = Delivery.objects.filter(pk=delivery_id, status__in=OPEN, next_attempt_at__lte=now).update(
        next_attempt_at=now + _lease()
    )
    if not taken:
        return None
    return ClaimedAttempt(Delivery.objects.select_related("brief__watchlist").get(pk=delivery_id), now)


def _record(delivery_id: uuid.UUID, started: datetime, result: AttemptResult) -> Delivery:
    """Keep the attempt and move the delivery on: delivered, failed, or retrying after a pause."""
    with transaction.atomic():
        delivery = Delivery.objects.select_for_update().get(pk=delivery_id)
        delivery.attempts = [*delivery.attempts, result.as_record(started)]
        failures = len(delivery.attempts)
        delivery.next_attempt_at = None
        if result.outcome == "delivered":
            delivery.status, delivery.delivered_at = Delivery.Status.DELIVERED, _now()
        elif result.outcome == "permanent_failure" or failures >= ATTEMPTS_IN_ALL:
            delivery.status = Delivery.Status.FAILED
        else:
            delivery.status = Delivery.Status.RETRYING
            delivery.next_attempt_at = _now() + timedelta(seconds=backoff_s(failures))
        delivery.save(update_fields=["attempts", "status", "next_attempt_at", "delivered_at"])
    logger.info(
        "brief %s channel %d (%s): attempt %d %s%s, now %s",
        delivery.brief_id,
        delivery.channel,
        delivery.kind,
        failures,
        result.outcome,
        f" ({result.error})" if result.error else "",
        delivery.status,
    )
    return delivery


async def _attempt(delivery: Delivery) -> AttemptResult:
    brief = delivery.brief
    channels = brief.watchlist.channels
    channel = channels[delivery.channel] if delivery.channel < len(channels) else None
    if channel is None or channel["type"] != delivery.kind:
        return permanent("channel_removed: the watchlist no longer has this channel")
    try:
        if delivery.kind == "webhook":
            body = webhook_body(brief)
            return await webhook_sender.post_brief(
                channel["url"],
                channel["secret"],
                body,
                delivery_id=str(delivery.id),
                timeout_s=settings.BRIEFS_DELIVERY_TIMEOUT,
            )
        return await asyncio.to_thread(email_sender.send_brief, brief, channel["to"])
    except Exception:
        # A bug of ours, not the far end's: kept as a temporary failure so the attempt is not lost.
        logger.exception("brief %s channel %d: the attempt failed unexpectedly", brief.id, delivery.channel)
        return temporary("internal_error")
