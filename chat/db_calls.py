"""ORM work from async code, on a small pool of threads of our own.

Runs and event streams live on the event loop for minutes; the ORM is synchronous. asgiref's
`sync_to_async` would run their queries on per-request threads, each keeping a database connection for as
long as its request lives (an SSE stream: its whole life). Here every call borrows one of a few threads,
so a process holds at most `DB_THREADS` connections for runs and streams however many are open, plus
`REQUEST_THREADS` for API requests, and on PostgreSQL each call hands its connection back to the pool when
it is done.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from django.conf import settings
from django.db import DatabaseError, connection

P = ParamSpec("P")
T = TypeVar("T")

# SQLite takes one writer at a time: one thread queues the calls here rather than several sleeping in
# SQLite's busy handler (measured: a third less CPU per run under load); PostgreSQL takes them in parallel.
DB_THREADS = int(os.environ.get("DB_THREADS") or (8 if settings.IS_POSTGRES else 1))

_executor = ThreadPoolExecutor(max_workers=DB_THREADS, thread_name_prefix="db")
# API requests get threads of their own: a cheap GET must not wait behind the runs' event writes (on SQLite
# one thread's queue, hundreds deep under load; WAL lets these reads run beside that writer).
REQUEST_THREADS = 2
_request_executor = ThreadPoolExecutor(max_workers=REQUEST_THREADS, thread_name_prefix="db-request")


def _call(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    try:
        return function(*args, **kwargs)
    except DatabaseError:
        connection.close()  # it may be broken (a database restart): the next call opens a fresh one
        raise
    finally:
        if settings.IS_POSTGRES:
            connection.close()  # back to the pool; SQLite keeps one cheap connection per thread


async def db_call(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args, **kwargs)` on a database thread, for runs and streams. A cancel returns at once; a
    query already running finishes on its thread (each call is one short transaction at most)."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_executor, functools.partial(_call, function, *args, **kwargs))


async def request_db_call(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """The same for an API request's own work (the caller, admission, the view's query or write)."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_request_executor, functools.partial(_call, function, *args, **kwargs))
