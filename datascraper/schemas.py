"""Typed structures that travel between the research modules and out to the chat app.

The research pipeline is an async generator of `ResearchEvent`s; `chat` stores and publishes them.
Field names of the public events match the run events of the contract, so `event.payload()` is what a
client receives as the SSE `data:`.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, Field, field_validator

Mode = Literal["auto", "quick", "research"]
Phase = Literal["analyzing", "researching", "evaluating", "synthesizing"]
SubQuestionType = Literal["numerical", "qualitative", "analytical"]
Route = Literal["market_data", "web_search", "synthesis"]
SourceKind = Literal["web", "market_data"]
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


class ModelUsage(BaseModel):
    """Calls and tokens spent on one model."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0

    def add(self, other: ModelUsage) -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.reasoning_tokens += other.reasoning_tokens


class UsageLedger(BaseModel):
    """Usage of one run, by model name."""

    by_model: dict[str, ModelUsage] = Field(default_factory=dict)

    def record(self, model: str, usage: ModelUsage) -> None:
        self.by_model.setdefault(model, ModelUsage()).add(usage)

    @property
    def calls(self) -> int:
        return sum(u.calls for u in self.by_model.values())


# --- model outputs: the analyzer's plan and the gap detector's report -----------------------------


class SubQuestion(BaseModel):
    """One sub-question as the query analyzer or the gap detector writes it (the contract's shape).

    `tickers` and `data` are the routing hints of a numerical sub-question: which symbols, and which
    market data (`quote`, `income_statement`, ...) answers it.
    """

    question: str
    type: SubQuestionType
    tickers: list[str] = Field(default_factory=list)
    data: MarketDataKind | None = None


class QueryAnalysis(BaseModel):
    """The query analyzer's verdict: answer directly, or research these sub-questions."""

    needs_decomposition: bool
    sub_questions: list[SubQuestion] = Field(default_factory=list)


class GapReport(BaseModel):
    """The gap detector's verdict on the findings so far."""

    complete: bool
    score: float = Field(description="How completely the findings answer the question, 0 to 10.")
    gaps: list[str] = Field(default_factory=list)
    follow_up_queries: list[SubQuestion] = Field(default_factory=list)

    @field_validator("score")
    @classmethod
    def _clamp_score(cls, score: float) -> float:
        # Clamped rather than rejected: a 10.5 is still a usable verdict, not a reason to stop researching.
        return min(10.0, max(0.0, score))


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


class StepEvent(_Event):
    type: Literal["step"] = "step"
    sub_question_id: str
    state: Literal["started", "done", "failed", "fallback"]
    route: Literal["market_data", "web_search"]
    elapsed_ms: int = 0


class RoundEvent(_Event):
    type: Literal["round"] = "round"
    n: int
    complete: bool
    gaps: list[str] = Field(default_factory=list)
    follow_ups: list[str] = Field(default_factory=list)


class DeltaEvent(_Event):
    type: Literal["delta"] = "delta"
    text: str


class SourcesEvent(_Event):
    type: Literal["sources"] = "sources"
    sources: list[Source]


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


class CheckpointEvent(_Event):
    """The research so far (the plan and every finished round), as JSON the caller stores and hands back
    as `run_research(..., resume_from=...)`: a resumed run goes on from there without asking again.
    Not sent to clients."""

    type: Literal["checkpoint"] = "checkpoint"
    state: dict


ResearchEvent = Annotated[
    Union[StatusEvent, PlanEvent, StepEvent, RoundEvent, DeltaEvent, SourcesEvent, RunSummary, CheckpointEvent],
    Field(discriminator="type"),
]
