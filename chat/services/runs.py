"""Answering a run: an attempt drives the research router, stores and publishes what it yields.

A run is answered by numbered attempts. `execute_run` takes the next attempt (refused while another live
process holds the run's lease), publishes an `attempt` event when it resumes an earlier one, and goes on
from the run's checkpoint (the plan and finished rounds the router reported) rather than asking again.
Every write of an attempt, an event or a row, is fenced by its number: once a newer attempt exists, or
the final event is out, a stale process changes nothing. A run always ends with exactly one `done` or
`error` event, written by the attempt that stores its outcome.

Where attempts execute is the runs backend's business (`chat.services.run_backends`); who holds a run is
`chat.services.leases`.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chat.db_calls import db_call
from chat.event_store import get_event_store
from chat.events import EventRejected, publish, stored_events
from chat.models import Message, ResearchRun
from chat.selectors import history_before
from chat.services import leases
from datascraper.errors import ResearchError
from datascraper.research_engine import run_research
from datascraper.schemas import (
    ChatTurn,
    CheckpointEvent,
    DeltaEvent,
    ResearchEvent,
    ResearchQuery,
    RunSummary,
    SourcesEvent,
)

logger = logging.getLogger(__name__)

DELTA_FLUSH_CHARS = 200
DELTA_FLUSH_SECONDS = 0.05

ResearchFn = Callable[..., AsyncIterator[ResearchEvent]]


@dataclass(frozen=True)
class RunFailure:
    status: str
    code: str
    message: str
    summary: RunSummary | None = None  # what the failed research cost and did, when the router said


CANCELLED = RunFailure(ResearchRun.Status.CANCELLED, "cancelled", "The run was cancelled.")
INTERRUPTED = RunFailure(
    ResearchRun.Status.ERROR, "interrupted", "The server stopped while answering; please ask again."
)
ATTEMPTS_EXHAUSTED = RunFailure(
    ResearchRun.Status.ERROR, "interrupted", "The run was interrupted too many times; please ask again."
)
STORE_FAILED = RunFailure(ResearchRun.Status.ERROR, "internal_error", "The answer could not be stored.")


class AttemptSuperseded(Exception):
    """A newer attempt answers the run (or it has ended): this one stops without another write."""


@dataclass(frozen=True)
class Attempt:
    """One attempt at a run, and what it starts from."""

    run_id: uuid.UUID
    n: int
    query: ResearchQuery
    checkpoint: dict
    resumed_because: str | None  # None for a first attempt
    cancel_requested: bool

    @property
    def exhausted(self) -> bool:
        return self.resumed_because is not None and self.n > settings.RUNS_MAX_ATTEMPTS

    async def publish(self, event_type: str, data: dict, *, final: bool = False) -> None:
        try:
            await publish(self.run_id, self.n, event_type, data, final=final)
        except EventRejected as exc:
            raise AttemptSuperseded(str(exc)) from None


class DeltaCoalescer:
    """Batches answer text: the first delta goes out at once, later ones every 50 ms or 200 characters."""

    def __init__(self, attempt: Attempt) -> None:
        self.attempt = attempt
        self.text = ""
        self._pending = ""
        self._last_flush = 0.0
        self._sent_any = False

    async def add(self, text: str) -> None:
        self.text += text
        self._pending += text
        due = time.monotonic() - self._last_flush >= DELTA_FLUSH_SECONDS
        if not self._sent_any or due or len(self._pending) >= DELTA_FLUSH_CHARS:
            await self.flush()

    async def flush(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, ""
        self._last_flush = time.monotonic()
        self._sent_any = True
        await self.attempt.publish("delta", {"text": pending})


# --- taking an attempt -------------------------------------------------------------------------------


def _build_query(run: ResearchRun) -> ResearchQuery:
    history = [
        ChatTurn(role=m.role, content=m.content)
        for m in history_before(run.user_message)
        if m.role in (Message.Role.USER, Message.Role.ASSISTANT)
    ]
    return ResearchQuery(
        question=run.user_message.content,
        mode=run.requested_mode,
        history=history,
        timezone=run.timezone or None,
    )


def _is_answered_elsewhere(run: ResearchRun, owner: str) -> bool:
    """Another live process holds the run's lease."""
    return run.lease_owner != owner and run.lease_expires_at is not None and run.lease_expires_at > timezone.now()


