"""Running a research run in the server process: drive the router, store and publish what it yields.

Posting a message returns 202 at once; `launch_run` starts `execute_run` as a background task on the
server's event loop. The run's events are published as they come (answer deltas coalesced, since each
stored event costs several queries), and the answer is stored whether or not anyone is listening.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.db import close_old_connections, transaction
from django.utils import timezone
from django_eventstream.storage import EventDoesNotExist

from chat.events import apublish, stored_events
from chat.models import Message, ResearchRun, run_channel
from chat.selectors import history_before
from datascraper.errors import ResearchError
from datascraper.research_engine import run_research
from datascraper.schemas import ChatTurn, DeltaEvent, ResearchEvent, ResearchQuery, RunSummary, SourcesEvent

logger = logging.getLogger(__name__)

DELTA_FLUSH_CHARS = 200
DELTA_FLUSH_SECONDS = 0.05
CANCEL_POLL_SECONDS = 1.0
HEARTBEAT_SECONDS = 10.0
# A run with no sign of life for this long lost its process (a restart, a crash): it will never finish.
ORPHANED_AFTER = timedelta(seconds=60)

ResearchFn = Callable[[ResearchQuery], AsyncIterator[ResearchEvent]]

# Runs this process answers. The event loop keeps only weak references to tasks, so these keep them
# alive; a cancel stops only the research task, never the bookkeeping that publishes the final event.
_tasks: dict[uuid.UUID, asyncio.Task] = {}
_research_tasks: dict[uuid.UUID, asyncio.Task] = {}


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
STORE_FAILED = RunFailure(ResearchRun.Status.ERROR, "internal_error", "The answer could not be stored.")


class DeltaCoalescer:
    """Batches answer text: the first delta goes out at once, later ones every 50 ms or 200 characters."""

    def __init__(self, channel: str) -> None:
        self.channel = channel
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
        await apublish(self.channel, "delta", {"text": pending})


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


@sync_to_async
def _start(run_id: uuid.UUID) -> ResearchQuery | None:
    """Mark a queued run running; None when it is not queued (already taken, or finished)."""
    with transaction.atomic():
        run = ResearchRun.objects.select_for_update().select_related("user_message").get(pk=run_id)
        if run.status != ResearchRun.Status.QUEUED:
            return None
        run.status = ResearchRun.Status.RUNNING
        run.started_at = run.heartbeat_at = timezone.now()
        run.save(update_fields=["status", "started_at", "heartbeat_at"])
    return _build_query(run)


@sync_to_async
def _is_cancel_requested(run_id: uuid.UUID) -> bool:
    return ResearchRun.objects.filter(pk=run_id, cancel_requested=True).exists()


@sync_to_async
def _beat(run_id: uuid.UUID) -> None:
    ResearchRun.objects.filter(pk=run_id).update(heartbeat_at=timezone.now())


@sync_to_async
@transaction.atomic
def _finish_done(run_id: uuid.UUID, summary: RunSummary, text: str) -> Message | None:
    """Store the answer; None when the run was already finished (reaped by another process)."""
    run = ResearchRun.objects.select_for_update().get(pk=run_id)
    if run.is_finished:
        return None
    answer = Message.objects.create(
        conversation_id=run.conversation_id,
        role=Message.Role.ASSISTANT,
        content=text,
        sources=[s.model_dump(mode="json") for s in summary.sources],
    )
    run.answer = answer
    run.status = ResearchRun.Status.DONE
    run.finished_at = timezone.now()
    _record_summary(run, summary)
    run.save()
    return answer


def _record_summary(run: ResearchRun, summary: RunSummary) -> None:
    run.mode = summary.mode
    run.plan = summary.plan
    run.rounds = summary.rounds
    run.timings = summary.timings
    run.usage = summary.usage.model_dump(mode="json")
    run.signals = summary.signals


@sync_to_async
@transaction.atomic
def _finish_failed(
    run_id: uuid.UUID, failure: RunFailure, text: str, sources: list[dict]
) -> tuple[bool, Message | None]:
    """Record the failure unless the run has already finished; a partial answer is kept, marked
    incomplete, so nothing streamed is lost. Returns whether this call finished the run, and the answer."""
    run = ResearchRun.objects.select_for_update().get(pk=run_id)
    if run.is_finished:
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
    run.answer = answer
    run.status = failure.status
    run.error = {"code": failure.code, "message": failure.message}
    run.finished_at = timezone.now()
    if failure.summary is not None:
        _record_summary(run, failure.summary)
    run.save()
    return True, answer


async def _fail(run_id: uuid.UUID, failure: RunFailure, text: str, sources: list[dict]) -> None:
    """Store the failure and publish the run's one `error` event."""
    finished_now, answer = await _finish_failed(run_id, failure, text, sources)
    if not finished_now:
        return
    data = {"code": failure.code, "message": failure.message}
    if answer is not None:
        data["message_id"] = str(answer.id)
    await apublish(run_channel(run_id), "error", data)


async def _watch(run_id: uuid.UUID, task: asyncio.Task) -> None:
    """While the run lasts: poll the cancel flag (a cancel request may land in another server process)
    and leave a heartbeat, by which a run whose process died is recognised as orphaned."""
    since_beat = 0.0
    while not task.done():
        await asyncio.sleep(CANCEL_POLL_SECONDS)
        if await _is_cancel_requested(run_id):
            task.cancel()
            return
        since_beat += CANCEL_POLL_SECONDS
        if since_beat >= HEARTBEAT_SECONDS:
            await _beat(run_id)
            since_beat = 0.0


