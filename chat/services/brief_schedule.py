"""Firing the watchlists' schedules: which slot is due, who takes it, and the brief it starts.

A watchlist is due when its `next_run_at` has passed. Its slot is the latest firing of its schedule up to
now, never one before the watchlist existed: after downtime the missed slots before it are skipped, so at
most one catch-up brief comes. Every process that sees it due starts the slot's brief; the database's
unique constraint on (watchlist, slot) lets one record it, and refuses the others (`BriefSlotTaken`)
before anything is asked of the data tools. Only then is `next_run_at` moved on (one conditional UPDATE,
on the value read, by whichever process gets there): a process that stops between the two leaves the
watchlist due, and the next look finds the slot recorded and moves it on. So no slot is lost and none
is briefed twice. A start that fails before its row is recorded (the database away) leaves the watchlist
due for the next look.

`tick()` is what the schedulers call every BRIEFS_TICK seconds (the in-process loop of a web process, the
queue's periodic task on a worker): the due briefs, then the deliveries whose next attempt is due.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from chat.db_calls import db_call
from chat.models import Watchlist
from chat.schedules import Schedule, zone_named
from chat.services.briefs import BriefSlotTaken, start_brief
from chat.services.delivery import deliver_due

logger = logging.getLogger(__name__)

# Watchlists taken in one look; more wait for the next tick (or another process's).
DUE_BATCH = 100
_JUST_BEFORE = timedelta(microseconds=1)


@dataclass(frozen=True)
class DueSlot:
    """A due watchlist, as read (`next_run_at` then), and the firing its brief answers (None: no firing
    since it was created, only `next_run_at` to move on)."""

    watchlist: Watchlist
    slot: datetime | None


def schedule_of(watchlist: Watchlist) -> Schedule:
    return Schedule(watchlist.schedule, zone_named(watchlist.timezone))


def slot_due(schedule: Schedule, *, next_run_at: datetime, created_at: datetime, now: datetime) -> datetime | None:
    """The latest firing from `next_run_at` (or the watchlist's creation, if later) up to `now`; None when
    none comes in between. The firings before it were missed: they get no brief of their own."""
    latest = None
    for firing in schedule.firings(max(next_run_at, created_at) - _JUST_BEFORE):
        if firing > now:
            return latest
        latest = firing
    raise AssertionError("a schedule's firings never end")  # pragma: no cover


def due_now(now: datetime) -> list[DueSlot]:
    """The due watchlists, each with its slot; nothing is written."""
    due = Watchlist.objects.filter(next_run_at__lte=now).order_by("next_run_at")[:DUE_BATCH]
    found = []
    for watchlist in due:
        try:
            slot = slot_due(
                schedule_of(watchlist), next_run_at=watchlist.next_run_at, created_at=watchlist.created_at, now=now
            )
        except Exception:  # one watchlist's failure (a zone this machine lost) does not hold the others
            logger.exception("Watchlist %s could not be fired", watchlist.pk)
            continue
        found.append(DueSlot(watchlist, slot))
    return found


def advance(due: DueSlot, now: datetime) -> bool:
    """Move `next_run_at` to the first firing after `now`, by an UPDATE on the value read: False when another
    process moved it first, or the schedule was changed meanwhile."""
    watchlist = due.watchlist
    moved = Watchlist.objects.filter(pk=watchlist.pk, next_run_at=watchlist.next_run_at).update(
        next_run_at=schedule_of(watchlist).next_after(now)
    )
    return bool(moved)


async def fire_due(now: datetime | None = None) -> int:
    """Start the brief of every due watchlist's slot, each covering the time up to `now` (the look's
    moment), then move the watchlists on; how many briefs this process started."""
    now = now or timezone.now()
    due = await db_call(due_now, now)
    started = await asyncio.gather(*(_fire(slot, now) for slot in due))
    return sum(started)


async def _fire(due: DueSlot, now: datetime) -> bool:
    started = False
    if due.slot is not None:
        try:
            await start_brief(due.watchlist, scheduled_for=due.slot, until=now)
            started = True
        except BriefSlotTaken:
            pass  # another start of this slot recorded it first: its brief goes on
        except Exception:
            # Not moved on: the next look starts the slot again, and its row, if recorded, refuses a second.
            logger.exception("The brief of watchlist %s for %s could not start", due.watchlist.pk, due.slot.isoformat())
            return False
    await db_call(advance, due, now)
    return started


async def tick() -> None:
    """One look: the due briefs started, the due delivery attempts made. Never raises (each half logs
    its failure), so a scheduler's loop survives a database that is briefly away."""
    for what, step in (("start the due briefs", fire_due), ("make the due delivery attempts", deliver_due)):
        try:
            await step()
        except Exception:
            logger.exception("The briefs' scheduler could not %s this tick", what)
