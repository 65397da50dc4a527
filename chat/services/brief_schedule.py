"""Firing the watchlists' schedules: which slot is due, who takes it, and the brief it starts.

A watchlist is due when its `next_run_at` has passed. Its slot is the latest firing of its schedule up to
now, never one before the watchlist existed: after downtime the missed slots before it are skipped, so at
most one catch-up brief comes. The process that moves `next_run_at` on (one conditional UPDATE, on the
value it read) starts the slot's brief; any other process reading the same row finds the UPDATE changes
nothing and leaves it. The database's unique constraint on (watchlist, slot) stands behind that: a second
start of a slot is refused (`BriefSlotTaken`) before anything is asked of the data tools.

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
    """A watchlist this process took, and the firing its brief answers."""

    watchlist: Watchlist
    slot: datetime


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


def take_due(now: datetime) -> list[DueSlot]:
    """The due watchlists this process takes, each with its slot."""
    due = Watchlist.objects.filter(next_run_at__lte=now).order_by("next_run_at")[:DUE_BATCH]
    taken = []
    for watchlist in due:
        try:
            slot = _take(watchlist, now)
        except Exception:  # one watchlist's failure (a zone this machine lost) does not hold the others
            logger.exception("Watchlist %s could not be fired", watchlist.pk)
            continue
        if slot is not None:
            taken.append(DueSlot(watchlist, slot))
    return taken


def _take(watchlist: Watchlist, now: datetime) -> datetime | None:
    """Move `next_run_at` to the first firing after `now` by an UPDATE on the value read, which only one
    process can make; the slot to brief if this process made it."""
    schedule = schedule_of(watchlist)
    read = watchlist.next_run_at
    assert read is not None  # filtered on it
    moved = Watchlist.objects.filter(pk=watchlist.pk, next_run_at=read).update(next_run_at=schedule.next_after(now))
    if not moved:
        return None  # another process took it, or the schedule was changed meanwhile
    return slot_due(schedule, next_run_at=read, created_at=watchlist.created_at, now=now)


async def fire_due(now: datetime | None = None) -> int:
    """Start the brief of every due watchlist's slot, each covering the time up to `now` (the look's
    moment); how many this process started."""
    now = now or timezone.now()
    taken = await db_call(take_due, now)
    started = await asyncio.gather(*(_start(due, now) for due in taken))
    return sum(started)


async def _start(due: DueSlot, now: datetime) -> bool:
    try:
        await start_brief(due.watchlist, scheduled_for=due.slot, until=now)
    except BriefSlotTaken:
        return False  # another start of this slot got there first: its brief goes on
    except Exception:
        logger.exception("The brief of watchlist %s for %s could not start", due.watchlist.pk, due.slot.isoformat())
        return False
    return True


async def tick() -> None:
    """One look: the due briefs started, the due delivery attempts made. Never raises (each half logs
    its failure), so a scheduler's loop survives a database that is briefly away."""
    for what, step in (("start the due briefs", fire_due), ("make the due delivery attempts", deliver_due)):
        try:
            await step()
        except Exception:
            logger.exception("The briefs' scheduler could not %s this tick", what)
