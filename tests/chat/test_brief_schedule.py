"""Firing the watchlists' schedules: the slot a due watchlist gets (at most one catch-up, none before the
watchlist existed, the clocks' changes), the one process that takes it, and the in-process loop.

The briefs are started for real (chat.services.briefs) over the in-memory market data server and the fake
SEC: their windows end now, long after the fakes' data (2025), so each finds nothing material and makes no
model call.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import pytest
from croniter import croniter
from django.contrib.auth import get_user_model
from django.core.management import call_command

from chat.models import Brief, Conversation, Message, ResearchRun, Watchlist
from chat.schedules import Schedule
from chat.services import brief_schedule, queue
from chat.services.brief_schedule import advance, due_now, fire_due, slot_due
from chat.services.brief_scheduler import BriefScheduler, start_in_process_scheduler
from chat.services.briefs import start_brief
from tests.datascraper.conftest import filed, sec_server  # noqa: F401 (the fixtures)

UTC_SEVEN = Schedule.parse("0 7 * * *", "UTC")
PARIS_HALF_TWO = Schedule.parse("30 2 * * *", "Europe/Paris")
LONG_AGO = datetime(2026, 11, 1, tzinfo=UTC)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


# --- the slot ------------------------------------------------------------------------------------------


def test_a_due_watchlist_gets_the_firing_it_was_due_for():
    slot = slot_due(
        UTC_SEVEN,
        next_run_at=at("2026-11-27T07:00Z"),
        created_at=at("2026-11-01T00:00Z"),
        now=at("2026-11-27T07:00:04Z"),
    )
    assert slot == at("2026-11-27T07:00Z")


def test_after_a_week_of_downtime_only_the_latest_missed_firing_is_briefed():
    slot = slot_due(
        UTC_SEVEN, next_run_at=at("2026-11-20T07:00Z"), created_at=at("2026-11-01T00:00Z"), now=at("2026-11-27T08:00Z")
    )
    assert slot == at("2026-11-27T07:00Z")


def test_downtime_ending_before_the_days_firing_briefs_yesterdays():
    slot = slot_due(
        UTC_SEVEN, next_run_at=at("2026-11-20T07:00Z"), created_at=at("2026-11-01T00:00Z"), now=at("2026-11-27T06:59Z")
    )
    assert slot == at("2026-11-26T07:00Z")


def test_no_firing_before_the_watchlist_existed_is_briefed():
    # A row whose next firing predates it (stored by hand, or an old copy): nothing from before its creation.
    created = at("2026-11-27T07:30Z")
    assert (
        slot_due(UTC_SEVEN, next_run_at=at("2026-11-27T07:00Z"), created_at=created, now=at("2026-11-27T08:00Z"))
        is None
    )
    slot = slot_due(UTC_SEVEN, next_run_at=at("2026-11-20T07:00Z"), created_at=created, now=at("2026-11-28T07:00:01Z"))
    assert slot == at("2026-11-28T07:00Z")


def test_on_the_march_night_the_skipped_time_fires_once_after_the_jump():
    # 02:30 does not exist in Paris on 2027-03-28: it fires at 03:30 CEST (01:30 UTC).
    slot = slot_due(
        PARIS_HALF_TWO,
        next_run_at=at("2027-03-27T01:30Z"),
        created_at=at("2027-01-01T00:00Z"),
        now=at("2027-03-28T01:45Z"),
    )
    assert slot == at("2027-03-28T03:30+02:00")
    assert PARIS_HALF_TWO.next_after(at("2027-03-28T01:45Z")) == at("2027-03-29T02:30+02:00")


def test_on_the_october_night_the_time_passed_twice_fires_the_first_time_only():
    first = at("2026-10-25T02:30+02:00")  # CEST, 00:30 UTC; the clocks then pass 02:30 again at 01:30 UTC
    slot = slot_due(
        PARIS_HALF_TWO, next_run_at=first, created_at=at("2026-01-01T00:00Z"), now=at("2026-10-25T02:45+01:00")
    )
    assert slot == first
    assert PARIS_HALF_TWO.next_after(at("2026-10-25T02:45+01:00")) == at("2026-10-26T02:30+01:00")


# --- who takes it ---------------------------------------------------------------------------------------


def watchlist(*, next_run_at: datetime, schedule: Schedule = UTC_SEVEN, created_at: datetime = LONG_AGO) -> Watchlist:
    row = Watchlist.objects.create(
        session_key="scheduler-tests",
        name="Morning",
        symbols=["AAPL"],
        schedule=schedule.cron,
        timezone=schedule.zone.key,
        next_run_at=next_run_at,
    )
    Watchlist.objects.filter(pk=row.pk).update(created_at=created_at)
    row.refresh_from_db()
    return row


@pytest.mark.django_db
def test_of_two_processes_that_read_the_same_due_row_one_moves_it_on():
    row = watchlist(next_run_at=at("2026-11-27T07:00Z"), created_at=at("2026-11-01T00:00Z"))
    now = at("2026-11-27T07:00:05Z")
    [seen_by_a], [seen_by_b] = due_now(now), due_now(now)

    assert seen_by_a.slot == seen_by_b.slot == at("2026-11-27T07:00Z")  # both start it: the constraint picks one
    assert advance(seen_by_a, now) is True
    assert advance(seen_by_b, now) is False
    assert Watchlist.objects.get(pk=row.pk).next_run_at == at("2026-11-28T07:00Z")


@pytest.mark.django_db
def test_the_advance_skips_the_missed_firings_and_a_second_look_finds_nothing_due():
    row = watchlist(next_run_at=at("2026-11-20T07:00Z"), created_at=at("2026-11-01T00:00Z"))
    now = at("2026-11-27T08:00Z")

    [due] = due_now(now)
    assert (due.watchlist.pk, due.slot) == (row.pk, at("2026-11-27T07:00Z"))
    advance(due, now)
    assert due_now(now) == []
    assert Watchlist.objects.get(pk=row.pk).next_run_at == at("2026-11-28T07:00Z")


@pytest.mark.django_db
def test_a_watchlist_not_due_yet_and_one_without_a_next_firing_are_left_alone():
    later = watchlist(next_run_at=at("2026-11-28T07:00Z"))
    unscheduled = watchlist(next_run_at=at("2026-11-28T07:00Z"))
    Watchlist.objects.filter(pk=unscheduled.pk).update(next_run_at=None)

    assert due_now(at("2026-11-27T08:00Z")) == []
    assert Watchlist.objects.get(pk=later.pk).next_run_at == at("2026-11-28T07:00Z")


@pytest.mark.django_db
def test_a_watchlist_whose_zone_cannot_be_read_does_not_hold_the_others(caplog):
    broken = watchlist(next_run_at=at("2026-11-27T07:00Z"))
    Watchlist.objects.filter(pk=broken.pk).update(timezone="Mars/Olympus_Mons")
    fine = watchlist(next_run_at=at("2026-11-27T07:00Z"))

    due = due_now(at("2026-11-27T07:00:05Z"))

    assert [slot.watchlist.pk for slot in due] == [fine.pk]
    assert f"Watchlist {broken.pk} could not be fired" in caplog.text


# --- the briefs started -----------------------------------------------------------------------------------


def now_slot() -> datetime:
    """A firing of `* * * * *` a moment ago: the watchlist is due now."""
    return datetime.now(UTC).replace(second=0, microsecond=0)


async def due_watchlist() -> Watchlist:
    every_minute = Schedule.parse("* * * * *", "UTC")
    row = await Watchlist.objects.acreate(
        session_key="scheduler-tests", name="Now", symbols=["AAPL"], schedule=every_minute.cron, timezone="UTC"
    )
    await Watchlist.objects.filter(pk=row.pk).aupdate(next_run_at=now_slot(), created_at=now_slot() - timedelta(days=1))
    return row


@pytest.mark.django_db(transaction=True)
async def test_concurrent_looks_start_one_brief_for_the_slot(filed):  # noqa: F811
    row = await due_watchlist()
    slot = now_slot()

    started = await asyncio.gather(*(fire_due() for _ in range(4)))

    assert sum(started) == 1
    [brief] = [b async for b in Brief.objects.filter(watchlist=row)]
    assert brief.scheduled_for == slot and brief.status == Brief.Status.DONE
    assert brief.answer.startswith("Nothing material changed since")


@pytest.mark.django_db(transaction=True)
async def test_a_process_that_stopped_after_recording_the_slot_loses_nothing_and_doubles_nothing(filed):  # noqa: F811
    row = await due_watchlist()
    slot = now_slot()
    # What a process killed between the two steps leaves: the slot's brief recorded, the watchlist still due.
    await start_brief(row, scheduled_for=slot)
    assert (await Watchlist.objects.aget(pk=row.pk)).next_run_at == slot

    assert await fire_due() == 0

    assert await Brief.objects.filter(watchlist=row).acount() == 1
    assert (await Watchlist.objects.aget(pk=row.pk)).next_run_at > slot


@pytest.mark.django_db(transaction=True)
async def test_a_start_that_fails_before_recording_leaves_the_watchlist_due_for_the_next_look(filed, monkeypatch):  # noqa: F811
    row = await due_watchlist()
    slot = now_slot()

    async def database_away(*args, **kwargs):
        raise ConnectionError("the database is away")

    monkeypatch.setattr(brief_schedule, "start_brief", database_away)
    assert await fire_due() == 0
    assert (await Watchlist.objects.aget(pk=row.pk)).next_run_at == slot
    monkeypatch.undo()

    assert await fire_due() == 1
    assert [b.scheduled_for async for b in Brief.objects.filter(watchlist=row)] == [slot]


@pytest.mark.django_db(transaction=True)
async def test_a_slot_taken_again_by_hand_meets_the_unique_constraint_and_is_quietly_left(filed, caplog):  # noqa: F811
    row = await due_watchlist()
    slot = now_slot()
    assert await fire_due() == 1
    # As if the advance had been lost (a row restored from a copy): the database still refuses a second brief.
    await Watchlist.objects.filter(pk=row.pk).aupdate(next_run_at=slot)

    with caplog.at_level(logging.WARNING, logger="chat"):
        assert await fire_due() == 0

    assert await Brief.objects.filter(watchlist=row).acount() == 1
    assert [r for r in caplog.records if r.name.startswith("chat")] == []


@pytest.mark.django_db(transaction=True)
async def test_a_new_watchlist_gets_no_brief_until_its_first_firing(filed):  # noqa: F811
    row = await Watchlist.objects.acreate(
        session_key="scheduler-tests", name="New", symbols=["AAPL"], schedule="* * * * *", timezone="UTC",
        next_run_at=Schedule.parse("* * * * *", "UTC").next_after(datetime.now(UTC)),
    )  # fmt: skip

    assert await fire_due() == 0
    assert await fire_due(row.next_run_at - timedelta(microseconds=1)) == 0
    assert await Brief.objects.filter(watchlist=row).acount() == 0


# --- the loops --------------------------------------------------------------------------------------------


async def test_the_in_process_scheduler_survives_a_failing_look_and_stops_when_told(monkeypatch, caplog):
    looks = 0
    second_look = asyncio.Event()

    async def failing_then_counting() -> int:
        nonlocal looks
        looks += 1
        if looks == 1:
            raise RuntimeError("the database is away")
        second_look.set()
        return 0

    monkeypatch.setattr(brief_schedule, "fire_due", failing_then_counting)
    monkeypatch.setattr(brief_schedule, "deliver_due", nothing_due)
    scheduler = BriefScheduler(interval_s=0.01).start()
    await asyncio.wait_for(second_look.wait(), timeout=10)
    await scheduler.stop()

    assert "could not start the due briefs this tick" in caplog.text and "the database is away" in caplog.text
    stopped_at = looks
    await asyncio.sleep(0.05)
    assert looks == stopped_at


def test_the_workers_tick_is_a_periodic_task_every_briefs_tick_seconds():
    key = (queue.brief_tick.name, queue.BRIEF_TICK_ID)
    registry = queue.app.periodic_registry.periodic_tasks
    assert key not in registry
    try:
        queue.schedule_brief_ticks()
        queue.schedule_brief_ticks()  # a second call registers nothing more
        periodic = registry[key]
        assert periodic.configure_kwargs["queueing_lock"] == "chat.brief_tick"
        ticks = croniter(periodic.cron, datetime(2026, 11, 27, 7, 0, 3))
        assert [ticks.get_next(datetime).second for _ in range(7)] == [10, 20, 30, 40, 50, 0, 10]
    finally:
        registry.pop(key, None)


@pytest.mark.parametrize(
    ("scheduler", "backend", "runs_one"),
    [(True, "inprocess", True), (None, "inprocess", False), (False, "inprocess", False), (True, "queue", False)],
)
async def test_a_web_process_runs_the_scheduler_only_when_asked_and_answering_runs_itself(
    settings, monkeypatch, scheduler, backend, runs_one
):
    settings.BRIEFS_SCHEDULER, settings.RUNS_BACKEND = scheduler, backend
    monkeypatch.setattr(brief_schedule, "fire_due", nothing_due)
    monkeypatch.setattr(brief_schedule, "deliver_due", nothing_due)

    started = start_in_process_scheduler()

    assert (started is not None) == runs_one
    if started is not None:
        await started.stop()


@pytest.mark.parametrize(("scheduler", "fires"), [(None, True), (True, True), (False, False)])
def test_a_worker_fires_the_briefs_unless_told_not_to(settings, monkeypatch, scheduler, fires):
    settings.BRIEFS_SCHEDULER, settings.RUNS_BACKEND = scheduler, "queue"
    served: dict = {}

    async def serve(**options) -> None:
        served.update(options)

    monkeypatch.setattr(queue, "serve", serve)
    call_command("runworker")

    assert served["briefs"] is fires


async def nothing_due() -> int:
    return 0


@pytest.mark.django_db(transaction=True)
async def test_a_scheduled_brief_over_its_owners_run_limit_is_recorded_failed_with_the_limits_code(
    filed,  # noqa: F811
    fake_openai,
    settings,
):
    # On 2025-01-31 Apple's 8-K of the day before is new: a brief worth a run, which the owner has no room for.
    settings.CHAT_MAX_CONCURRENT_RUNS = 1
    user = await get_user_model().objects.acreate(username="busy-analyst")
    conversation = await Conversation.objects.acreate(user=user, title="busy")
    question = await Message.objects.acreate(conversation=conversation, role="user", content="Still answering?")
    await ResearchRun.objects.acreate(conversation=conversation, user_message=question)  # queued: in flight
    row = await Watchlist.objects.acreate(
        user=user, name="Apple", symbols=["AAPL"], schedule="0 12 * * *", timezone="UTC",
        next_run_at=at("2025-01-31T12:00Z"),
    )  # fmt: skip
    await Watchlist.objects.filter(pk=row.pk).aupdate(created_at=at("2025-01-01T00:00Z"))

    assert await fire_due(at("2025-01-31T12:00:05Z")) == 1

    brief = await Brief.objects.aget(watchlist=row)
    assert brief.scheduled_for == at("2025-01-31T12:00Z") and brief.until == at("2025-01-31T12:00:05Z")
    assert brief.status == Brief.Status.FAILED and brief.error["code"] == "too_many_runs"
    assert any(change["kind"] == "filing" for change in brief.changes)
    assert fake_openai.requests == []
    assert (await Watchlist.objects.aget(pk=row.pk)).next_run_at == at("2025-02-01T12:00Z")
