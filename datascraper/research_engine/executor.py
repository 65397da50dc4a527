"""Where a sub-question is routed and answered: market data, a web search, or deferred to synthesis.

A round's sub-questions run as concurrent tasks, at most `RESEARCH_CONCURRENCY` at once, each within
`sub_question_timeout_s` and all within the run's research deadline: one still running then is cancelled
and becomes a failed finding (`deadline_exceeded`), so the answer is written from the others. Their
`step` events reach the caller as they happen: the tasks put them on a queue that `execute_round` drains
while they run.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import date
from typing import cast

from datascraper import prompts
from datascraper.errors import ACCOUNT_FAILURES, DeadlineExceeded, ResearchError
from datascraper.market_data.errors import MarketDataError
from datascraper.model_ref import parse_model
from datascraper.models_config import ResearchConfig
from datascraper.plan_schemas import SubQuestion
from datascraper.providers import breaker
from datascraper.research_engine.data.filing_disclosures import fetch_disclosures
from datascraper.research_engine.data.filings import STATEMENT_LINES, FilingFinding, fetch_reported_figures
from datascraper.research_engine.periods.fiscal_fetch import FiscalMarketData, fetch_by_fiscal_period
from datascraper.research_engine.periods.request import fiscal_ask, market_data_request
from datascraper.research_engine.state import Deadline, Finding, PlannedStep
from datascraper.schemas import (
    FilingDataKind,
    MarketDataKind,
    Route,
    StepEvent,
    StepRoute,
    StepState,
    UsageLedger,
    is_filing_data,
)
from datascraper.search.answer import web_answer

logger = logging.getLogger(__name__)

Emit = Callable[[StepEvent], None]


@dataclass
class SubQuestionAttempt:
    """The route a running sub-question is on, so a timeout or a crash part way reports that route."""

    route: Route
    fallback_reason: str | None = None  # why market data gave way to a web search


async def execute_round(
    steps: list[PlannedStep], *, config: ResearchConfig, ledger: UsageLedger, today: date, deadline: Deadline
) -> AsyncIterator[StepEvent | Finding]:
    """Run `steps` concurrently; yield each `StepEvent` as it happens and each `Finding` as it is ready.

    A sub-question's failure, even an unexpected exception, is a `failed` finding: one broken sub-question
    must not cost the run the others' findings. A failure of the account itself (a rejected key, no credit)
    is raised instead: every other call of the run would fail the same way.
    """
    queue: asyncio.Queue[StepEvent | asyncio.Task[Finding]] = asyncio.Queue()
    semaphore = asyncio.Semaphore(config.concurrency)
    tasks = []
    for step in steps:
        task = asyncio.create_task(
            _answer_in_turn(
                step, semaphore, queue.put_nowait, config=config, ledger=ledger, today=today, deadline=deadline
            ),
            name=f"sub-question-{step.id}",
        )
        task.add_done_callback(queue.put_nowait)
        tasks.append(task)
    try:
        remaining = len(tasks)
        while remaining:
            item = await queue.get()
            if isinstance(item, asyncio.Task):
                remaining -= 1
                yield item.result()
            else:
                yield item
    finally:
        # The consumer stopped early (the run was cancelled): stop the others.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _answer_in_turn(
    step: PlannedStep,
    semaphore: asyncio.Semaphore,
    emit: Emit,
    *,
    config: ResearchConfig,
    ledger: UsageLedger,
    today: date,
    deadline: Deadline,
) -> Finding:
    if step.route == "synthesis":
        return Finding(step=step, status="deferred", route="synthesis")
    async with semaphore:
        started = time.monotonic()
        attempt = SubQuestionAttempt(route=step.route)
        # Which bound is the nearer one is decided now: after the timeout both may have passed.
        research_left = deadline.research_remaining()
        cut_by_deadline = research_left < config.sub_question_timeout_s
        if research_left <= 0:  # it waited for a slot until the research time was up
            return _failed(step, emit, started, route=step.route, code=DeadlineExceeded.code)
        try:
            async with asyncio.timeout(min(config.sub_question_timeout_s, research_left)):
                return await answer_sub_question(
                    step, emit, started, attempt, config=config, ledger=ledger, today=today
                )
        except TimeoutError:
            code = DeadlineExceeded.code if cut_by_deadline else "sub_question_timeout"
            if attempt.route == "web_search" and not cut_by_deadline:
                breaker.WEB_SEARCH.trip(config.breaker_cooldown_s)  # the search hung: later rounds skip it
        except ACCOUNT_FAILURES:
            raise
        except Exception:
            # A bug or a malformed upstream payload (CancelledError is not an Exception and goes through).
            logger.exception("Sub-question %s failed unexpectedly", step.id)
            code = "internal_error"
        model = str(parse_model(config.research_model)) if attempt.route == "web_search" else None
        return _failed(
            step, emit, started, route=attempt.route, code=code, fallback_reason=attempt.fallback_reason, model=model
        )


async def answer_sub_question(
    step: PlannedStep,
    emit: Emit,
    started: float,
    attempt: SubQuestionAttempt,
    *,
    config: ResearchConfig,
    ledger: UsageLedger,
    today: date,
) -> Finding:
    """One sub-question by its route; market data that fails or has nothing falls back to a web search.

    `attempt` follows the route taken, for the caller's report of a timeout or a crash.
    """
    model = str(parse_model(config.research_model))  # a web search's text is the research model's
    if step.route == "market_data":
        emit(StepEvent(sub_question_id=step.id, state="started", route="market_data"))
        if is_filing_data(step.data):
            found = await _from_filings(step, step.data, config=config)
        else:
            found = await _from_market_data(step, config=config, today=today)
        if isinstance(found, Finding):
            emit(_step(step, "done", "market_data", started))
            found.elapsed_ms = _ms(started)
            return found
        attempt.fallback_reason = found
        attempt.route = "web_search"
        # `fallback` names the route the sub-question falls back to.
        emit(_step(step, "fallback", "web_search", started, model=model))
    else:
        emit(StepEvent(sub_question_id=step.id, state="started", route="web_search", model=model))

    instructions = prompts.SUB_QUESTION_SEARCH_INSTRUCTIONS
    search = web_answer(step.question, instructions=instructions, config=config, ledger=ledger, today=today)
    try:
        async for _ in search:
            pass
    except ACCOUNT_FAILURES:
        raise
    except ResearchError as exc:
        reason = attempt.fallback_reason
        return _failed(step, emit, started, route="web_search", code=exc.code, fallback_reason=reason, model=model)
    result = search.result
    emit(_step(step, "done", "web_search", started, model=model))
    return Finding(
        step=step,
        status="answered",
        route="web_search",
        text=result.text,
        sources=result.sources,
        pages=result.pages,
        fallback_reason=attempt.fallback_reason,
        elapsed_ms=_ms(started),
        model=model,
    )


async def _from_market_data(step: PlannedStep, *, config: ResearchConfig, today: date) -> Finding | str:
    """A numerical step answered by Yahoo and, for a statement, by the figures as filed with the SEC, asked
    at once; answered when either has something, else the reason it falls back to a web search."""
    data = cast(MarketDataKind, step.data)  # route_sub_question requires it
    request, fiscal = step.request, step.fiscal
    if request is None:  # a step of an older checkpoint: its periods are in its wording
        asked = SubQuestion(question=step.question, type=step.type, data=data)
        request, fiscal = market_data_request(asked, today=today), fiscal_ask(asked)
    yahoo = fetch_by_fiscal_period(
        step.tickers,
        data,
        question=step.question,
        request=request,
        ask=fiscal,
        today=today,
        timeout_s=config.market_data_timeout_s,
    )
    filed: FilingFinding | BaseException | None = None
    if data in STATEMENT_LINES:
        # Bounded on its own: a slow SEC must not cost the sub-question Yahoo's answer.
        reported = asyncio.wait_for(
            fetch_reported_figures(
                step.tickers, data, request=request, fiscal=fiscal, timeout_s=config.market_data_timeout_s
            ),
            config.market_data_timeout_s,
        )
        fetched, filed = await asyncio.gather(yahoo, reported, return_exceptions=True)
    else:
        [fetched] = await asyncio.gather(yahoo, return_exceptions=True)
    # Anything else is a bug: reported as the sub-question's internal error.
    if isinstance(fetched, BaseException) and not isinstance(fetched, MarketDataError):
        raise fetched
    if isinstance(filed, BaseException) and not isinstance(filed, MarketDataError | TimeoutError):
        raise filed
    filings = filed if isinstance(filed, FilingFinding) and filed.ok else None
    market = fetched.finding if isinstance(fetched, FiscalMarketData) else None
    if (market is None or not market.ok) and filings is None:
        if isinstance(fetched, MarketDataError):
            return fetched.code
        return market.errors[0].code if market is not None and market.errors else "no_data"
    # Rendered before `done`: rendering validates the payloads, and may fail.
    text = "\n".join(part.summary_text() for part in (filings, market) if part is not None)
    return Finding(
        step=step,
        status="answered",
        route="market_data",
        text=text,
        market_data=market,
        filings=filings,
        fiscal_calendars=fetched.calendars if isinstance(fetched, FiscalMarketData) else {},
    )


async def _from_filings(step: PlannedStep, data: FilingDataKind, *, config: ResearchConfig) -> Finding | str:
    """A question about a company's own disclosures, read in its filings; the reason it falls back to a web
    search when they have nothing (not configured, not a US filer, no such section)."""
    try:
        async with asyncio.timeout(config.market_data_timeout_s):  # then the web, within the sub-question's time
            filings = await fetch_disclosures(
                step.tickers,
                data,
                question=step.question,
                section=step.section,
                timeout_s=config.market_data_timeout_s,
            )
    except MarketDataError as exc:
        return exc.code
    except TimeoutError:
        return "timeout"
    if not filings.ok:
        return filings.errors[0].code if filings.errors else "no_data"
    return Finding(step=step, status="answered", route="market_data", text=filings.summary_text(), filings=filings)


def _failed(
    step: PlannedStep,
    emit: Emit,
    started: float,
    *,
    route: str,
    code: str,
    fallback_reason: str | None = None,
    model: str | None = None,
) -> Finding:
    public_route: StepRoute = "market_data" if route == "market_data" else "web_search"
    emit(_step(step, "failed", public_route, started, model=model))
    return Finding(
        step=step,
        status="failed",
        route=public_route,
        error=code,
        fallback_reason=fallback_reason,
        elapsed_ms=_ms(started),
        model=model,
    )


def _step(
    step: PlannedStep, state: StepState, route: StepRoute, started: float, *, model: str | None = None
) -> StepEvent:
    return StepEvent(sub_question_id=step.id, state=state, route=route, elapsed_ms=_ms(started), model=model)


def _ms(since: float) -> int:
    return round((time.monotonic() - since) * 1000)
