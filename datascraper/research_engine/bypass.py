"""The quick path: a question that needs no decomposition is answered by one source, with no orchestration.

Either one streamed web search, or, for a fast-path quote question, the quote itself: the answer is
composed here from its numbers, citing the Yahoo Finance page as [1], with no model call at all.

In mode auto the web search may start before the analyzer has decided it is the answer (a
`SpeculativeSearch`): a simple question then pays nothing for the analyzer but the time by which the
analyzer is slower than the search's first token.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Literal

from datascraper import prompts
from datascraper.errors import ResearchError
from datascraper.market_data.errors import MarketDataError
from datascraper.market_data.schemas import Quote
from datascraper.model_ref import parse_model
from datascraper.quality_logger import SpeculationOutcome
from datascraper.query_analyzer import FastPathMatch
from datascraper.research_engine.confidence import annotate_sources
from datascraper.research_engine.data.market_data import fetch_market_data
from datascraper.research_engine.periods.as_of import as_of_text
from datascraper.research_engine.source_types import SourceClassifier
from datascraper.research_engine.state import PlannedStep, RunState
from datascraper.schemas import DeltaEvent, PlanEvent, ResearchEvent, Source, SourcesEvent, StatusEvent, StepEvent
from datascraper.search.answer import SearchedAnswer, web_answer
from datascraper.web_search import WebSearchStream

logger = logging.getLogger(__name__)

QUOTE_STEP_ID = "q1"


def one_search(state: RunState) -> WebSearchStream | SearchedAnswer:
    """The run's single web search: the question as asked, with the conversation."""
    return web_answer(
        state.query.question,
        instructions=prompts.QUICK_ANSWER_INSTRUCTIONS,
        history=state.query.history,
        config=state.config,
        ledger=state.ledger,
        today=state.today,
    )


class SpeculativeSearch:
    """The single web search, started while the analyzer decides whether it will be the answer.

    A task reads the stream into a buffer meanwhile. `keep()` makes it the answer: iterated, it gives
    everything buffered so far at once, as one delta, then the rest as it arrives, and finally raises the
    stream's named error if it failed. `cancel()` cancels the task and waits for it, which closes the HTTP
    stream. Either way the outcome, with what a cancelled call cost, is recorded on the run.
    """

    def __init__(self, state: RunState) -> None:
        self._state = state
        self.stream = one_search(state)
        self._started = time.monotonic()
        self._buffer: asyncio.Queue[DeltaEvent | None] = asyncio.Queue()  # None: the stream ended
        self._task = asyncio.create_task(self._read(), name="speculative web search")

    async def _read(self) -> None:
        try:
            async for delta in self.stream:
                self._buffer.put_nowait(delta)
        finally:
            self._buffer.put_nowait(None)

    def keep(self) -> SpeculativeSearch:
        self._state.speculation = self._outcome("kept")
        return self

    async def cancel(self) -> None:
        """Stop the search, if still running, and record its cost (tokens only if the provider reported
        them: a stream closed before `response.completed` reports none)."""
        await self.close()
        self._state.speculation = self._outcome("cancelled")

    async def close(self) -> None:
        """Cancel the task unless it has finished, and wait for it. Idempotent."""
        if not self._task.done():
            self._task.cancel()
        await asyncio.wait([self._task])
        if not self._task.cancelled():
            # Retrieved here: a failure of a search nobody reads is not an "exception never retrieved".
            self._task.exception()

    def _outcome(self, outcome: Literal["kept", "cancelled"]) -> SpeculationOutcome:
        elapsed_ms = round((time.monotonic() - self._started) * 1000)
        if outcome == "kept":
            return SpeculationOutcome(outcome=outcome, elapsed_ms=elapsed_ms)
        result = self.stream.result
        return SpeculationOutcome(
            outcome=outcome,
            elapsed_ms=elapsed_ms,
            completed=result.complete,
            input_tokens=result.usage.input_tokens,
            output_tokens=result.usage.output_tokens,
        )

    async def __aiter__(self) -> AsyncIterator[DeltaEvent]:
        try:
            while True:
                items = [await self._buffer.get()]
                while not self._buffer.empty():
                    items.append(self._buffer.get_nowait())
                text = "".join(item.text for item in items if item is not None)
                if text:
                    yield DeltaEvent(text=text)
                if items[-1] is None:
                    break
            await self._task  # the stream's named error, if it failed
        finally:
            # A consumer that stops early (the deadline, a cancelled run) stops the search with it.
            await self.close()


