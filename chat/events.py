"""Where run events leave the server: publishing a run's events, and the SSE stream of one run.

Every event is stored (`chat.event_store`) before anyone is woken, so storage is the source of truth.
The stream is our own loop: it sends stored events strictly after the last id it sent, which is what
makes delivery exactly-once and in order for late subscribers and for resumes alike. A wake-up (through
django-eventstream's listener queue) carries the stored event, so a stream that is up to date sends it
as it is; one that missed anything (a lost or overflowing wake-up, a late start) reads the store. With
Redis, django-eventstream's per-process Redis listener carries the wake-ups between processes: a watcher
costs no SQL, and no Redis read while it keeps up.

A web process told to stop (SIGTERM, as in a deploy) ends its streams at once without a terminal event:
browsers reconnect by themselves, with `Last-Event-ID`, to a process that stays.
"""

from __future__ import annotations

import asyncio
import re
import signal
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

from django_eventstream.event import Event
from django_eventstream.utils import sse_encode_event
from django_eventstream.views import Listener, get_listener_manager

from chat.event_store import READ_BATCH, EventRejected, RunEventRecord, encode, get_event_store
from chat.models import run_channel

__all__ = ["EventRejected", "RunEventRecord", "iter_run_events", "publish", "stream_run_events"]

TERMINAL_EVENTS = frozenset({"done", "error"})
KEEPALIVE_SECONDS = 15.0
# Browsers and proxies start delivering a stream only after a first chunk of some size; `retry` makes a
# browser reconnect after 1 s instead of its default 3 s.
OPENING = ":" + " " * 2048 + "\n\nretry: 1000\n\nevent: stream-open\ndata:\n\n"
KEEPALIVE = None

_LAST_ID = re.compile(r"^(?:(?P<channel>[A-Za-z0-9_.~%-]+):)?(?P<id>\d{1,18})$")


class InvalidLastEventId(ValueError):
    """A resume position that does not name an event of this run's channel."""


async def publish(run_id: uuid.UUID, attempt: int, event_type: str, data: dict, *, final: bool = False) -> int:
    """Store one event of `attempt` and wake the run's streams. Raises `EventRejected` when the attempt
    no longer answers the run, or when the run's final event is already out."""
    store = get_event_store()
    data_json = encode(data)
    seq = await store.append(run_id, attempt, event_type, data_json, final=final)
    if not store.wakes_other_processes:
        channel = run_channel(run_id)
        get_listener_manager().add_to_queues(channel, Event(channel, event_type, data_json, id=seq))
    return seq


def parse_last_event_id(value: str | None, channel: str) -> int:
    """The id to resume after: `run-<uuid>:<n>` as sent in `id:` lines, or a bare `<n>`; none means 0."""
    if value is None or not value.strip():
        return 0
    match = _LAST_ID.match(value.strip())
    if match is None or (match["channel"] is not None and match["channel"] != channel):
        raise InvalidLastEventId("Last-Event-ID must be an id this run's stream sent, like 'run-<id>:7'.")
    return int(match["id"])


async def stored_events(run_id: uuid.UUID) -> list[RunEventRecord]:
    """Every stored event of the run, in order."""
    store = get_event_store()
    records: list[RunEventRecord] = []
    while True:
        batch = await store.read_after(run_id, records[-1].id if records else 0)
        records.extend(batch)
        if len(batch) < READ_BATCH:
            return records


# --- draining on SIGTERM ---------------------------------------------------------------------------------

_draining: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}
_sigterm_hooked = False


def _drain_event() -> asyncio.Event:
    """Set when this process is told to stop. Hooked with the first stream: the server's own SIGTERM
    handler still runs after ours, so its graceful shutdown goes on as before."""
    global _sigterm_hooked
    loop = asyncio.get_running_loop()
    if loop not in _draining:
        _draining[loop] = asyncio.Event()
    if not _sigterm_hooked:
        _sigterm_hooked = True
        try:
            previous = signal.getsignal(signal.SIGTERM)

            def on_sigterm(signum, frame) -> None:
                for known, draining in list(_draining.items()):
                    if not known.is_closed():
                        known.call_soon_threadsafe(draining.set)
                if callable(previous):
                    previous(signum, frame)
                elif previous == signal.SIG_DFL:
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    signal.raise_signal(signal.SIGTERM)

            signal.signal(signal.SIGTERM, on_sigterm)
        except ValueError:
            pass  # not the main thread (a test server in a thread): nothing to drain for
    return _draining[loop]


