"""Where runs execute, chosen by `RUNS_BACKEND`: in this process (the embedded default) or on queue
workers (`manage.py runworker`). Both execute the same `chat.services.runs.execute_run`.

With the queue, the job is deferred in the transaction that stores the question and its run: either all
three exist or none does, so a web process that dies right after answering 202 loses nothing.
"""

from __future__ import annotations

import asyncio
import uuid

from django.conf import settings

from chat.services import runs

# The event loop keeps only weak references to tasks: these keep in-process runs alive.
_local_tasks: set[asyncio.Task] = set()


class QueueUnavailable(Exception):
    """The run could not be handed to the queue (the database refused the job); nothing was stored."""


def enqueue_in_transaction(run_id: uuid.UUID) -> None:
    """Inside the transaction storing the run: defer its job (queue backend; nothing in-process)."""
    if settings.RUNS_BACKEND != "queue":
        return
    from chat.services.queue import defer_run

    try:
        defer_run(run_id)
    except Exception as exc:
        raise QueueUnavailable(str(exc)) from exc


def start_run(run_id: uuid.UUID) -> None:
    """After the run is stored, from the event loop: start answering it here (in-process backend)."""
    if settings.RUNS_BACKEND == "queue":
        return  # a worker has it already
    task = asyncio.get_running_loop().create_task(runs.execute_run(run_id), name=f"run-{run_id}")
    _local_tasks.add(task)
    task.add_done_callback(_local_tasks.discard)