async def _research(
    channel: str, query: ResearchQuery, research: ResearchFn, deltas: DeltaCoalescer, sources: list[dict]
) -> RunSummary:
    summary: RunSummary | None = None
    async for event in research(query):
        if isinstance(event, DeltaEvent):
            await deltas.add(event.text)
            continue
        await deltas.flush()
        if isinstance(event, RunSummary):
            summary = event
            continue
        if isinstance(event, SourcesEvent):
            sources[:] = [s.model_dump(mode="json") for s in event.sources]
        await apublish(channel, event.type, event.payload())
    await deltas.flush()
    if summary is None:
        raise ResearchError("The research ended without an answer.")
    return summary


async def execute_run(run_id: uuid.UUID, research: ResearchFn = run_research) -> None:
    """Answer one queued run to the end: exactly one `done` or `error` event is published."""
    try:
        await _execute(run_id, research)
    except Exception:
        logger.exception("run %s could not be answered", run_id)
    finally:
        # Outside a request nothing closes the worker thread's connection: do it once the run is over.
        await sync_to_async(close_old_connections)()


async def _execute(run_id: uuid.UUID, research: ResearchFn) -> None:
    query = await _start(run_id)
    if query is None:
        return
    channel = run_channel(run_id)
    deltas = DeltaCoalescer(channel)
    sources: list[dict] = []
    outcome: RunSummary | RunFailure
    if await _is_cancel_requested(run_id):
        outcome = CANCELLED
    else:
        work = asyncio.create_task(_research(channel, query, research, deltas, sources), name=f"research-{run_id}")
        _research_tasks[run_id] = work
        watcher = asyncio.create_task(_watch(run_id, work))
        try:
            outcome = await work
        except asyncio.CancelledError:
            # A cancel request, or the server shutting down (which cancels this task, and so the work).
            outcome = CANCELLED if await _is_cancel_requested(run_id) else INTERRUPTED
        except ResearchError as exc:
            outcome = RunFailure(ResearchRun.Status.ERROR, exc.code, exc.message, exc.summary)
        except Exception:
            logger.exception("run %s failed unexpectedly", run_id)
            outcome = RunFailure(ResearchRun.Status.ERROR, "internal_error", "The run failed unexpectedly.")
        finally:
            watcher.cancel()
            _research_tasks.pop(run_id, None)
    # Shielded: a shutdown arriving now must not lose the final event of a run that is already answered.
    await asyncio.shield(_conclude(run_id, outcome, deltas, sources))


async def _conclude(
    run_id: uuid.UUID, outcome: RunSummary | RunFailure, deltas: DeltaCoalescer, sources: list[dict]
) -> None:
    await deltas.flush()
    if isinstance(outcome, RunFailure):
        await _fail(run_id, outcome, deltas.text, sources)
        return
    try:
        answer = await _finish_done(run_id, outcome, deltas.text)
    except Exception:
        logger.exception("run %s: the answer could not be stored", run_id)
        await _fail(run_id, STORE_FAILED, deltas.text, sources)
        return
    if answer is not None:
        data = {"message_id": str(answer.id), "run_id": str(run_id), "signals": outcome.signals}
        await apublish(run_channel(run_id), "done", data)


def launch_run(run_id: uuid.UUID) -> asyncio.Task:
    """Start answering in the background of the running event loop (the ASGI server's)."""
    task = asyncio.get_running_loop().create_task(execute_run(run_id), name=f"run-{run_id}")
    _tasks[run_id] = task
    task.add_done_callback(lambda _: _tasks.pop(run_id, None))
    return task


@sync_to_async
def request_cancel(run: ResearchRun) -> bool:
    """Flag the run for cancellation; False when it has already finished."""
    updated = ResearchRun.objects.filter(pk=run.pk).exclude(status__in=ResearchRun.FINISHED).update(cancel_requested=True)
    return bool(updated)


@sync_to_async
def _orphan_evidence(run_id: uuid.UUID) -> tuple[str, list[dict]] | None:
    """The partial answer of an orphaned run, rebuilt from its stored events; None if it is not orphaned."""
    run = ResearchRun.objects.filter(pk=run_id).first()
    if run is None or run.is_finished or run_id in _tasks:
        return None
    if timezone.now() - (run.heartbeat_at or run.created_at) <= ORPHANED_AFTER:
        return None
    text, sources = [], []
    try:
        events = stored_events(run.channel)
    except EventDoesNotExist:  # trimmed after 24 hours: nothing left to keep
        events = []
    for event in events:
        if event.type == "delta":
            text.append(event.data["text"])
        elif event.type == "sources":
            sources = event.data["sources"]
    return "".join(text), sources


async def reap_if_orphaned(run_id: uuid.UUID, failure: RunFailure = INTERRUPTED) -> bool:
    """End a run whose process died (it stays `running` forever otherwise) with `failure`, keeping what
    it had streamed. Called when someone looks at the run; True when it was reaped."""
    evidence = await _orphan_evidence(run_id)
    if evidence is None:
        return False
    text, sources = evidence
    await _fail(run_id, failure, text, sources)
    return True


async def cancel_run(run: ResearchRun) -> bool:
    """Ask the run to stop; False when it has already finished. The run itself publishes the `error`."""
    if not await request_cancel(run):
        return False
    work = _research_tasks.get(run.id)
    if work is not None:
        work.cancel()
    elif run.id not in _tasks:
        # Answered by another process, which sees the flag within a second, or by none any more.
        await reap_if_orphaned(run.id, CANCELLED)
    return True
