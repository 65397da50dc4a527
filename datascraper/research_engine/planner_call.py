"""One call to the planner model, as the run makes it: the analyzer's plan or the gap detector's report.

Both calls get the same time (RESEARCH_PLANNER_TIMEOUT, cut short by the research deadline) and fail the
same way: an account failure (a bad key, no quota) ends the run, and any other named error is a miss the
caller answers with its fallback (one web search, the findings so far). A miss says whether the research
deadline came first, since then no fallback that researches further can run either.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from datascraper.errors import ACCOUNT_FAILURES, ResearchError, UpstreamTimeout
from datascraper.research_engine.state import RunState
from datascraper.schemas import Phase

T = TypeVar("T")

# asyncio may fire a timeout a clock tick early: "up" means within a few milliseconds.
_DEADLINE_SLACK_S = 0.01


@dataclass(frozen=True)
class PlannerMiss:
    """A planner call that gave no answer: `code` is its error's, `deadline` whether the research deadline
    cut it short (rather than RESEARCH_PLANNER_TIMEOUT or the provider's own timeout)."""

    code: str
    deadline: bool


async def call_planner(state: RunState, phase: Phase, call: Callable[[float], Awaitable[T]]) -> T | PlannerMiss:
    """`call(timeout_s)`'s answer, or the miss it ended in; its time is counted to `phase`.

    Raises:
        The account failures (`ACCOUNT_FAILURES`): no fallback can answer without the account.
    """
    started = time.monotonic()
    timeout_s = min(state.config.planner_timeout_s, state.deadline.research_remaining())
    try:
        return await call(timeout_s)
    except ACCOUNT_FAILURES:
        raise
    except ResearchError as exc:
        return PlannerMiss(code=exc.code, deadline=_cut_by_deadline(exc, timeout_s, state))
    finally:
        state.clock.add(phase, started)


def _cut_by_deadline(exc: ResearchError, timeout_s: float, state: RunState) -> bool:
    """Whether a planner call given `timeout_s` timed out because the research deadline came first."""
    return (
        isinstance(exc, UpstreamTimeout)
        and timeout_s < state.config.planner_timeout_s
        and state.deadline.research_remaining() < _DEADLINE_SLACK_S
    )
