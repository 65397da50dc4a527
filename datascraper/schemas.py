"""Typed structures that travel between the research modules and out to the chat app: the question asked,
the vocabulary of data kinds and routes, sources, computed facts, usage, and the run's events.

The research pipeline is an async generator of `ResearchEvent`s; `chat` stores and publishes them.
Field names of the public events match the run events of the contract, so `event.payload()` is what a
client receives as the SSE `data:`. What the planner model writes is in `plan_schemas`; how far the
findings can be trusted, round by round, in `trace_schemas`.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, Field, ValidationInfo, field_validator
from typing_extensions import TypeIs

from datascraper.trace_schemas import Contradiction, RunConfidence, StopReason, TraceEntry

Mode = Literal["auto", "quick", "research"]
Phase = Literal["analyzing", "researching", "evaluating", "synthesizing"]
SubQuestionType = Literal["numerical", "qualitative", "analytical"]
Route = Literal["market_data", "web_search", "synthesis"]
SourceKind = Literal["web", "market_data", "filing"]
# Who publishes a web source, as `research_engine.source_types` classifies its address.
DomainType = Literal["regulator", "exchange", "company_ir", "government", "academic", "major_news", "blog", "other"]
MarketDataKind = Literal[
    "quote",
    "price_history",
    "income_statement",
    "balance_sheet",
    "cash_flow",
    "earnings",
    "analyst_ratings",
    "company_profile",
    "news",
]
# What the SEC's filings answer beyond reported figures (which statements ask for beside Yahoo's): a section
# of the filing's text, Form 4 insider trades, the company's list of filings (8-K items included).
FilingDataKind = Literal["filing_text", "insider_transactions", "filings"]
DataKind = MarketDataKind | FilingDataKind
FILING_DATA: frozenset[str] = frozenset(get_args(FilingDataKind))


def is_filing_data(data: DataKind | None) -> TypeIs[FilingDataKind]:
    return data in FILING_DATA


StatementFrequency = Literal["annual", "quarterly", "ttm"]
# The relative ranges the analyzer may ask price history for (the contract's; the tool takes a few more).
HistoryRange = Literal["5d", "1mo", "3mo", "6mo", "ytd", "1y", "5y", "max"]
HistoryInterval = Literal["1m", "2m", "5m", "15m", "30m", "60m", "90m", "1h", "1d", "5d", "1wk", "1mo", "3mo"]


class ChatTurn(BaseModel):
    """One earlier message of the conversation, given to the models as context."""

    role: Literal["user", "assistant"]
    content: str


class ResearchQuery(BaseModel):
    """What the chat app asks the research router."""

    question: str
    mode: Mode = "auto"
    history: list[ChatTurn] = Field(default_factory=list)
    timezone: str | None = None


class Source(BaseModel):
    """A numbered source of an answer; `[n]` markers in the text resolve to `n`."""

    n: int
    title: str
    url: str
    kind: SourceKind
    # Market data only: the time its figures describe (ISO date, or date-time for a quote or intraday
    # bars). Left out of the JSON when unset, as the contract's optional fields are.
    as_of: str | None = Field(default=None, exclude_if=lambda value: value is None)
    # Web only, where known: the day the page was published (read from its address; the search tool's
    # annotations carry no date) and who publishes it. Left out of the JSON when unknown.
    published: date | None = Field(default=None, exclude_if=lambda value: value is None)
    domain_type: DomainType | None = Field(default=None, exclude_if=lambda value: value is None)
    # Web only: the publisher's domain when `url` does not name it, a search tool's redirect to the page
    # (Gemini's grounding links all live on Google's host); who publishes the page is judged by it.
    site: str | None = Field(default=None, exclude_if=lambda value: value is None)
    # Filings only (`kind: "filing"`): the SEC form (10-K, 10-Q, 8-K, 4, ...), the period it reports on (its
    # fiscal label, "FY2024" or "Q1 FY2025", or the event's or trade's day for an 8-K or a Form 4) and the
    # day it was filed.
    form: str | None = Field(default=None, exclude_if=lambda value: value is None)
    period: str | None = Field(default=None, exclude_if=lambda value: value is None)
    filed: date | None = Field(default=None, exclude_if=lambda value: value is None)


FactKind = Literal["growth", "yoy_growth", "cagr", "change", "difference", "margin", "ratio"]


class FactSource(BaseModel):
    """The market data page an input of a fact comes from; `n` is its number in the answer's sources."""

    title: str
    url: str
    n: int | None = None


class DerivedInput(BaseModel):
    """How an input that no filing reported as such was derived from two filed figures (a fourth quarter:
    the fiscal year less its first nine months): the input's `source` is the whole period's filing,
    `earlier_source` the filing of the months subtracted."""

    formula: str = Field(
        description="E.g. 'FY2025 416,161,000,000 (10-K filed 2025-10-31) less nine months to Q3 FY2025 "
        "313,695,000,000 (10-Q filed 2025-08-01)'."
    )
    earlier_source: FactSource