def _take_attempt(run_id: uuid.UUID, owner: str, *, force: bool = False) -> Attempt | None:
    """Give the run its next attempt, held by `owner`; None when it has ended, or when a live process
    holds it (unless `force`: its owner is known to be gone). Fences out every earlier attempt."""
    with transaction.atomic():
        run = ResearchRun.objects.select_for_update().select_related("user_message").get(pk=run_id)
        if run.is_finished or (_is_answered_elsewhere(run, owner) and not force):
            return None
        resumed_because = None
        if run.attempt:
            resumed_because = run.checkpoint.get("requeued_because") or "worker_lost"
        run.attempt += 1
        run.status = ResearchRun.Status.RUNNING
        run.started_at = run.started_at or timezone.now()
        run.lease_owner = owner
        run.lease_expires_at = leases.lease_deadline()
        run.save(update_fields=["attempt", "status", "started_at", "lease_owner", "lease_expires_at"])
    return Attempt(
        run_id=run.pk,
        n=run.attempt,
        query=_build_query(run),
        checkpoint={k: v for k, v in run.checkpoint.items() if k != "requeued_because"},
        resumed_because=resumed_because,
        cancel_requested=run.cancel_requested,
    )


async def take_attempt(run_id: uuid.UUID, owner: str, *, force: bool = False) -> Attempt | None:
    attempt = await db_call(_take_attempt, run_id, owner, force=force)
    if attempt is not None:
        await get_event_store().open_attempt(run_id, attempt.n)
    return attempt


# --- fenced writes -----------------------------------------------------------------------------------


def _fenced(run_id: uuid.UUID, n: int) -> ResearchRun | None:
    """The run, locked, if attempt `n` still answers it."""
    run = ResearchRun.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.is_finished or run.attempt != n:
        return None
    return run


@transaction.atomic
def _save_checkpoint(run_id: uuid.UUID, n: int, state: dict) -> bool:
    return bool(
        ResearchRun.objects.filter(pk=run_id, attempt=n)
        .exclude(status__in=ResearchRun.FINISHED)
        .update(checkpoint=state)
    )


@transaction.atomic
def _finish_done(run_id: uuid.UUID, n: int, summary: RunSummary, text: str) -> Message | None:
    """Store the answer; None when attempt `n` no longer answers the run."""
    run = _fenced(run_id, n)
    if run is None:
        return None
    answer = Message.objects.create(
        conversation_id=run.conversation_id,
        role=Message.Role.ASSISTANT,
        content=text,
        sources=[s.model_dump(mode="json") for s in summary.sources],
    )
    _close(run, ResearchRun.Status.DONE, answer, summary)
    return answer


def _close(
    run: ResearchRun, status: str, answer: Message | None, summary: RunSummary | None, error: dict | None = None
) -> None:
    """The run's final row: its outcome, and what the router reported it did and cost."""
    run.answer = answer
    run.status = status
    run.error = error
    run.finished_at = timezone.now()
    run.lease_expires_at = None
    if summary is not None:
        run.mode = summary.mode
        run.plan = summary.plan
        run.rounds = summary.rounds
        run.timings = summary.timings
        run.usage = summary.usage.model_dump(mode="json")
        run.signals = summary.signals
        run.facts = [fact.model_dump(mode="json") for fact in summary.facts]
        run.charts = [chart.payload() for chart in summary.charts]
        run.confidence = summary.confidence.model_dump(mode="json") if summary.confidence is not None else {}
        run.trace = [entry.model_dump(mode="json") for entry in summary.trace]
        run.verification = [check.model_dump(mode="json") for check in summary.verification]
    run.save()


@transaction.atomic
def _finish_failed(
    run_id: uuid.UUID, n: int, failure: RunFailure, text: str, sources: list[dict]
) -> tuple[bool, Message | None]:
    """Record the failure if attempt `n` still answers the run; a partial answer is kept, marked
    incomplete, so nothing streamed is lost. Returns whether this call finished the run, and the answer."""
    run = _fenced(run_id, n)
    if run is None:
        return False, None
    answer = None
    if text.strip():
        answer = Message.objects.create(
            conversation_id=run.conversation_id,
            role=Message.Role.ASSISTANT,
            content=text,
            sources=sources,
            status=Message.Status.INCOMPLETE,
        )
    _close(run, failure.status, answer, failure.summary, {"code": failure.code, "message": failure.message})
    return True, answer


@transaction.atomic
def _requeue(run_id: uuid.UUID, n: int | None, because: str) -> bool:
    """Put the run back in the queue for another attempt: attempt `n` hands it over (`n` None: the
    sweeper, for a run whose lease expired). Its checkpoint is kept."""
    run = ResearchRun.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.is_finished or (n is not None and run.attempt != n):
        return False
    if n is None and (run.lease_expires_at is None or run.lease_expires_at > timezone.now()):
        return False
    run.status = ResearchRun.Status.QUEUED
    run.lease_owner = ""
    run.lease_expires_at = None
    run.checkpoint = {**run.checkpoint, "requeued_because": because}
    run.save(update_fields=["status", "lease_owner", "lease_expires_at", "checkpoint"])
    return True


