"""Where run events are kept: one append-only log per run, its writes fenced by the run's attempt.

A run is answered by one attempt at a time (a first execution, a resume on another worker after a crash,
a takeover that ends it). An append names its attempt and is refused with `EventRejected` once a newer
attempt has opened or once the run's final event is written, so a process that was frozen or cut off
can publish nothing after it lost the run. Event ids are 1, 2, 3... per run, which is what the SSE
stream sends as `run-<id>:<n>` and what `Last-Event-ID` resumes after.

Two stores behind one interface:
- `DatabaseEventStore` (the embedded default, and PostgreSQL without Redis): a row per event. An append
  is one short transaction: the fence is checked and the next id taken under the run's row lock.
- `RedisEventStore` (whenever `REDIS_URL` is set): a Redis Stream per run and a small hash holding the
  fence. An append is one Lua script (fence check, next id, XADD, wake-up PUBLISH): no SQL at all. A read
  is one XRANGE. Events expire `REDIS_EVENTS_TTL` after the run's last one.

Either way the wake-up carries the stored event itself (id, type, JSON), so a stream that is up to date
sends it without reading the store again (`chat.events`).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, cast

from django.conf import settings
from django.db import connection, transaction

from chat.db_calls import db_call
from chat.models import ResearchRun, RunEvent, run_channel
from chat.redis_client import redis_client

READ_BATCH = 100
REDIS_EVENTS_TTL = 7 * 24 * 3600
# django-eventstream's cross-process channel: its per-process Redis listener wakes the local streams.
WAKE_UP_CHANNEL = "events_channel"


class EventRejected(Exception):
    """The append was refused: a newer attempt answers the run, or its final event is already written."""


@dataclass(frozen=True)
class RunEventRecord:
    """One stored event of a run, as it leaves the server."""

    id: int
    type: str
    data_json: str

    @property
    def data(self) -> dict:
        return json.loads(self.data_json)


class EventStore(Protocol):
    wakes_other_processes: bool
    """Whether an append also wakes the streams of other processes (else only this process's)."""

    async def open_attempt(self, run_id: uuid.UUID, attempt: int) -> None:
        """Fence out every attempt before `attempt` (the run's row already names it)."""

    async def append(self, run_id: uuid.UUID, attempt: int, event_type: str, data_json: str, *, final: bool) -> int:
        """Store one event (its data already `encode`d) and return its id; `final` closes the log.
        Raises `EventRejected`."""

    async def read_after(self, run_id: uuid.UUID, last_id: int, limit: int = READ_BATCH) -> list[RunEventRecord]:
        """Events with ids above `last_id`, in order, at most `limit`."""

    async def last_id(self, run_id: uuid.UUID) -> int:
        """The id of the run's latest event (0 when it has none)."""


def encode(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(", ", ": "))


class DatabaseEventStore:
    """Events as rows; the fence is the run row's `attempt` and `events_closed`.

    Plain SQL rather than the ORM: these two statements run for every event and every wake-up of every
    watcher, and building ORM queries was most of their cost. `UPDATE ... RETURNING` (PostgreSQL, and
    SQLite 3.35+) checks the fence and takes the next id in one statement, under the run's row lock.
    """

    _runs = ResearchRun._meta.db_table
    _events = RunEvent._meta.db_table

    wakes_other_processes = False

    async def open_attempt(self, run_id: uuid.UUID, attempt: int) -> None:
        return None  # the run row is the fence, and the attempt was taken on it

    async def append(self, run_id: uuid.UUID, attempt: int, event_type: str, data_json: str, *, final: bool) -> int:
        return await db_call(self._append, run_id, attempt, event_type, data_json, final)

    @classmethod
    @transaction.atomic
    def _append(cls, run_id: uuid.UUID, attempt: int, event_type: str, data_json: str, final: bool) -> int:
        key = _db_uuid(run_id)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {cls._runs} SET last_event_id = last_event_id + 1, events_closed = %s "
                "WHERE id = %s AND attempt = %s AND NOT events_closed RETURNING last_event_id",
                [final, key, attempt],
            )
            row = cursor.fetchone()
            if row is None:
                raise EventRejected(f"run {run_id}: attempt {attempt} may not publish")
            cursor.execute(
                f"INSERT INTO {cls._events} (run_id, seq, type, data) VALUES (%s, %s, %s, %s)",
                [key, row[0], event_type, data_json],
            )
        return row[0]

    async def read_after(self, run_id: uuid.UUID, last_id: int, limit: int = READ_BATCH) -> list[RunEventRecord]:
        return await db_call(self._read_after, run_id, last_id, limit)

    @classmethod
    def _read_after(cls, run_id: uuid.UUID, last_id: int, limit: int) -> list[RunEventRecord]:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT seq, type, data FROM {cls._events} WHERE run_id = %s AND seq > %s ORDER BY seq LIMIT %s",
                [_db_uuid(run_id), last_id, limit],
            )
            return [RunEventRecord(seq, type_, data) for seq, type_, data in cursor.fetchall()]

    async def last_id(self, run_id: uuid.UUID) -> int:
        return await db_call(
            lambda: ResearchRun.objects.filter(pk=run_id).values_list("last_event_id", flat=True).first() or 0
        )