class FactInput(BaseModel):
    """One value a fact was computed from, as the market data tool returned it."""

    symbol: str
    line: str = Field(description="The line item or field, e.g. TotalRevenue, close, eps_reported.")
    period: str = Field(description="The period end (ISO date) or the date the value describes.")
    value: float
    source: FactSource
    # A quarter the filings bear out only by difference; left out of the JSON for any other input.
    derived: DerivedInput | None = Field(default=None, exclude_if=lambda value: value is None)


class Fact(BaseModel):
    """A figure computed in code from market data (`datascraper.research_engine.facts`), with its inputs.

    `value` is None when the figure is not meaningful (a zero or negative base); `note` then says why.
    Percentages are in percent (2.02 is 2.02%).
    """

    id: str
    label: str
    value: float | None
    unit: str = Field(description="percent, percentage points, ratio, or a currency code.")
    kind: FactKind
    formula: str
    inputs: list[FactInput]
    note: str | None = None


# Cached input is billed at a tenth of the input price by the provider's current models, so it weighs a
# tenth in a run's token budget.
CACHED_INPUT_WEIGHT = 0.1


class ModelUsage(BaseModel):
    """Calls, tokens and hosted web searches spent on one model.

    `cached_tokens` are part of `input_tokens` (the provider's own accounting), and `reasoning_tokens` part of
    `output_tokens`; `web_search_calls` are billed per search, apart from tokens.
    """

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0
    web_search_calls: int = 0

    def add(self, other: ModelUsage) -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.reasoning_tokens += other.reasoning_tokens
        self.cached_tokens += other.cached_tokens
        self.web_search_calls += other.web_search_calls

    @property
    def budget_tokens(self) -> float:
        """The tokens this usage counts for in a run's budget: cached input at its billed weight."""
        fresh_input = self.input_tokens - self.cached_tokens
        return fresh_input + self.cached_tokens * CACHED_INPUT_WEIGHT + self.output_tokens


class UsageLedger(BaseModel):
    """Usage of one run: by model name, and the search API calls by search provider (`SEARCH_PROVIDER`),
    which are billed per search as the hosted tool's are (those are the research model's `web_search_calls`)."""

    by_model: dict[str, ModelUsage] = Field(default_factory=dict)
    search_calls: dict[str, int] = Field(default_factory=dict)

    def record(self, model: str, usage: ModelUsage) -> None:
        self.by_model.setdefault(model, ModelUsage()).add(usage)

    def record_search(self, provider: str) -> None:
        """One search a search API answered (a refused or failed attempt is not counted)."""
        self.search_calls[provider] = self.search_calls.get(provider, 0) + 1

    @property
    def calls(self) -> int:
        return sum(u.calls for u in self.by_model.values())


# --- events -----------------------------------------------------------------------------------------


class _Event(BaseModel):
    def payload(self) -> dict:
        """The SSE `data:` of this event."""
        return self.model_dump(mode="json", exclude={"type"})


class StatusEvent(_Event):
    type: Literal["status"] = "status"
    phase: Phase
    label: str
    detail: str = ""


class PlannedSubQuestion(BaseModel):
    id: str
    question: str
    type: SubQuestionType
    route: Route


class PlanEvent(_Event):
    type: Literal["plan"] = "plan"
    needs_decomposition: bool
    sub_questions: list[PlannedSubQuestion] = Field(default_factory=list)


StepState = Literal["started", "done", "failed", "fallback"]
StepRoute = Literal["market_data", "web_search"]


class StepEvent(_Event):
    type: Literal["step"] = "step"
    sub_question_id: str
    state: StepState
    route: StepRoute
    elapsed_ms: int = 0
    # A web search step's answering model, with its provider (`openai:gpt-5.4`); None for market data.
    model: str | None = None


class RoundEvent(_Event):
    """The end of a research round: the gap detector's verdict and the round's trace entry."""

    type: Literal["round"] = "round"
    n: int
    complete: bool
    gaps: list[str] = Field(default_factory=list)
    follow_ups: list[str] = Field(default_factory=list)
    confidence: float = 0.0
    shallow: bool = False
    new_sources: int = 0
    weak_areas: list[str] = Field(default_factory=list)
    contradictions: list[Contradiction] = Field(default_factory=list)
    stop_reason: StopReason | None = None


class DeltaEvent(_Event):
    type: Literal["delta"] = "delta"
    text: str


class SourcesEvent(_Event):
    type: Literal["sources"] = "sources"
    sources: list[Source]


