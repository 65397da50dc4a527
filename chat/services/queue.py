"""Runs on a queue engine: procrastinate, on the PostgreSQL we already run (RUNS_BACKEND=queue).

Web processes defer one job per run; `manage.py runworker` processes execute many at once, each job
being `execute_run` on the worker's event loop. procrastinate brings the queue, LISTEN/NOTIFY wake-ups,
worker heartbeats and a graceful stop; on top of it:
- the sweeper: every `SWEEP_SECONDS`, runs whose lease expired (their worker died) go back to the queue
  and are resumed from their checkpoint by whichever worker fetches them; the jobs of dead workers are
  closed as failed;
- the drain: SIGTERM stops fetching; runs still going after `RUNS_SHUTDOWN_GRACE` are handed over (put
  back in the queue, for another worker to resume);
- the briefs' tick (unless `BRIEFS_SCHEDULER=0`): a periodic task every BRIEFS_TICK seconds. Every worker's
  deferrer offers each tick, procrastinate's table of periodic defers takes it once, and one worker runs
  it: the due briefs started, the due deliveries tried (chat.services.brief_schedule).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import uuid

from django.conf import settings
from django.utils import timezone
from procrastinate import exceptions as procrastinate_errors
from procrastinate import jobs as procrastinate_jobs
from procrastinate.contrib.django import app

from chat.db_calls import db_call
from chat.models import ResearchRun
from chat.services import brief_schedule, leases, runs
from datascraper.providers.lifecycle import start_model_check
from datascraper.providers.warm_up import warm_up_models
from datascraper.research_engine.data.market_data_client import start_market_data

logger = logging.getLogger(__name__)

QUEUE = "runs"
SWEEP_SECONDS = leases.LEASE_SECONDS / 3
HEARTBEAT_SECONDS = leases.LEASE_SECONDS / 3
STALLED_WORKER_SECONDS = leases.LEASE_SECONDS
# After the grace period, handed-over runs have this long to store their hand-over.
HAND_OVER_SECONDS = 10.0


@app.task(name="chat.answer_run", queue=QUEUE)
async def answer_run(run_id: str) -> None:
    await runs.execute_run(uuid.UUID(run_id), hand_over=enqueue_run)


async def enqueue_run(run_id: uuid.UUID) -> None:
    """Defer the run's job, unless one is already waiting (the queueing lock makes this idempotent)."""
    try:
        await answer_run.configure(queueing_lock=str(run_id)).defer_async(run_id=str(run_id))
    except procrastinate_errors.AlreadyEnqueued:
        pass


@app.task(name="chat.brief_tick", queue=QUEUE)
async def brief_tick(timestamp: int) -> None:
    """One look at the due briefs and deliveries, for the periodic deferrer's `timestamp`."""
    await brief_schedule.tick()


BRIEF_TICK_ID = "briefs"


def schedule_brief_ticks() -> None:
    """Register the briefs' tick as a periodic task of this process's workers: every BRIEFS_TICK seconds
    (cron's sixth field, the seconds). A tick still waiting for a worker is not offered again (queueing lock)."""
    if (brief_tick.name, BRIEF_TICK_ID) in app.periodic_registry.periodic_tasks:
        return
    cron = f"* * * * * */{settings.BRIEFS_TICK}"
    app.periodic(cron=cron, periodic_id=BRIEF_TICK_ID, queueing_lock="chat.brief_tick")(brief_tick)


def defer_run(run_id: uuid.UUID) -> None:
    """Defer a new run's job on the current database connection, so within the caller's transaction."""
    answer_run.configure(queueing_lock=str(run_id)).defer(run_id=str(run_id))


def _lost_runs() -> list[uuid.UUID]:
    return list(
        ResearchRun.objects.filter(status=ResearchRun.Status.RUNNING, lease_expires_at__lt=timezone.now())
        .order_by("lease_expires_at")
        .values_list("pk", flat=True)[:100]
    )


def _runs_to_resume() -> list[uuid.UUID]:
    """Runs put back in the queue to be resumed (their job may not have been deferred: a sweep or a
    hand-over cut short); deferring again is harmless, the queueing lock refuses a second waiting job."""
    return list(
        ResearchRun.objects.filter(status=ResearchRun.Status.QUEUED, attempt__gt=0)
        .order_by("created_at")
        .values_list("pk", flat=True)[:100]
    )


async def sweep() -> None:
    """Resume runs whose worker died, and close that worker's jobs."""
    for run_id in await db_call(_lost_runs):
        if await runs.requeue_lost(run_id):
            logger.warning("run %s lost its worker; queued again to resume", run_id)
    for run_id in await db_call(_runs_to_resume):
        await enqueue_run(run_id)
    for job in await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=STALLED_WORKER_SECONDS):
        assert job.id is not None  # a job read from the queue has its id
        await app.job_manager.finish_job_by_id_async(job.id, status=procrastinate_jobs.Status.FAILED, delete_job=False)


async def _sweep_forever() -> None:
    while True:
        try:
            await sweep()
        except Exception:
            logger.exception("The sweep of lost runs failed; retrying in %s s", SWEEP_SECONDS)
        await asyncio.sleep(SWEEP_SECONDS)


async def serve(*, concurrency: int, grace: float, briefs: bool) -> None:
    """Run a worker until SIGTERM or SIGINT, then drain: finish or hand over every run within `grace`.
    With `briefs`, the worker's deferrer offers the briefs' periodic tick too."""
    from procrastinate import psycopg_connector
    from procrastinate.contrib.django import utils as django_utils

    connector = psycopg_connector.PsycopgConnector(
        kwargs=django_utils.connector_params("default"), min_size=1, max_size=4
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    # Ready before the first job is fetched (bounded by MARKET_DATA_WARM_TIMEOUT, never fatal), as a web process.
    start_model_check()  # in the background, as a web process does
    if briefs:
        schedule_brief_ticks()
    await asyncio.gather(start_market_data(), warm_up_models())
    with app.replace_connector(connector):
        async with app.open_async():
            worker = asyncio.create_task(
                app.run_worker_async(
                    queues=[QUEUE],
                    name=f"runworker {leases.OWNER}",
                    concurrency=concurrency,
                    install_signal_handlers=False,
                    update_heartbeat_interval=HEARTBEAT_SECONDS,
                    stalled_worker_timeout=STALLED_WORKER_SECONDS,
                    delete_jobs="successful",
                ),
                name="procrastinate-worker",
            )
            sweeper = asyncio.create_task(_sweep_forever(), name="sweeper")
            stopped = asyncio.create_task(stop.wait())
            await asyncio.wait({worker, stopped}, return_when=asyncio.FIRST_COMPLETED)
            logger.info("Stopping: no new runs; %s running", len(leases.local_handles()))
            sweeper.cancel()
            worker.cancel()  # procrastinate stops fetching and waits for the running jobs
            done, _ = await asyncio.wait({worker}, timeout=grace)
            if not done:
                handles = leases.local_handles()
                logger.info("Grace period over: handing over %s runs", len(handles))
                for handle in handles:
                    handle.stop("hand_over")
                await asyncio.wait({worker}, timeout=HAND_OVER_SECONDS)
            stopped.cancel()
            # Bounded: a run still not handed over is cancelled as the loop closes, and its lease expires.
            await asyncio.wait({worker, sweeper, stopped}, timeout=HAND_OVER_SECONDS)
