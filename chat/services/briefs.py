"""Starting a watchlist's brief: its window recorded, what changed found by the data tools, then either the
answer "Nothing material changed since ..." (no model call, no run) or one research run that writes it.

`start_brief` is what the API, `manage.py brief` and the scheduler call. A scheduled brief names its slot:
a second start of the same slot (another process, a retry) hits the database's unique constraint and is
refused with `BriefSlotTaken`, before anything is asked of the data tools. The run is an ordinary research
run of the watchlist's owner, in a conversation of its own: the same events, checked citations and
confidence, counted toward the owner's limits (over them, the brief is recorded `failed` with the limit's
code). It starts from the changes as its findings (`datascraper.briefs.research`); when it ends, its brief
ends with it (`chat.services.brief_outcomes`, from whichever process concludes it).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from chat.callers import Caller
from chat.db_calls import db_call
from chat.models import Brief, Conversation, Message, ResearchRun, Watchlist
from chat.services.admission import AdmissionRefused, admit_unrequested_run
from chat.services.brief_outcomes import finish_brief
from chat.services.delivery import deliver_in_background
from chat.services.run_backends import QueueUnavailable, enqueue_in_transaction, start_run
from datascraper.briefs.detect import detect_changes
from datascraper.briefs.research import (
    brief_checkpoint,
    brief_question,
    left_out_text,
    nothing_material,
    within_budget,
)
from datascraper.briefs.schemas import BriefWindow, DetectedChanges
from datascraper.models_config import get_research_config
from datascraper.research_engine.state import today_in

logger = logging.getLogger(__name__)

FIRST_WINDOW = timedelta(hours=24)
# Earlier briefs whose changes are not reported again: a filing dated on the day two windows share.
REPORTED_LOOKBACK = timedelta(days=30)
# A brief still without its run this long after it started was left by a process that stopped while
# checking (the checks are bounded well within it): the watchlist's next brief ends it `failed`.
CHECKS_ABANDONED_AFTER = timedelta(minutes=30)
# The owner's limits a brief's run can meet (chat.services.admission): the brief is recorded failed with one.
LIMIT_CODES = frozenset({"too_many_runs", "rate_limited"})


class BriefSlotTaken(Exception):
    """This watchlist already has a brief for this scheduled slot: the other start goes on, nothing was done."""


@dataclass(frozen=True)
class _Started:
    brief: Brief
    window: BriefWindow


async def start_brief(
    watchlist: Watchlist, *, scheduled_for: datetime | None = None, until: datetime | None = None
) -> Brief:
    """Record the brief of `watchlist` from the end of its last brief (the last 24 hours for its first) to
    `until` (now), find what changed, and answer it or start the run that writes it. Returns the brief:
    `running` with its run, or already `done` (nothing material) or `failed`.

    Raises BriefSlotTaken when `scheduled_for` has its brief already.
    """
    started = await db_call(_record, watchlist, scheduled_for, until or timezone.now())
    brief = started.brief
    try:
        detected = await detect_changes(watchlist.symbols, started.window)
    except Exception:
        logger.exception("brief %s: the changes could not be found", brief.pk)
        error = {"code": "internal_error", "message": "The changes could not be found."}
        await db_call(finish_brief, brief.pk, Brief.Status.FAILED, error=error)
        return await _reloaded(brief)
    brief.changes = [change.model_dump(mode="json") for change in detected.changes]
    await db_call(Brief.objects.filter(pk=brief.pk).update, changes=brief.changes)
    if not detected.material:
        answer = nothing_material(started.window.since, detected)
        await db_call(finish_brief, brief.pk, Brief.Status.DONE, answer=answer)
        deliver_in_background(brief.pk)
        return await _reloaded(brief)
    try:
        await admit_unrequested_run(watchlist_owner(watchlist))
        run = await db_call(_store_run, brief, watchlist, started.window, detected)
    except AdmissionRefused as exc:
        await db_call(finish_brief, brief.pk, Brief.Status.FAILED, error={"code": exc.code, "message": exc.message})
        return await _reloaded(brief)
    except QueueUnavailable:
        error = {"code": "queue_unavailable", "message": "The brief's run could not be queued."}
        await db_call(finish_brief, brief.pk, Brief.Status.FAILED, error=error)
        return await _reloaded(brief)
    start_run(run.pk)
    return await _reloaded(brief)


def _record(watchlist: Watchlist, scheduled_for: datetime | None, until: datetime) -> _Started:
    """The brief's row, its window following the last finished brief's; BriefSlotTaken for a taken slot.

    What a brief still being written found counts as reported too (a slow run, a frequent schedule): a
    window that overlaps it does not report the same change twice. A failed brief's changes are not.
    """
    _end_abandoned(watchlist)
    earlier = Brief.objects.filter(watchlist=watchlist, until__lte=until)
    previous = earlier.filter(status=Brief.Status.DONE).order_by("-until").first()
    since = previous.until if previous is not None else until - FIRST_WINDOW
    recent = earlier.exclude(status=Brief.Status.FAILED).filter(until__gte=since - REPORTED_LOOKBACK)
    reported = {change["key"] for changes in recent.values_list("changes", flat=True) for change in changes}
    try:
        with transaction.atomic():
            brief = Brief.objects.create(watchlist=watchlist, scheduled_for=scheduled_for, since=since, until=until)
    except IntegrityError:
        if (
            scheduled_for is not None
            and Brief.objects.filter(watchlist=watchlist, scheduled_for=scheduled_for).exists()
        ):
            raise BriefSlotTaken(f"watchlist {watchlist.pk} has its brief for {scheduled_for.isoformat()}") from None
        raise
    window = BriefWindow(
        since=since,
        until=until,
        first=previous is None,
        reported=frozenset(reported),
        price_move_pct=settings.BRIEFS_PRICE_MOVE_PCT,
    )
    return _Started(brief, window)


def _end_abandoned(watchlist: Watchlist) -> None:
    """End, `failed`, the watchlist's briefs left without a run by a process that stopped while checking."""
    abandoned = Brief.objects.filter(
        watchlist=watchlist,
        status=Brief.Status.RUNNING,
        run__isnull=True,
        created_at__lt=timezone.now() - CHECKS_ABANDONED_AFTER,
    )
    error = {"code": "interrupted", "message": "The server stopped while the changes were being checked."}
    for brief_id in abandoned.values_list("pk", flat=True):
        finish_brief(brief_id, Brief.Status.FAILED, error=error)