class SubUnit(BaseModel):
    """The hundredth of a currency an exchange quotes prices in: London's pence (GBp), Johannesburg's cents
    (ZAc), Tel Aviv's agorot (ILA). Prices travel in the main unit (pounds, rand, shekels), so that amounts
    compare and a market cap is never 100x; a reader is shown both, the exchange's unit first."""

    code: str = Field(description="Yahoo's code for the quote currency: GBp, ZAc, ILA.")
    name: str = Field(description="What a reader calls it: pence, cents, agorot.")
    suffix: str = Field(description="Written after an amount in it: p, c, ' agorot'.")
    main: str = Field(description="The main currency: GBP, ZAR, ILS.")
    main_symbol: str = Field(description="Written before an amount in the main currency: £, R, ₪.")
    per_main: int = 100

    def shown(self, value: float) -> str:
        """An amount in the main unit as the exchange's readers read it: 72.50p (£0.7250), -1.20p (-£0.0120)."""
        sign, magnitude = ("-" if value < 0 else ""), abs(value)
        return f"{sign}{magnitude * self.per_main:,.2f}{self.suffix} ({sign}{self.main_symbol}{magnitude:,.4f})"


class ChartSeries(BaseModel):
    """One line or one set of bars: `points` are `[x, y]`, x an ISO date or a period label ("2025-Q1",
    "Q3 FY2026 (Jan–Mar 2026)"), oldest first. `source_n` is the series' own source (a comparison draws
    several).

    `ends` says when each point is, in the order of `points`: a period's end (ISO date), a price bar's date
    (its x). A period label does not sort as text ("Q1 FY2027" would come before "Q3 FY2026"), so a client
    that merges the periods of several series orders them by their ends. None on a chart stored before
    ends were sent; left out of the event then."""

    name: str
    source_n: int
    points: list[tuple[str, float]]
    ends: list[str] | None = Field(default=None, exclude_if=lambda value: value is None)

    @field_validator("ends")
    @classmethod
    def _one_end_per_point(cls, ends: list[str] | None, info: ValidationInfo) -> list[str] | None:
        points = info.data.get("points")
        if ends is not None and points is not None and len(ends) != len(points):
            raise ValueError(f"{len(ends)} ends for {len(points)} points")
        return ends


class Chart(BaseModel):
    """Figures of the run's market data to draw, straight from the tool output; `source_n` numbers the
    source of the first series in the answer's `sources`. The run keeps them, so a reopened answer draws
    them again."""

    id: str
    title: str
    kind: Literal["line", "bars"]
    unit: str
    as_of: str
    source_n: int
    series: list[ChartSeries]
    sub_unit: SubUnit | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Set for prices of a listing quoted in a hundredth of `unit` (pence for GBP): the points are "
        "in `unit`, and a reader is shown both. Left out otherwise, so a chart stored before it reads back as stored.",
    )


class ChartEvent(Chart, _Event):
    """A `Chart`, sent before the answer's text."""

    type: Literal["chart"] = "chart"


class CitationCheck(BaseModel):
    """Whether one `[n]` marker of the answer is borne out by its source (`datascraper.citations`).

    `marker_index` is the marker's position among the answer's `[n]` markers, from 0, so a client can
    mark that very marker; `evidence` is a short passage of the source where the check found the claim;
    `reason` says why an `unreachable` one's source could not be read (the fetcher's code: `http_403`,
    `timeout`, `deadline`, ...; see `citations.fetcher.PageUnreachable`).
    """

    n: int
    marker_index: int
    status: Literal["supported", "unsupported", "unreachable"]
    evidence: str | None = Field(default=None, exclude_if=lambda value: value is None)
    reason: str | None = Field(default=None, exclude_if=lambda value: value is None)


class VerificationEvent(_Event):
    """The answer's citations, checked against their sources; sent after the answer's last delta."""

    type: Literal["verification"] = "verification"
    citations: list[CitationCheck]


class RunSummary(_Event):
    """The last event of a successful pipeline: what the chat app stores on the run. Not sent to clients."""

    type: Literal["summary"] = "summary"
    mode: Literal["quick", "research"]
    answer: str
    sources: list[Source] = Field(default_factory=list)
    plan: dict = Field(default_factory=dict)
    rounds: list[dict] = Field(default_factory=list)
    timings: dict[str, int] = Field(default_factory=dict)
    usage: UsageLedger = Field(default_factory=UsageLedger)
    signals: dict = Field(default_factory=dict)
    facts: list[Fact] = Field(default_factory=list)
    charts: list[ChartEvent] = Field(default_factory=list)  # as sent, so a reopened answer draws them again
    verification: list[CitationCheck] = Field(default_factory=list)  # empty when not verified
    confidence: RunConfidence | None = None  # research runs only
    trace: list[TraceEntry] = Field(default_factory=list)


class CheckpointEvent(_Event):
    """The research so far (the plan and every finished round), as JSON the caller stores and hands back
    as `run_research(..., resume_from=...)`: a resumed run goes on from there without asking again.
    Not sent to clients."""

    type: Literal["checkpoint"] = "checkpoint"
    state: dict


ResearchEvent = Annotated[
    StatusEvent
    | PlanEvent
    | StepEvent
    | RoundEvent
    | DeltaEvent
    | SourcesEvent
    | ChartEvent
    | VerificationEvent
    | RunSummary
    | CheckpointEvent,
    Field(discriminator="type"),
]