def _db_uuid(run_id: uuid.UUID):
    """The run id as this database stores it (a uuid column, or 32 hex characters on SQLite)."""
    return ResearchRun._meta.pk.get_db_prep_value(run_id, connection)


# KEYS: fence hash, stream. ARGV: attempt, type, data, final, ttl, wake-up channel, run channel.
_APPEND = """
local attempt = tonumber(ARGV[1])
local fenced = tonumber(redis.call('HGET', KEYS[1], 'attempt') or '0')
if attempt ~= fenced or redis.call('HGET', KEYS[1], 'closed') == '1' then
  return -1
end
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('XADD', KEYS[2], seq .. '-1', 't', ARGV[2], 'd', ARGV[3])
if ARGV[4] == '1' then redis.call('HSET', KEYS[1], 'closed', '1') end
redis.call('EXPIRE', KEYS[1], ARGV[5])
redis.call('EXPIRE', KEYS[2], ARGV[5])
redis.call('PUBLISH', ARGV[6], cjson.encode(
    {channel = ARGV[7], event_type = ARGV[2], data = ARGV[3], pub_id = tostring(seq)}))
return seq
"""

# KEYS: fence hash. ARGV: attempt, ttl. The fence only moves forward.
_OPEN_ATTEMPT = """
local fenced = tonumber(redis.call('HGET', KEYS[1], 'attempt') or '0')
if tonumber(ARGV[1]) > fenced then redis.call('HSET', KEYS[1], 'attempt', ARGV[1]) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return fenced
"""


class RedisEventStore:
    """Events in a Redis Stream per run (entry ids `<n>-1`), the fence in a hash beside it."""

    wakes_other_processes = True

    def _keys(self, run_id: uuid.UUID) -> tuple[str, str]:
        return f"research-chat:run:{run_id}:fence", f"research-chat:run:{run_id}:events"

    async def open_attempt(self, run_id: uuid.UUID, attempt: int) -> None:
        fence, _ = self._keys(run_id)
        await redis_client().eval(_OPEN_ATTEMPT, 1, fence, attempt, REDIS_EVENTS_TTL)

    async def append(self, run_id: uuid.UUID, attempt: int, event_type: str, data_json: str, *, final: bool) -> int:
        seq = await redis_client().eval(
            _APPEND,
            2,
            *self._keys(run_id),
            attempt,
            event_type,
            data_json,
            "1" if final else "0",
            REDIS_EVENTS_TTL,
            WAKE_UP_CHANNEL,
            run_channel(run_id),
        )
        if int(seq) < 0:
            raise EventRejected(f"run {run_id}: attempt {attempt} may not publish")
        return int(seq)

    async def read_after(self, run_id: uuid.UUID, last_id: int, limit: int = READ_BATCH) -> list[RunEventRecord]:
        _, stream = self._keys(run_id)
        # The client returns bytes (no decode_responses): entry ids like b"7-0", fields by their byte names.
        entries = cast(
            list[tuple[bytes, dict[bytes, bytes]]],
            await redis_client().xrange(stream, min=f"{last_id + 1}-0", max="+", count=limit),
        )
        return [
            RunEventRecord(int(entry_id.split(b"-")[0]), fields[b"t"].decode(), fields[b"d"].decode())
            for entry_id, fields in entries
        ]

    async def last_id(self, run_id: uuid.UUID) -> int:
        fence, _ = self._keys(run_id)
        value = await redis_client().hget(fence, "seq")
        return int(value or 0)


@lru_cache(maxsize=1)
def get_event_store() -> EventStore:
    """Redis whenever it is configured (no SQL on the event path), else the database."""
    if settings.REDIS_URL:
        return RedisEventStore()
    return DatabaseEventStore()