# --- the stream ----------------------------------------------------------------------------------------


class _StreamListener(Listener):
    """A stream's wake-up. Woken from its own event loop (a publish in this process, or the Redis
    listener's task) it is set at once: the library's `call_soon_threadsafe` costs a write to the loop's
    self-pipe and another turn of the loop for every event."""

    def wake_threadsafe(self) -> None:
        try:
            on_own_loop = asyncio.get_running_loop() is self.loop
        except RuntimeError:  # a thread without a loop
            on_own_loop = False
        if on_own_loop:
            self.aevent.set()
        else:
            super().wake_threadsafe()


def _following(queued: list[Event], last_id: int) -> list[RunEventRecord] | None:
    """The queued wake-ups as records, when they are exactly the events after `last_id` (older ones are
    skipped); None when one is missing or carries no data (an older publisher): then the store is read."""
    records: list[RunEventRecord] = []
    for event in sorted(queued, key=lambda event: int(event.id)):
        n = int(event.id)
        if n <= last_id:
            continue
        if n != last_id + 1 or not isinstance(event.data, str) or not event.data:
            return None
        records.append(RunEventRecord(n, event.type, event.data))
        last_id = n
    return records or None


async def iter_run_events(
    run_id: uuid.UUID, last_id: int, *, on_idle: Callable[[], Awaitable[object]] | None = None
) -> AsyncIterator[RunEventRecord | None]:
    """Stored events of the run after `last_id`, in order and exactly once, ending after the terminal
    event (or when this process starts draining). Yields `KEEPALIVE` (None) after each quiet period so a
    streaming response can ping its client; `on_idle` runs first (it may end a run nobody answers)."""
    store = get_event_store()
    channel = run_channel(run_id)
    draining = _drain_event()
    listener = _StreamListener()
    listener.channels = {channel}
    listener.assign_loop()
    manager = get_listener_manager()
    manager.add_listener(listener)
    try:
        while not draining.is_set():
            # Take the queued wake-ups before reading: anything published from here on is either in the
            # read below or sets the event again, so nothing is missed; ids at or below `last_id` are
            # skipped, so nothing is sent twice.
            with manager.lock:
                queued = listener.channel_items.get(channel, [])
                overflowed = listener.overflow
                listener.aevent.clear()
                listener.channel_items = {}
                listener.overflow = False
            events = None if overflowed else _following(queued, last_id)
            if events is None:
                events = await store.read_after(run_id, last_id)
            for event in events:
                last_id = event.id
                yield event
                if event.type in TERMINAL_EVENTS:
                    return
            if len(events) >= READ_BATCH:
                continue
            woken = asyncio.ensure_future(listener.aevent.wait())
            drained = asyncio.ensure_future(draining.wait())
            try:
                done, _ = await asyncio.wait(
                    {woken, drained}, timeout=KEEPALIVE_SECONDS, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                woken.cancel()
                drained.cancel()
            if not done:
                # Quiet for a while: ping, and read storage again anyway, since a wake-up can be lost
                # (a Redis subscription still starting or dropped, another process without Redis).
                if on_idle is not None:
                    await on_idle()
                yield KEEPALIVE
    finally:
        manager.remove_listener(listener)


async def stream_run_events(
    run_id: uuid.UUID, last_id: int, *, on_idle: Callable[[], Awaitable[object]] | None = None
) -> AsyncGenerator[str, None]:
    """SSE frames for the run after `last_id`, ending after the run's terminal event."""
    channel = run_channel(run_id)
    yield OPENING
    async for record in iter_run_events(run_id, last_id, on_idle=on_idle):
        if record is KEEPALIVE:
            yield "event: keep-alive\ndata:\n\n"
        else:
            yield sse_encode_event(record.type, record.data_json, event_id=f"{channel}:{record.id}")
