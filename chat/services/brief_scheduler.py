"""The in-process scheduler: a web process with `BRIEFS_SCHEDULER=1` (the embedded default, `make run`)
looks for due briefs and deliveries every BRIEFS_TICK seconds on its own event loop.

With `RUNS_BACKEND=queue` the workers fire the schedules instead, from the queue's periodic task
(chat.services.queue); a web process then runs no scheduler. Any number of processes may tick at once:
what each takes is decided in the database (chat.services.brief_schedule).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from django.conf import settings

from chat.services.brief_schedule import tick

logger = logging.getLogger(__name__)

# At shutdown, a look under way has this long to end (its briefs' rows are written in its first moments;
# what is cut short after that is a delivery attempt, which deliver_due takes up again).
STOP_GRACE_S = 5.0


class BriefScheduler:
    """Ticks on the running loop until `stop()`; a tick's failure is logged and the next one comes."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> BriefScheduler:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="brief-scheduler")
        return self

    async def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """Let the look under way end (at most `grace_s`), then stop."""
        self._stopping.set()
        if self._task is None:
            return
        _, pending = await asyncio.wait({self._task}, timeout=grace_s)
        for task in pending:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while not self._stopping.is_set():
            await tick()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=self.interval_s)


def start_in_process_scheduler() -> BriefScheduler | None:
    """The web process's scheduler, when BRIEFS_SCHEDULER=1 and runs are answered in-process."""
    if settings.BRIEFS_SCHEDULER is not True:
        return None
    if settings.RUNS_BACKEND == "queue":
        logger.info("BRIEFS_SCHEDULER=1: with RUNS_BACKEND=queue the workers fire the briefs, not this process")
        return None
    logger.info("Firing the watchlists' briefs from this process, every %s s", settings.BRIEFS_TICK)
    return BriefScheduler(settings.BRIEFS_TICK).start()
