"""Writes for watchlists: a new one checked and stored within its owner's limit, changes checked and saved.

The checks that wait on the network (symbols, the webhook's address) and on the clock (the schedule's
gaps) run first, on the event loop and its threads; the writes are short database calls. `next_run_at`
is the schedule's first firing after the write: a new or rescheduled watchlist gets no brief for a time
before it existed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db import transaction

from chat.callers import Caller
from chat.models import Watchlist
from chat.schedules import Schedule
from chat.selectors import watchlists_for
from chat.services.watchlist_input import (
    WatchlistRefused,
    checked_channels,
    checked_name,
    checked_schedule,
    checked_symbols,
)
from chat.watchlist_schemas import WatchlistIn, WatchlistPatch


@dataclass(frozen=True)
class NewWatchlist:
    name: str
    symbols: list[str]
    schedule: Schedule
    channels: list[dict]


@dataclass(frozen=True)
class WatchlistChanges:
    """Checked field values to save; `schedule` when the schedule or its zone changes (the next firing is
    then computed again)."""

    values: dict[str, object]
    schedule: Schedule | None


async def checked_new(payload: WatchlistIn) -> NewWatchlist:
    return NewWatchlist(
        # The cheap checks first; the symbols' look-up last.
        name=checked_name(payload.name),
        schedule=await checked_schedule(payload.schedule, payload.timezone),
        channels=await checked_channels(payload.channels),
        symbols=await checked_symbols(payload.symbols),
    )


async def checked_patch(watchlist: Watchlist, patch: WatchlistPatch) -> WatchlistChanges:
    """The fields `patch` sets, checked as a new watchlist's are. A new schedule or zone is checked with
    the other one as stored; symbols already on the watchlist are not looked up again."""
    values: dict[str, object] = {}
    schedule = None
    if patch.name is not None:
        values["name"] = checked_name(patch.name)
    if patch.schedule is not None or patch.timezone is not None:
        timezone = patch.timezone if patch.timezone is not None else watchlist.timezone
        schedule = await checked_schedule(patch.schedule or watchlist.schedule, timezone)
        values.update(schedule=schedule.cron, timezone=timezone)
    if patch.symbols is not None:
        values["symbols"] = await checked_symbols(patch.symbols, known=watchlist.symbols)
    if patch.channels is not None:
        values["channels"] = await checked_channels(patch.channels, stored=watchlist.channels)
    return WatchlistChanges(values, schedule)


def check_room(caller: Caller) -> None:
    """Refuse a new watchlist to an owner at WATCHLISTS_MAX_PER_OWNER (0: no limit)."""
    cap = settings.WATCHLISTS_MAX_PER_OWNER
    if cap and watchlists_for(caller).count() >= cap:
        raise WatchlistRefused("too_many_watchlists", f"watchlists: at most {cap} per owner; delete one first")


@transaction.atomic
def create_watchlist(caller: Caller, new: NewWatchlist) -> Watchlist:
    check_room(caller)
    return Watchlist.objects.create(
        name=new.name,
        symbols=new.symbols,
        schedule=new.schedule.cron,
        timezone=new.schedule.zone.key,
        channels=new.channels,
        next_run_at=new.schedule.next_after(datetime.now(UTC)),
        **caller.owner_fields(),
    )


def update_watchlist(watchlist: Watchlist, changes: WatchlistChanges) -> Watchlist:
    for name, value in changes.values.items():
        setattr(watchlist, name, value)
    fields = [*changes.values, "updated_at"]
    if changes.schedule is not None:
        watchlist.next_run_at = changes.schedule.next_after(datetime.now(UTC))
        fields.append("next_run_at")
    watchlist.save(update_fields=fields)
    return watchlist


def delete_watchlist(caller: Caller, watchlist_id: uuid.UUID) -> bool:
    deleted, _ = watchlists_for(caller).filter(pk=watchlist_id).delete()
    return bool(deleted)
