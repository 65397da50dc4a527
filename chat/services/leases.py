"""The runs this process answers: their handles, the lease that says they are alive, and how a cancel
from another process reaches them.

Each process has an owner id. While it answers runs, one task renews the lease of all of them in one
UPDATE every `LEASE_RENEW_SECONDS`; a run whose lease has expired lost its process (a crash, a kill)
and is resumed or ended by someone else. Cancels travel over Redis pub/sub on the owner's own channel:
a PUBLISH that reaches no subscriber proves the owner is gone, so the cancel can end the run at once.
Without Redis (the embedded default: one process) a cancel is local; the lease renewal also reads the
cancel flags of this process's runs, for several web processes sharing a database without Redis.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

from django.conf import settings
from django.utils import timezone

from chat.db_calls import db_call
from chat.models import ResearchRun
from chat.redis_client import redis_client

logger = logging.getLogger(__name__)

LEASE_SECONDS = float(os.environ.get("RUNS_LEASE_SECONDS", "15"))
LEASE_RENEW_SECONDS = LEASE_SECONDS / 3
CANCEL_CHANNEL_PREFIX = "research-chat:cancel:"

StopCause = Literal["cancel", "hand_over"]

OWNER = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class RunHandle:
    """A run answered here: its task, and why it is being stopped (None: the server is shutting down)."""

    run_id: uuid.UUID
    task: asyncio.Task | None = None
    stop_cause: StopCause | None = None

    def stop(self, cause: StopCause) -> None:
        self.stop_cause = self.stop_cause or cause
        if self.task is not None:
            self.task.cancel()


@dataclass
class _ProcessLeases:
    handles: dict[uuid.UUID, RunHandle] = field(default_factory=dict)
    keeper: asyncio.Task | None = None
    listener: asyncio.Task | None = None
    subscribed: asyncio.Event | None = None


_leases = _ProcessLeases()


def lease_deadline():
    return timezone.now() + timedelta(seconds=LEASE_SECONDS)


def local_handle(run_id: uuid.UUID) -> RunHandle | None:
    return _leases.handles.get(run_id)


def local_handles() -> list[RunHandle]:
    return list(_leases.handles.values())


async def register(run_id: uuid.UUID) -> RunHandle:
    """Note a run as answered here (before its attempt begins), with lease renewal and cancels running."""
    handle = _leases.handles[run_id] = RunHandle(run_id)
    await _ensure_started()
    return handle


def unregister(run_id: uuid.UUID) -> None:
    _leases.handles.pop(run_id, None)


async def _ensure_started() -> None:
    loop = asyncio.get_running_loop()
    if _leases.keeper is None or _leases.keeper.done() or _leases.keeper.get_loop() is not loop:
        _leases.keeper = loop.create_task(_keep_leases(), name="run-leases")
    listener = _leases.listener
    if settings.REDIS_URL and (listener is None or listener.done() or listener.get_loop() is not loop):
        _leases.subscribed = asyncio.Event()
        _leases.listener = loop.create_task(_listen_for_cancels(_leases.subscribed), name="run-cancels")
    if _leases.subscribed is not None and settings.REDIS_URL:
        try:
            await asyncio.wait_for(_leases.subscribed.wait(), timeout=5)
        except TimeoutError:
            logger.warning("The cancel subscription is not ready; cancels may wait for the lease to expire.")


def _renew(owner: str, run_ids: list[uuid.UUID]) -> list[uuid.UUID]:
    """Renew this process's leases; the ids among them whose cancel was requested."""
    runs = ResearchRun.objects.filter(pk__in=run_ids, lease_owner=owner, status=ResearchRun.Status.RUNNING)
    runs.update(lease_expires_at=lease_deadline())
    return list(runs.filter(cancel_requested=True).values_list("pk", flat=True))


async def renew_leases() -> None:
    """Renew the lease of every run answered here; stop those whose cancel was requested."""
    run_ids = list(_leases.handles)
    if not run_ids:
        return
    for run_id in await db_call(_renew, OWNER, run_ids):
        handle = _leases.handles.get(run_id)
        if handle is not None:
            handle.stop("cancel")


async def _keep_leases() -> None:
    while True:
        await asyncio.sleep(LEASE_RENEW_SECONDS)
        try:
            await renew_leases()
        except Exception:
            logger.exception("Could not renew the run leases; retrying in %s s", LEASE_RENEW_SECONDS)


def _subscriber():
    """A client of its own for the subscription: no read timeout, since it waits for messages."""
    import redis.asyncio as aioredis

    return aioredis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2)


async def _listen_for_cancels(subscribed: asyncio.Event) -> None:
    """Cancel local runs named on this process's channel; reconnects after a Redis failure."""
    while True:
        client = _subscriber()
        pubsub = client.pubsub()
        try:
            await pubsub.subscribe(CANCEL_CHANNEL_PREFIX + OWNER)
            subscribed.set()
            async for message in pubsub.listen():
                if message["type"] != "message":
                    continue
                handle = _leases.handles.get(uuid.UUID(message["data"].decode()))
                if handle is not None:
                    handle.stop("cancel")
        except GeneratorExit:
            raise  # the event loop is closing under us: nothing can be awaited any more
        except asyncio.CancelledError:
            await _close(pubsub, client)
            raise
        except Exception:
            logger.warning("The cancel subscription broke; reconnecting in 1 s", exc_info=True)
            await _close(pubsub, client)
            await asyncio.sleep(1)


async def _close(pubsub, client) -> None:
    try:
        await pubsub.aclose()
        await client.aclose()
    except Exception:
        logger.debug("closing the cancel subscription failed", exc_info=True)


async def send_cancel(owner: str, run_id: uuid.UUID) -> bool:
    """Tell the process `owner` to cancel the run; False when no such process is listening (it is gone)."""
    if not settings.REDIS_URL:
        return False
    receivers = await redis_client().publish(CANCEL_CHANNEL_PREFIX + owner, str(run_id))
    return receivers > 0
