"""Where run events leave the server: publishing to django-eventstream, and the SSE stream of one run.

Every event is stored (DjangoModelStorage) before it is announced, so storage is the source of truth.
The stream below is our own loop rather than the library's `views.stream`: it reads stored events
strictly after the last id it sent and uses the listener queue only as a wake-up, which is what makes
delivery exactly-once and in order for late subscribers and for resumes alike.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from asgiref.sync import sync_to_async
from django_eventstream import send_event
from django_eventstream.storage import EventDoesNotExist
from django_eventstream.utils import get_storage, sse_encode_event
from django_eventstream.views import Listener, get_listener_manager

T = TypeVar("T")

TERMINAL_EVENTS = frozenset({"done", "error"})
KEEPALIVE_SECONDS = 15.0
READ_BATCH = 100
# Browsers and proxies start delivering a stream only after a first chunk of some size; `retry` makes a
# browser reconnect after 1 s instead of its default 3 s.
OPENING = ":" + " " * 2048 + "\n\nretry: 1000\n\nevent: stream-open\ndata:\n\n"

_LAST_ID = re.compile(r"^(?:(?P<channel>[A-Za-z0-9_.~%-]+):)?(?P<id>\d{1,18})$")


class InvalidLastEventId(ValueError):
    """A resume position that does not name an event of this run's channel."""


def publish(channel: str, event_type: str, data: dict) -> None:
    """Store the event and wake every listener of the channel (across processes when Redis is set)."""
    send_event(channel, event_type, data)


async def in_thread(function: Callable[..., T], *args: object) -> T:
    """`sync_to_async`, without losing a cancel: asgiref lets a sync call that is already running finish
    and then swallows the task's cancellation, so a long loop of such calls would never stop."""
    result = await sync_to_async(function)(*args)
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
    return result


async def apublish(channel: str, event_type: str, data: dict) -> None:
    await in_thread(publish, channel, event_type, data)


def parse_last_event_id(value: str | None, channel: str) -> int:
    """The id to resume after: `run-<uuid>:<n>` as sent in `id:` lines, or a bare `<n>`; none means 0."""
    if value is None or not value.strip():
        return 0
    match = _LAST_ID.match(value.strip())
    if match is None or (match["channel"] is not None and match["channel"] != channel):
        raise InvalidLastEventId("Last-Event-ID must be an id this run's stream sent, like 'run-<id>:7'.")
    return int(match["id"])


def _read_after(channel: str, last_id: int) -> list:
    return get_storage().get_events(channel, last_id, limit=READ_BATCH)


@dataclass(frozen=True)
class RunEventRecord:
    """One stored event of a run, as it leaves the server."""

    id: int
    type: str
    data_json: str

    @property
    def data(self) -> dict:
        return json.loads(self.data_json)


KEEPALIVE = None


def stored_events(channel: str) -> list[RunEventRecord]:
    """Every stored event of `channel`, in order (a synchronous read)."""
    records: list[RunEventRecord] = []
    while True:
        batch = _read_after(channel, records[-1].id if records else 0)
        records.extend(RunEventRecord(event.id, event.type, event.data) for event in batch)
        if len(batch) < READ_BATCH:
            return records


async def iter_run_events(
    channel: str, last_id: int, *, on_idle: Callable[[], Awaitable[object]] | None = None
) -> AsyncIterator[RunEventRecord | None]:
    """Stored events of `channel` after `last_id`, in order and exactly once, ending after the terminal
    event. Yields `KEEPALIVE` (None) after each quiet period so a streaming response can ping its client;
    `on_idle` runs first (it may publish the terminal event of a run nobody is answering any more)."""
    listener = Listener()
    listener.channels = {channel}
    listener.assign_loop()
    manager = get_listener_manager()
    manager.add_listener(listener)
    try:
        while True:
            # Forget queued wake-ups before reading: anything published from here on is either in the
            # read below or sets the event again, so nothing is missed and nothing is sent twice.
            with manager.lock:
                listener.aevent.clear()
                listener.channel_items = {}
                listener.overflow = False
            events = await in_thread(_read_after, channel, last_id)
            for event in events:
                last_id = event.id
                yield RunEventRecord(event.id, event.type, event.data)
                if event.type in TERMINAL_EVENTS:
                    return
            if len(events) >= READ_BATCH:
                continue
            try:
                await asyncio.wait_for(listener.aevent.wait(), timeout=KEEPALIVE_SECONDS)
            except TimeoutError:
                # Quiet for a while: ping, and read storage again anyway, since a wake-up can be lost
                # (a Redis subscription still starting or dropped, another process without Redis).
                if on_idle is not None:
                    await on_idle()
                yield KEEPALIVE
    finally:
        manager.remove_listener(listener)


async def stream_run_events(
    channel: str, last_id: int, *, on_idle: Callable[[], Awaitable[object]] | None = None
) -> AsyncIterator[str]:
    """SSE frames for `channel` after `last_id`, ending after the run's terminal event."""
    yield OPENING
    try:
        async for record in iter_run_events(channel, last_id, on_idle=on_idle):
            if record is KEEPALIVE:
                yield "event: keep-alive\ndata:\n\n"
            else:
                yield sse_encode_event(record.type, record.data_json, event_id=f"{channel}:{record.id}")
    except EventDoesNotExist:
        yield sse_encode_event("stream-reset", {"channels": [channel]}, json_encode=True)
