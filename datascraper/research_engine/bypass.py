"""The quick path: a question that needs no decomposition is answered by one source, with no orchestration.

Either one streamed web search, or, for a fast-path quote question, the quote itself: the answer is
composed here from its numbers, citing the Yahoo Finance page as [1], with no model call at all.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from datascraper import prompts
from datascraper.errors import ResearchError
from datascraper.market_data.client import fetch_market_data
from datascraper.market_data.errors import MarketDataError
from datascraper.market_data.schemas import Quote
from datascraper.openai_search import WebSearchStream
from datascraper.query_analyzer import FastPathMatch
from datascraper.research_engine.state import PlannedStep, RunState
from datascraper.schemas import DeltaEvent, PlanEvent, ResearchEvent, Source, SourcesEvent, StatusEvent, StepEvent

logger = logging.getLogger(__name__)

QUOTE_STEP_ID = "q1"


async def answer_with_one_search(state: RunState) -> AsyncIterator[ResearchEvent]:
    """One streamed, web-searched answer, within the run's hard deadline (`DeadlineExceeded` past it).

    On failure part way, the sources so far go out first.
    """
    started = time.monotonic()
    yield StatusEvent(phase="synthesizing", label="Searching the web and writing the answer")
    stream = WebSearchStream(
        state.query.question,
        history=state.query.history,
        model=state.config.research_model,
        ledger=state.ledger,
        today=state.today,
    )
    try:
        async for delta in state.deadline.within(stream):
            state.clock.first_token()
            yield delta
    except ResearchError:
        if stream.result.sources:
            yield SourcesEvent(sources=stream.result.sources)
        raise
    finally:
        state.clock.add("synthesizing", started)
    state.answer = stream.result.text
    state.sources = stream.result.sources


async def answer_from_quote(state: RunState, match: FastPathMatch) -> AsyncIterator[ResearchEvent]:
    """The answer from one quote. When market data fails, `state.quote_fallback` says why and no text is
    yielded: the caller then takes the web search.

    The quote is research: it must arrive by the research deadline, so its fallback still has the time
    kept for the answer.
    """
    started = time.monotonic()
    step = PlannedStep(
        id=QUOTE_STEP_ID,
        question=state.query.question,
        type="numerical",
        route="market_data",
        tickers=[match.ticker],
        data="quote",
    )
    state.plan = PlanEvent(needs_decomposition=False, sub_questions=[step.public()])
    yield StatusEvent(phase="researching", label="Fetching the latest quote", detail=match.ticker)
    yield state.plan
    yield StepEvent(sub_question_id=step.id, state="started", route="market_data")
    answer: str | None = None
    try:
        timeout_s = min(state.config.market_data_timeout_s, state.deadline.research_remaining())
        finding = await fetch_market_data([match.ticker], "quote", question=state.query.question, timeout_s=timeout_s)
        if not finding.ok:
            state.quote_fallback = finding.errors[0].code if finding.errors else "no_data"
        else:
            [result] = finding.results
            answer = compose_quote_answer(match, result.result())
            if answer is None:
                state.quote_fallback = "incomplete_quote"
            else:
                state.sources = [Source(n=1, title=result.title, url=result.url, kind="market_data")]
                state.market_payloads = [result.data]
    except MarketDataError as exc:
        state.quote_fallback = exc.code
    except Exception:
        # A malformed payload or a bug: the web search can still answer (CancelledError goes through).
        logger.exception("The quote fast path failed unexpectedly for %s", match.ticker)
        answer, state.quote_fallback = None, "internal_error"
    elapsed_ms = round((time.monotonic() - started) * 1000)
    state.clock.add("researching", started)
    if answer is None:
        yield StepEvent(sub_question_id=step.id, state="fallback", route="web_search", elapsed_ms=elapsed_ms)
        return
    yield StepEvent(sub_question_id=step.id, state="done", route="market_data", elapsed_ms=elapsed_ms)
    state.clock.first_token()
    state.answer = answer
    yield DeltaEvent(text=answer)


def compose_quote_answer(match: FastPathMatch, quote: Quote) -> str | None:
    """The one-sentence answer, or None when the quote lacks a figure the question needs."""
    currency = quote.currency
    name = f"{match.name} ({quote.symbol})" if match.name else quote.symbol
    as_of = _as_of(quote.as_of or quote.retrieved_at)
    if quote.price is None:
        return None
    if match.fact == "market_cap":
        if quote.market_cap is None:
            return None
        return prompts.QUOTE_MARKET_CAP_ANSWER.format(
            name=name, market_cap=_large(quote.market_cap, currency), price=_money(quote.price, currency), as_of=as_of
        )
    if quote.previous_close is None or quote.change is None or quote.change_percent is None:
        return None
    template = prompts.QUOTE_CHANGE_ANSWER if match.fact == "change" else prompts.QUOTE_PRICE_ANSWER
    return template.format(
        name=name,
        price=_money(quote.price, currency),
        move=_move(quote.change, quote.change_percent, currency),
        previous_close=_money(quote.previous_close, currency),
        as_of=as_of,
    )


def _money(value: float, currency: str | None) -> str:
    number = f"{value:,.2f}" if abs(value) >= 1 else f"{value:.4f}"
    return f"{number} {currency}" if currency else number


def _large(value: float, currency: str | None) -> str:
    for threshold, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if abs(value) >= threshold:
            number = f"{value / threshold:.2f} {word}"
            return f"{number} {currency}" if currency else number
    return _money(value, currency)


def _move(change: float, change_percent: float, currency: str | None) -> str:
    if change == 0:
        return "unchanged"
    direction = "up" if change > 0 else "down"
    return f"{direction} {_money(abs(change), currency)} ({change_percent:+.2f}%)"


def _as_of(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