@transaction.atomic
def _store_run(brief: Brief, watchlist: Watchlist, window: BriefWindow, detected: DetectedChanges) -> ResearchRun:
    """The brief's question and its run, in a conversation of their own, with the changes as its findings."""
    fitted, left_out = within_budget(detected, settings.BRIEFS_MAX_TOKENS or None)
    question = brief_question(watchlist.name, watchlist.symbols, window, fitted) + left_out_text(left_out)
    checkpoint = brief_checkpoint(fitted, today=today_in(watchlist.timezone), config=get_research_config())
    owner = watchlist_owner(watchlist)
    conversation = Conversation.objects.create(
        title=f"{watchlist.name}: brief of {window.until.date().isoformat()}", **owner.owner_fields()
    )
    message = Message.objects.create(conversation=conversation, role=Message.Role.USER, content=question)
    run = ResearchRun.objects.create(
        conversation=conversation,
        user_message=message,
        requested_mode=ResearchRun.Mode.RESEARCH,
        timezone=watchlist.timezone,
        checkpoint=checkpoint,
        signals={"brief_id": str(brief.pk)},
    )
    Brief.objects.filter(pk=brief.pk).update(run=run)
    enqueue_in_transaction(run.pk)
    return run


async def _reloaded(brief: Brief) -> Brief:
    return await db_call(Brief.objects.get, pk=brief.pk)


def watchlist_owner(watchlist: Watchlist) -> Caller:
    """The watchlist's owner, as the one a request of theirs would be: whose limits a brief counts toward."""
    return Caller(user_id=watchlist.user_id, session_key=watchlist.session_key)
