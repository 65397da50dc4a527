"""The typed state of one research run: planned sub-questions, their findings, the rounds and the clock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Literal, TypeVar, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, Field

from datascraper.errors import DeadlineExceeded
from datascraper.market_data.finding_schemas import MarketDataFinding, MarketDataRequest
from datascraper.models_config import ResearchConfig
from datascraper.plan_schemas import SubQuestion
from datascraper.quality_logger import NumberCheck, SpeculationOutcome
from datascraper.research_engine.data.filing_disclosures import disclosure_data
from datascraper.research_engine.data.filings import FilingFinding
from datascraper.research_engine.periods.fiscal_calendar import FiscalAsk, FiscalCalendar
from datascraper.research_engine.periods.request import fiscal_ask, market_data_request
from datascraper.schemas import (
    ChartEvent,
    DataKind,
    Fact,
    PlanEvent,
    PlannedSubQuestion,
    ResearchQuery,
    Route,
    Source,
    SubQuestionType,
    UsageLedger,
    is_filing_data,
)
from datascraper.trace_schemas import RunConfidence, StopReason, TraceEntry

FindingStatus = Literal["answered", "failed", "deferred"]
T = TypeVar("T")


class PlannedStep(BaseModel):
    """A sub-question with its id and the route chosen for it before it runs."""

    id: str
    question: str
    type: SubQuestionType
    route: Route
    tickers: list[str] = Field(default_factory=list)
    data: DataKind | None = None
    section: str | None = None  # filing_text: the section (or 8-K item) the analyzer named
    # The validated periods of a market-data step. None in checkpoints written before periods were planned:
    # the executor then reads them from the question's wording.
    request: MarketDataRequest | None = None
    # The fiscal periods it names ("Q3 FY2025"), placed on each company's calendar when its data is fetched.
    fiscal: FiscalAsk | None = None
    # A follow-up asked to strengthen the evidence of an earlier sub-question (its id): its sources count
    # towards that sub-question's claims (`research_engine.confidence`).
    about: str | None = None

    def public(self) -> PlannedSubQuestion:
        return PlannedSubQuestion(id=self.id, question=self.question, type=self.type, route=self.route)


def normalized_question(question: str) -> str:
    """A question as compared with those asked before: case and spacing do not make it new."""
    return " ".join(question.lower().split())


def route_sub_question(sub_question: SubQuestion) -> Route:
    """Where a sub-question is answered: market data needs both a ticker and a data kind to ask for. A
    question about a company's own disclosures that asks for its filings reads them first, whatever its
    type; the web answers it when they cannot."""
    if sub_question.type == "analytical":
        return "synthesis"
    if sub_question.tickers and is_filing_data(sub_question.data):
        return "market_data"
    if sub_question.type == "numerical" and sub_question.tickers and sub_question.data is not None:
        return "market_data"
    return "web_search"


def plan_steps(sub_questions: list[SubQuestion], *, first_number: int, today: date) -> list[PlannedStep]:
    """Sub-questions numbered and routed, market-data ones with their periods resolved against `today`
    (the asker's): fixed at planning, so a resumed run asks for the same periods."""
    steps = []
    for n, sq in enumerate(sub_questions, start=first_number):
        if sq.type == "qualitative" and sq.tickers and sq.data is None and (asked := disclosure_data(sq.question)):
            # A company's own disclosure the analyzer gave no data hint for: its filings are read first.
            sq = sq.model_copy(update={"data": asked})
        route = route_sub_question(sq)
        asks_market_data = route == "market_data" and not is_filing_data(sq.data)
        steps.append(
            PlannedStep(
                id=f"q{n}",
                question=sq.question.strip(),
                type=sq.type,
                route=route,
                tickers=[t.strip().upper() for t in sq.tickers if t.strip()],
                data=sq.data,
                section=sq.section if sq.data == "filing_text" else None,
                request=market_data_request(sq, today=today) if asks_market_data else None,
                fiscal=fiscal_ask(sq) if asks_market_data else None,
            )
        )
    return steps


class Finding(BaseModel):
    """What one sub-question produced. Web text cites its own `sources` with local `[n]` markers."""

    step: PlannedStep
    status: FindingStatus
    route: Route  # the route that produced it (web_search after a market data fallback)
    text: str = ""
    sources: list[Source] = Field(default_factory=list)
    market_data: MarketDataFinding | None = None
    # What the SEC's filings answered: figures as reported beside a statement's, or a disclosure's text.
    filings: FilingFinding | None = None
    # Each ticker's fiscal calendar, as its statements showed it: how its periods are named.
    fiscal_calendars: dict[str, FiscalCalendar] = Field(default_factory=dict)
    fallback_reason: str | None = None  # why market data gave way to a web search
    # The text of the cited pages the app read itself (a search API's results), by URL: the citation
    # check reads them here instead of fetching them again. Kept in memory only, never in the checkpoint
    # (up to five pages' text per sub-question, stored again every round): a resumed run fetches them.
    pages: dict[str, str] = Field(default_factory=dict, exclude=True)
    error: str | None = None  # the error code of a failed sub-question
    elapsed_ms: int = 0
    model: str | None = None  # the model that wrote a web search's text, as `provider:model`


class RoundRecord(BaseModel):
    """One research round as stored on the run."""

    n: int
    sub_questions: list[str]
    # The model that answered each web-searched sub-question of the round, by id, as `provider:model`.
    models: dict[str, str] = Field(default_factory=dict)
    complete: bool = False
    score: float | None = None
    gaps: list[str] = Field(default_factory=list)
    follow_ups: list[str] = Field(default_factory=list)
    stop_reason: StopReason | None = None


class ResearchCheckpoint(BaseModel):
    """Where research stands after the plan and after each round: what a resumed run goes on from
    (another worker, after a crash) without asking the analyzer or finished sub-questions again."""

    plan: PlanEvent
    findings: list[Finding] = Field(default_factory=list)
    rounds: list[RoundRecord] = Field(default_factory=list)
    next_steps: list[PlannedStep] = Field(default_factory=list)  # the next round's; none once research stopped
    asked: list[str] = Field(default_factory=list)  # normalized questions asked so far
    previous_score: float | None = None
    ledger: UsageLedger = Field(default_factory=UsageLedger)
    analysis_fallback: str | None = None
    gap_detector_fallback: str | None = None
    trace: list[TraceEntry] = Field(default_factory=list)  # each finished round's confidence and changes


@dataclass
class PhaseClock:
    """Milliseconds per phase (summed over rounds), the total and the first answer token."""

    started: float = field(default_factory=time.monotonic)
    phases: dict[str, int] = field(default_factory=dict)
    first_token_ms: int | None = None

    def elapsed_ms(self, since: float | None = None) -> int:
        return round((time.monotonic() - (self.started if since is None else since)) * 1000)

    def add(self, phase: str, since: float) -> None:
        self.phases[f"{phase}_ms"] = self.phases.get(f"{phase}_ms", 0) + self.elapsed_ms(since)

    def first_token(self) -> None:
        if self.first_token_ms is None:
            self.first_token_ms = self.elapsed_ms()

    def timings(self) -> dict[str, int]:
        timings = {**self.phases, "total_ms": self.elapsed_ms()}
        if self.first_token_ms is not None:
            timings["first_token_ms"] = self.first_token_ms
        return timings


# The share of RESEARCH_RUN_TIMEOUT kept for writing the answer, capped: a default run (300 s) researches
# for 240 s and keeps 60 s for the synthesizer; a short one (2 s) keeps a quarter (0.5 s).
ANSWER_RESERVE_SHARE = 0.25
ANSWER_RESERVE_MAX_S = 60.0


@dataclass(frozen=True)
class Deadline:
    """The run's two deadlines, on the monotonic clock (the one asyncio's timeouts use).

    The hard deadline is `started + timeout_s`: nothing of the run goes on past it. Research (planner
    calls, sub-questions, the quote of the fast path) must end earlier, by the research deadline, leaving
    `reserve_s` for the answer: min(ANSWER_RESERVE_MAX_S, ANSWER_RESERVE_SHARE x timeout). Research cut
    short by it still gets an answer from what was found; an answer cut short by the hard deadline is a
    `DeadlineExceeded`.
    """

    timeout_s: float
    started: float = field(default_factory=time.monotonic)

    @property
    def reserve_s(self) -> float:
        return min(ANSWER_RESERVE_MAX_S, ANSWER_RESERVE_SHARE * self.timeout_s)

    def remaining(self) -> float:
        """Seconds to the hard deadline, never negative."""
        return max(0.0, self.started + self.timeout_s - time.monotonic())

    def research_remaining(self) -> float:
        """Seconds to the research deadline, never negative."""
        return max(0.0, self.started + self.timeout_s - self.reserve_s - time.monotonic())

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0

    @property
    def research_expired(self) -> bool:
        return self.research_remaining() <= 0

    async def within(self, events: AsyncIterable[T]) -> AsyncIterator[T]:
        """`events`, each awaited within the hard deadline; past it, the stream is closed and
        `DeadlineExceeded` raised (after the items already yielded, which stay the caller's).

        The bound is on each step rather than around the caller's loop: a timeout spanning a `yield`
        would cancel whatever the consumer is doing at that moment instead of the stream.
        """
        # The streams bounded here are async generators: closing one closes its HTTP stream now.
        async with aclosing(cast(AsyncGenerator[T, None], aiter(events))) as iterator:
            while True:
                try:
                    async with asyncio.timeout(self.remaining()) as bound:
                        item = await anext(iterator)
                except StopAsyncIteration:
                    return
                except TimeoutError as exc:
                    if bound.expired():
                        raise DeadlineExceeded() from exc
                    raise
                yield item


@dataclass
class RunState:
    """Everything one run accumulates; each node of the pipeline reads and extends it."""

    query: ResearchQuery
    config: ResearchConfig
    today: date
    ledger: UsageLedger = field(default_factory=UsageLedger)
    clock: PhaseClock = field(default_factory=PhaseClock)
    mode: Literal["quick", "research"] = "quick"
    fast_path: bool = False
    analysis_fallback: str | None = None
    quote_fallback: str | None = None
    speculation: SpeculationOutcome | None = None  # the web search started while the analyzer decided
    plan: PlanEvent | None = None
    findings: list[Finding] = field(default_factory=list)
    rounds: list[RoundRecord] = field(default_factory=list)
    trace: list[TraceEntry] = field(default_factory=list)  # one entry per round: confidence, changes, stop
    gap_detector_fallback: str | None = None
    answer: str = ""
    answer_note: str = ""  # shown under the answer: untraced market-data numbers, a low-confidence warning
    # Judged once the answer is final (`summary.judge_answer`), for the note under it and the summary.
    numbers: NumberCheck = field(default_factory=NumberCheck)  # its numbers cited to market data, checked
    confidence: RunConfidence | None = None  # the rounds' evidence summed up; None without rounds
    sources: list[Source] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)  # figures computed from the market data, for the answer
    charts: list[ChartEvent] = field(default_factory=list)  # drawn from the market data, sent before the answer
    citations_dropped: int = 0
    market_payloads: list[dict] = field(default_factory=list)  # the quote of a fast-path answer
    # The quick answer's cited pages the app read itself (a search API's results), by URL, for the check.
    pages: dict[str, str] = field(default_factory=dict)
    deadline: Deadline = field(init=False)  # starts with the state, from `config.run_timeout_s`

    def __post_init__(self) -> None:
        self.deadline = Deadline(self.config.run_timeout_s)

    @property
    def stop_reason(self) -> StopReason | None:
        return self.rounds[-1].stop_reason if self.rounds else None

    @property
    def tokens_used(self) -> float:
        """Tokens of every call so far, as the budget counts them: reasoning tokens are part of the output,
        cached input weighs what it is billed (`ModelUsage.budget_tokens`)."""
        return sum(usage.budget_tokens for usage in self.ledger.by_model.values())

    @property
    def token_budget_spent(self) -> bool:
        budget = self.config.max_tokens_per_run
        return budget is not None and self.tokens_used >= budget

    def pages_read(self) -> dict[str, str]:
        """The text of the pages the run read itself to write from (a search API's results), by URL."""
        return {**self.pages, **{url: text for finding in self.findings for url, text in finding.pages.items()}}


def today_in(timezone: str | None) -> date:
    """Today's date where the user is; the server's date when the zone is unknown."""
    if timezone:
        try:
            return datetime.now(ZoneInfo(timezone)).date()
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return date.today()
