"""Request bodies: the most a request may send, and its JSON parsed off the event loop.

A body is read no further than `DATA_UPLOAD_MAX_MEMORY_SIZE` (256 KB, many times what a question and its
conversation need): `config.asgi` stops reading one byte past it, and `request.body` then raises
RequestDataTooBig, which the JSON API and `/v1` answer as a 413 naming the limit (`too_large_message`).

What parsing JSON costs grows with the arrays and objects it builds, not with the bytes: 256 KB of arrays
nested in arrays are 130,000 of them and 130-280 ms of CPU, where 256 KB of text is a fraction of a
millisecond. So a body may hold at most `MAX_CONTAINERS` arrays and objects (as Django's
DATA_UPLOAD_MAX_NUMBER_FIELDS bounds a form's fields), counted before it is parsed; no request of ours
needs a tenth of them. And bodies are parsed on a thread of their own, one at a time: a parse holds the
GIL while it runs, in a thread or not, but the loop takes it back between two parses instead of waiting
for every body that arrived at once (`benchmarks/request_bodies.py`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from django.conf import settings
from django.http import HttpRequest

T = TypeVar("T")

MAX_CONTAINERS = 10_000
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')

_parse_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="body-parse")


class TooManyContainers(ValueError):
    """The body holds more arrays and objects than `MAX_CONTAINERS` (a 400)."""

    def __init__(self) -> None:
        super().__init__(f"The request body holds more than {MAX_CONTAINERS} JSON arrays and objects.")


def too_large_message() -> str:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return f"The request body is over the limit of {limit} bytes ({limit // 1024} KB)."


async def parse_body(request: HttpRequest, parse: Callable[[bytes], T]) -> T:
    """`parse(request.body)` on the parse thread, once the body is known to hold at most `MAX_CONTAINERS`
    arrays and objects. RequestDataTooBig for a body over the size limit, TooManyContainers."""
    body = request.body
    return await asyncio.get_running_loop().run_in_executor(_parse_thread, _parse_bounded, parse, body)


def _parse_bounded(parse: Callable[[bytes], T], body: bytes) -> T:
    # Brackets counted in the raw bytes are at least the containers; only a body with more of them than
    # the limit (its strings may hold brackets) is counted again without its strings.
    if body.count(b"[") + body.count(b"{") > MAX_CONTAINERS:
        outside_strings = _STRING.sub(b"", body)
        if outside_strings.count(b"[") + outside_strings.count(b"{") > MAX_CONTAINERS:
            raise TooManyContainers
    return parse(body)
