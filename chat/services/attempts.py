"""An attempt at a run, and everything it writes: taking the next attempt, then each row and event, fenced
by the attempt's number. Once a newer attempt exists, or the final event is out, a stale process (frozen, cut
off) changes nothing. The row writes are synchronous, each one short transaction; `chat.services.runs`, which
executes attempts, calls them through `db_call`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chat.db_calls import db_call
from chat.event_store import get_event_store
from chat.events import EventRejected, publish
from chat.models import Message, ResearchRun
from chat.selectors import history_before
from chat.services import leases
from chat.services.brief_outcomes import record_run_outcome
from datascraper.schemas import ChatTurn, ResearchQuery, RunSummary


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
def save_checkpoint(run_id: uuid.UUID, n: int, state: dict) -> bool:
    return bool(
        ResearchRun.objects.filter(pk=run_id, attempt=n)
        .exclude(status__in=ResearchRun.FINISHED)
        .update(checkpoint=state)
    )


@transaction.atomic
def finish_done(run_id: uuid.UUID, n: int, summary: RunSummary, text: str) -> Message | None:
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
        run.signals = {**run.signals, **summary.signals}  # beside what was known at the start (/v1's history)
        run.facts = [fact.model_dump(mode="json") for fact in summary.facts]
        run.charts = [chart.payload() for chart in summary.charts]
        run.confidence = summary.confidence.model_dump(mode="json") if summary.confidence is not None else {}
        run.trace = [entry.model_dump(mode="json") for entry in summary.trace]
        run.verification = [check.model_dump(mode="json") for check in summary.verification]
    run.save()
    record_run_outcome(run)


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
def requeue(run_id: uuid.UUID, n: int | None, because: str) -> bool:
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


@transaction.atomic
def request_cancel(run_id: uuid.UUID) -> ResearchRun | None:
    """Flag the run for cancellation; None when it has already finished."""
    run = ResearchRun.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.is_finished:
        return None
    run.cancel_requested = True
    run.save(update_fields=["cancel_requested"])
    return run
