"""Answering a run: an attempt drives the research router, stores and publishes what it yields.

A run is answered by numbered attempts. `execute_run` takes the next attempt (refused while another live
process holds the run's lease), publishes an `attempt` event when it resumes an earlier one, and goes on
from the run's checkpoint (the plan and finished rounds the router reported) rather than asking again.
Every write of an attempt, an event or a row, is fenced by its number: once a newer attempt exists, or
the final event is out, a stale process changes nothing. A run always ends with exactly one `done` or
`error` event, written by the attempt that stores its outcome.

Where attempts execute is the runs backend's business (`chat.services.run_backends`); who holds a run is
`chat.services.leases`; what an attempt writes, and its fence, is `chat.services.attempts`.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from chat.db_calls import db_call
from chat.events import stored_events
from chat.models import ResearchRun
from chat.services import attempts, delivery, leases
from chat.services.attempts import (
    ATTEMPTS_EXHAUSTED,
    CANCELLED,
    INTERRUPTED,
    STORE_FAILED,
    Attempt,
    AttemptSuperseded,
    RunFailure,
    fail,
    take_attempt,
)
from datascraper.errors import ResearchError
from datascraper.research_engine import run_research
from datascraper.schemas import CheckpointEvent, DeltaEvent, ResearchEvent, RunSummary, SourcesEvent

logger = logging.getLogger(__name__)

DELTA_FLUSH_CHARS = 200
DELTA_FLUSH_SECONDS = 0.05

ResearchFn = Callable[..., AsyncIterator[ResearchEvent]]


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
            if not await db_call(attempts.save_checkpoint, attempt.run_id, attempt.n, event.state):
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
            if await db_call(attempts.requeue, attempt.run_id, attempt.n, "handed_over"):
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
            answer = await db_call(attempts.finish_done, attempt.run_id, attempt.n, outcome, deltas.text)
        except Exception:
            logger.exception("run %s: the answer could not be stored", attempt.run_id)
            await fail(attempt, STORE_FAILED, deltas.text, sources)
            return
        if answer is not None:
            data = {"message_id": str(answer.id), "run_id": str(attempt.run_id), "signals": outcome.signals}
            await attempt.publish("done", data, final=True)
            await delivery.deliver_run_brief(attempt.run_id)
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


async def cancel_run(run_id: uuid.UUID) -> bool:
    """Stop the run; False when it has already finished. It ends with one `cancelled` error event,
    published by the process answering it, or at once here when nobody is (any more)."""
    run = await db_call(attempts.request_cancel, run_id)
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
    return await db_call(attempts.requeue, run_id, None, "worker_lost")