async def fail(attempt: Attempt, failure: RunFailure, text: str, sources: list[dict]) -> None:
    """Store the failure and publish the run's one `error` event."""
    finished_now, answer = await db_call(_finish_failed, attempt.run_id, attempt.n, failure, text, sources)
    if not finished_now:
        return
    data = {"code": failure.code, "message": failure.message}
    if answer is not None:
        data["message_id"] = str(answer.id)
    await attempt.publish("error", data, final=True)


# --- executing an attempt ----------------------------------------------------------------------------


async def _research(
    attempt: Attempt, handle: leases.RunHandle, research: ResearchFn, deltas: DeltaCoalescer, sources: list[dict]
) -> RunSummary:
    summary: RunSummary | None = None
    async for event in research(attempt.query, resume_from=attempt.checkpoint or None):
        if handle.stop_cause is not None:
            # Checked here too, not only left to the task's cancellation: a cancel landing inside the publish
            # path was seen lost (about one hand-over in three), so the run went on to the end.
            raise asyncio.CancelledError
        if isinstance(event, DeltaEvent):
            await deltas.add(event.text)
            continue
        await deltas.flush()
        if isinstance(event, RunSummary):
            summary = event
            continue
        if isinstance(event, CheckpointEvent):
            if not await db_call(_save_checkpoint, attempt.run_id, attempt.n, event.state):
                raise AttemptSuperseded("the run has a newer attempt")
            continue
        if isinstance(event, SourcesEvent):
            sources[:] = [s.model_dump(mode="json") for s in event.sources]
        await attempt.publish(event.type, event.payload())
    await deltas.flush()
    if summary is None:
        raise ResearchError("The research ended without an answer.")
    return summary


async def execute_run(
    run_id: uuid.UUID, research: ResearchFn = run_research, *, hand_over: Callable | None = None
) -> None:
    """Answer the run with a new attempt of this process, to the end or until it is stopped.

    Stopped by a cancel, the run ends `cancelled`; by this process's shutdown, it is handed over with
    `hand_over(run_id)` (the queue backend: another worker resumes it) or, without one, ends `interrupted`.
    """
    if leases.local_handle(run_id) is not None:
        return  # already being answered here (a duplicate job)
    handle = await leases.register(run_id)
    handle.task = asyncio.current_task()
    try:
        attempt = await take_attempt(run_id, leases.OWNER)
        if attempt is None:
            return
        await _execute(attempt, handle, research, hand_over)
    except asyncio.CancelledError:
        # Stopped before the research began: a cancel still ends the run; a shutdown leaves it to the
        # lease's expiry (resumed by a worker, or reaped as interrupted).
        if handle.stop_cause == "cancel":
            await asyncio.shield(end_unanswered(run_id, CANCELLED, owner_gone=True))
        raise
    except AttemptSuperseded as exc:
        logger.warning("run %s: attempt stopped, superseded (%s)", run_id, exc)
    except Exception:
        logger.exception("run %s could not be answered", run_id)
    finally:
        leases.unregister(run_id)


async def _execute(
    attempt: Attempt, handle: leases.RunHandle, research: ResearchFn, hand_over: Callable | None
) -> None:
    if attempt.exhausted:
        await fail(attempt, ATTEMPTS_EXHAUSTED, "", [])
        return
    if attempt.cancel_requested:
        await fail(attempt, CANCELLED, "", [])
        return
    if attempt.resumed_because is not None:
        # Clients discard the answer text they got before this event: the answer is written again.
        await attempt.publish("attempt", {"n": attempt.n, "reason": attempt.resumed_because})
    deltas = DeltaCoalescer(attempt)
    sources: list[dict] = []
    outcome: RunSummary | RunFailure
    work = asyncio.create_task(_research(attempt, handle, research, deltas, sources), name=f"research-{attempt.run_id}")
    try:
        outcome = await work
    except asyncio.CancelledError:
        work.cancel()
        await asyncio.gather(work, return_exceptions=True)
        if handle.stop_cause == "hand_over" and hand_over is not None:
            if await db_call(_requeue, attempt.run_id, attempt.n, "handed_over"):
                await hand_over(attempt.run_id)
            return
        outcome = CANCELLED if handle.stop_cause == "cancel" or await _cancel_requested(attempt.run_id) else INTERRUPTED
    except AttemptSuperseded:
        raise
    except ResearchError as exc:
        outcome = RunFailure(ResearchRun.Status.ERROR, exc.code, exc.message, exc.summary)
    except Exception:
        logger.exception("run %s failed unexpectedly", attempt.run_id)
        outcome = RunFailure(ResearchRun.Status.ERROR, "internal_error", "The run failed unexpectedly.")
    # The outcome is decided: a cancel arriving now changes nothing, and a shutdown (shielded against)
    # must not lose the final event of a run that is already answered.
    handle.task = None
    await asyncio.shield(_conclude(attempt, outcome, deltas, sources))