async def answer_with_one_search(
    state: RunState, speculation: SpeculativeSearch | None = None
) -> AsyncIterator[ResearchEvent]:
    """One streamed, web-searched answer, within the run's hard deadline (`DeadlineExceeded` past it):
    `speculation`'s, kept, when the search was started before the analyzer decided.

    On failure part way, the sources so far go out first.
    """
    started = time.monotonic()
    yield StatusEvent(phase="synthesizing", label="Searching the web and writing the answer")
    stream = one_search(state) if speculation is None else speculation.stream
    deltas = stream if speculation is None else speculation.keep()
    try:
        async for delta in state.deadline.within(deltas):
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
    state.pages = stream.result.pages
    # Publisher and date, as research sources carry them (no evidence confidence on this path).
    annotate_sources(state.sources, SourceClassifier(), state.today)


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
            quote = result.result()
            assert isinstance(quote, Quote)  # the quote tool's payload
            answer = compose_quote_answer(match, quote)
            if answer is None:
                state.quote_fallback = "incomplete_quote"
            else:
                source = Source(n=1, title=result.title, url=result.url, kind="market_data", as_of=as_of_text(quote))
                state.sources = [source]
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
        model = str(parse_model(state.config.research_model))  # the quick answer's web search answers it
        yield StepEvent(
            sub_question_id=step.id, state="fallback", route="web_search", elapsed_ms=elapsed_ms, model=model
        )
        return
    yield StepEvent(sub_question_id=step.id, state="done", route="market_data", elapsed_ms=elapsed_ms)
    state.clock.first_token()
    state.answer = answer
    yield DeltaEvent(text=answer)


def compose_quote_answer(match: FastPathMatch, quote: Quote) -> str | None:
    """The one-sentence answer, or None when the quote lacks a figure the question needs."""
    name = f"{match.name} ({quote.symbol})" if match.name else quote.symbol
    as_of = _as_of(quote.as_of or quote.retrieved_at)
    if quote.price is None:
        return None
    if match.fact == "market_cap":
        if quote.market_cap is None:
            return None
        return prompts.QUOTE_MARKET_CAP_ANSWER.format(
            name=name,
            market_cap=_large(quote.market_cap, quote.currency),
            price=_price(quote.price, quote),
            as_of=as_of,
        )
    if quote.previous_close is None or quote.change is None or quote.change_percent is None:
        return None
    template = prompts.QUOTE_CHANGE_ANSWER if match.fact == "change" else prompts.QUOTE_PRICE_ANSWER
    return template.format(
        name=name,
        price=_price(quote.price, quote),
        move=_move(quote.change, quote.change_percent, quote),
        previous_close=_price(quote.previous_close, quote),
        as_of=as_of,
    )


def _price(value: float, quote: Quote) -> str:
    """A price as the exchange's readers read it: 196.45 USD, or 72.50p (£0.7250) for a London listing."""
    return quote.sub_unit.shown(value) if quote.sub_unit is not None else _money(value, quote.currency)


def _money(value: float, currency: str | None) -> str:
    number = f"{value:,.2f}" if abs(value) >= 1 else f"{value:.4f}"
    return f"{number} {currency}" if currency else number


def _large(value: float, currency: str | None) -> str:
    for threshold, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if abs(value) >= threshold:
            number = f"{value / threshold:.2f} {word}"
            return f"{number} {currency}" if currency else number
    return _money(value, currency)


def _move(change: float, change_percent: float, quote: Quote) -> str:
    if change == 0:
        return "unchanged"
    direction = "up" if change > 0 else "down"
    return f"{direction} {_price(abs(change), quote)} ({change_percent:+.2f}%)"


def _as_of(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
