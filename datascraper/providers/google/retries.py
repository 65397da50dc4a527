"""Our bounded retries of a Gemini call: the SDK's own retry on every 429 would also retry a used-up daily
quota, which only the error's body tells apart from a rate limit (`failures.is_daily_quota`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from datascraper.models_config import get_research_config
from datascraper.providers.google.failures import is_retryable

T = TypeVar("T")

FIRST_DELAY_S = 0.5


async def with_retries(call: Callable[[], Awaitable[T]]) -> T:
    """`call()`, tried again after a retryable failure up to `RESEARCH_MAX_RETRIES` times (0.5 s, doubling).

    The caller bounds the whole (a structured call by its timeout, a web search by its sub-question's), so
    a retry never outlasts the run's budget; the last failure is raised as the SDK raised it.
    """
    retries = get_research_config().max_retries
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as exc:
            if attempt >= retries or not is_retryable(exc):
                raise
        await asyncio.sleep(FIRST_DELAY_S * 2**attempt)
        attempt += 1