async def _cancel_requested(run_id: uuid.UUID) -> bool:
    return await db_call(lambda: ResearchRun.objects.filter(pk=run_id, cancel_requested=True).exists())


async def _conclude(
    attempt: Attempt, outcome: RunSummary | RunFailure, deltas: DeltaCoalescer, sources: list[dict]
) -> None:
    try:
        await deltas.flush()
        if isinstance(outcome, RunFailure):
            await fail(attempt, outcome, deltas.text, sources)
            return
        try:
            answer = await db_call(_finish_done, attempt.run_id, attempt.n, outcome, deltas.text)
        except Exception:
            logger.exception("run %s: the answer could not be stored", attempt.run_id)
            await fail(attempt, STORE_FAILED, deltas.text, sources)
            return
        if answer is not None:
            data = {"message_id": str(answer.id), "run_id": str(attempt.run_id), "signals": outcome.signals}
            await attempt.publish("done", data, final=True)
    except AttemptSuperseded as exc:
        logger.warning("run %s: attempt %s superseded while concluding (%s)", attempt.run_id, attempt.n, exc)


# --- ending runs nobody answers ----------------------------------------------------------------------


async def partial_answer(run_id: uuid.UUID) -> tuple[str, list[dict]]:
    """The answer text and sources the run's latest attempt had streamed, rebuilt from its events."""
    text: list[str] = []
    sources: list[dict] = []
    for event in await stored_events(run_id):
        if event.type == "attempt":
            text, sources = [], []
        elif event.type == "delta":
            text.append(event.data["text"])
        elif event.type == "sources":
            sources = event.data["sources"]
    return "".join(text), sources


async def end_unanswered(run_id: uuid.UUID, failure: RunFailure, *, owner_gone: bool = False) -> bool:
    """End a run no live process answers (a queued run, or one whose lease expired; `owner_gone`: its
    lease holder is known to be dead) with `failure`, keeping what it had streamed. True when ended."""
    attempt = await take_attempt(run_id, f"{leases.OWNER}:takeover", force=owner_gone)
    if attempt is None:
        return False
    text, sources = await partial_answer(run_id)
    try:
        await fail(attempt, failure, text, sources)
    except AttemptSuperseded:
        return False
    return True


async def reap_if_orphaned(run_id: uuid.UUID) -> bool:
    """In-process runs: end a run whose process died (it stays `running` forever otherwise) as
    `interrupted`, keeping what it streamed. Called when someone looks at the run; True when reaped.
    With the queue backend, workers resume such runs instead."""
    if settings.RUNS_BACKEND != "inprocess" or leases.local_handle(run_id) is not None:
        return False
    run = await db_call(
        lambda: ResearchRun.objects.filter(pk=run_id).only("status", "lease_expires_at", "created_at").first()
    )
    if run is None or run.is_finished:
        return False
    silent_since = run.lease_expires_at or run.created_at + timedelta(seconds=leases.LEASE_SECONDS)
    if silent_since > timezone.now():
        return False
    return await end_unanswered(run_id, INTERRUPTED)


@transaction.atomic
def _request_cancel(run_id: uuid.UUID) -> ResearchRun | None:
    """Flag the run for cancellation; None when it has already finished."""
    run = ResearchRun.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.is_finished:
        return None
    run.cancel_requested = True
    run.save(update_fields=["cancel_requested"])
    return run


async def cancel_run(run_id: uuid.UUID) -> bool:
    """Stop the run; False when it has already finished. It ends with one `cancelled` error event,
    published by the process answering it, or at once here when nobody is (any more)."""
    run = await db_call(_request_cancel, run_id)
    if run is None:
        return False
    handle = leases.local_handle(run_id)
    if handle is not None:
        handle.stop("cancel")
        return True
    if await end_unanswered(run_id, CANCELLED):
        return True
    if not await leases.send_cancel(run.lease_owner, run_id) and settings.REDIS_URL:
        # Nobody listens on the owner's channel: its process is gone, though its lease has not expired.
        await end_unanswered(run_id, CANCELLED, owner_gone=True)
    return True


async def requeue_lost(run_id: uuid.UUID) -> bool:
    """The sweeper's part: a run whose lease expired goes back to the queue (True), unless it is over."""
    return await db_call(_requeue, run_id, None, "worker_lost")
