"""What the planner model writes: the analyzer's plan (its sub-questions) and the gap detector's report.

Both are structured outputs (`providers.structured.parse_structured`) in the contract's shape. A field the
model gets wrong is forgiven where it can be: a period field it cannot use is dropped and read from the
question's wording, a score out of range is clamped.
"""

from __future__ import annotations

import logging
from datetime import date
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
)

from datascraper.schemas import DataKind, HistoryInterval, HistoryRange, StatementFrequency, SubQuestionType
from datascraper.trace_schemas import Contradiction

logger = logging.getLogger(__name__)


def _unset_if_unusable(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    """A period field the model got wrong is dropped, not fatal: rejecting it would discard the whole plan,
    while an unset field is read from the question's wording. Case and padding are forgiven first."""
    if isinstance(value, str):
        value = value.strip().lower()
    try:
        return handler(value)
    except ValidationError:
        logger.info("The planner's %s=%r is not usable; it is read from the question instead.", info.field_name, value)
        return None


_LENIENT = WrapValidator(_unset_if_unusable)


class SubQuestion(BaseModel):
    """One sub-question as the query analyzer or the gap detector writes it (the contract's shape).

    `tickers` and `data` are the routing hints of a numerical sub-question: which symbols, and which
    market data (`quote`, `income_statement`, ...) answers it. A question about a company's own disclosures
    (numerical or qualitative) may ask for its filings instead: `filing_text` (with `section`),
    `insider_transactions` or `filings`.
    """

    question: str
    type: SubQuestionType
    tickers: list[str] = Field(default_factory=list)
    data: DataKind | None = None
    section: Annotated[str | None, _LENIENT] = Field(
        default=None,
        description="filing_text: risk_factors, mdna, legal_proceedings, market_risk, business, segment_note, "
        "or an 8-K item number such as 2.02 (results of operations); null: read from the question.",
    )
    # The periods a numerical sub-question needs, resolved against today's date; unset is the tool's default.
    # `research_engine.periods` validates them (and reads unset ones from the question's wording).
    frequency: Annotated[StatementFrequency | None, _LENIENT] = Field(
        default=None, description="Statements: annual, quarterly, or ttm (trailing twelve months)."
    )
    periods: Annotated[int | None, _LENIENT] = Field(
        default=None, description="Statements and earnings: how many periods, newest first."
    )
    period: Annotated[HistoryRange | None, _LENIENT] = Field(
        default=None, description="Price history: a range ending today; leave null when start/end are given."
    )
    start: Annotated[date | None, _LENIENT] = Field(default=None, description="First day, inclusive (YYYY-MM-DD).")
    end: Annotated[date | None, _LENIENT] = Field(default=None, description="Last day, inclusive (YYYY-MM-DD).")
    interval: Annotated[HistoryInterval | None, _LENIENT] = Field(default=None, description="Price history bars.")
    limit: Annotated[int | None, _LENIENT] = Field(default=None, description="News: how many items.")
    fiscal_period: Annotated[str | None, _LENIENT] = Field(
        default=None,
        description="Statements and earnings: the company's fiscal period as the question names it, such as "
        "'Q3 FY2025', 'FY2024' or 'FY2022-FY2024'; null for calendar periods. Its months come from the "
        "company's fiscal calendar, so it wins over start/end.",
    )


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
    contradictions: list[Contradiction] = Field(default_factory=list)

    @field_validator("score")
    @classmethod
    def _clamp_score(cls, score: float) -> float:
        # Clamped rather than rejected: a 10.5 is still a usable verdict, not a reason to stop researching.
        return min(10.0, max(0.0, score))
