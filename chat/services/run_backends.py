"""Where runs execute, chosen by `RUNS_BACKEND`: in this process (the embedded default) or on queue
workers (`manage.py runworker`). Both execute the same `chat.services.runs.execute_run`."""

from __future__ import annotations

import asyncio
import uuid

from django.conf import settings

from chat.models import ResearchRun
from chat.services import runs

# The event loop keeps only weak references to tasks: these keep in-process runs alive.
_local_tasks: set[asyncio.Task] = set()


class QueueUnavailable(Exception):
    """The run could not be handed to the queue (the database refused the job)."""


QUEUE_FAILED = runs.RunFailure(ResearchRun.Status.ERROR, "queue_unavailable", "The run could not be queued.")


async def submit_run(run_id: uuid.UUID) -> None:
    """Start answering a stored run: a task on this event loop, or a job for the workers."""
    if settings.RUNS_BACKEND == "queue":
        from chat.services.queue import enqueue_run

        try:
            await enqueue_run(run_id)
        except Exception as exc:
            await runs.end_unanswered(run_id, QUEUE_FAILED)
            raise QueueUnavailable(str(exc)) from exc
        return
    task = asyncio.get_running_loop().create_task(runs.execute_run(run_id), name=f"run-{run_id}")
    _local_tasks.add(task)
    task.add_done_callback(_local_tasks.discard)
