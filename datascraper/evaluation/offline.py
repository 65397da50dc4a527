"""Deterministic checks of one run, for the rows CI runs against the fakes (no judge, no network).

A row's `offline` block scripts the model's side of the run (the analyzer's plan, the gap detector's
verdicts, what web searches and the synthesis write) and states what must hold of the run the real code
makes of it: the path and routes taken, the periods fetched from market data, every number cited to market
data matching a value it returned or a computed fact (`signals["numbers"]`), every `[n]` resolving to a
source, and for a row run with the SEC's filings (`sec`), the filings among its sources. The scripting
itself is done by the test that runs the rows (the fakes live under `tests/`); here are the row's data,
what a run is observed to do, and the comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from datascraper.market_data.finding_schemas import ToolResult
from datascraper.market_data.schemas import PriceHistory
from datascraper.market_data.statement_schemas import Earnings, FinancialStatement
from datascraper.plan_schemas import GapReport, QueryAnalysis
from datascraper.research_engine.state import ResearchCheckpoint
from datascraper.schemas import CheckpointEvent, PlanEvent, Route, RunSummary


class OfflineSentence(BaseModel):
    """A sentence a scripted web search writes, with the pages it cites as `(url, title)`."""

    text: str
    cites: list[tuple[str, str]] = Field(default_factory=list)


class OfflineExpectation(BaseModel):
    """What must hold of the run. Unset fields are not checked; citations must always resolve.

    `periods` maps `"SYMBOL tool"` (statements: `"AAPL income quarterly"`; earnings: `"AAPL earnings"`;
    price history: `"AAPL history"`) to the period ends fetched for the question, newest first, as ISO dates
    (history: its first and last bar).
    """

    mode: Literal["quick", "research"] | None = None
    fast_path: bool | None = None
    routes: dict[str, Route] | None = Field(default=None, description="Sub-question id -> planned route.")
    fallbacks: int | None = 0
    periods: dict[str, list[str]] | None = None
    min_numbers_checked: int = 0
    max_numbers_unmatched: int = 0
    filings: list[str] | None = Field(
        default=None, description="The filings among the answer's sources, as 'form period' ('10-Q Q3 FY2025')."
    )


class OfflineScript(BaseModel):
    """The model's side of an offline run, and what must hold of it."""

    analysis: QueryAnalysis | None = None
    gaps: list[GapReport] = Field(default_factory=list)
    web: list[OfflineSentence] = Field(default_factory=list)
    answer: list[str] = Field(default_factory=list, description="The synthesis' sentences, with [n] markers.")
    sec: bool = Field(default=False, description="Run with the SEC filing tools configured (the fake SEC).")
    expect: OfflineExpectation = Field(default_factory=OfflineExpectation)


class RunObservation(BaseModel):
    """What a run did, as far as the offline checks look: read from its events, not from its internals."""

    mode: str
    fast_path: bool
    routes: dict[str, Route]
    fallbacks: int
    periods: dict[str, list[str]]
    numbers: dict[str, Any]
    citations: dict[str, Any]
    filings: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, events: Sequence[object]) -> RunObservation:
        summary = events[-1]
        if not isinstance(summary, RunSummary):
            raise ValueError("a run's events end with its RunSummary")
        plans = [event for event in events if isinstance(event, PlanEvent)]
        checkpoints = [event for event in events if isinstance(event, CheckpointEvent)]
        routes = {sq.id: sq.route for plan in plans for sq in plan.sub_questions}
        periods: dict[str, list[str]] = {}
        if checkpoints:
            checkpoint = ResearchCheckpoint.model_validate(checkpoints[-1].state)
            for finding in checkpoint.findings:
                if finding.market_data is not None:
                    for result in finding.market_data.results:
                        key, fetched = periods_fetched(result)
                        if key is not None:
                            periods[key] = fetched
        signals = summary.signals
        return cls(
            mode=summary.mode,
            fast_path=bool(signals.get("fast_path")),
            routes=routes,
            fallbacks=int(signals.get("fallbacks") or 0),
            periods=periods,
            numbers=signals.get("numbers") or {},
            citations=signals.get("citations") or {},
            filings=[f"{s.form} {s.period}" for s in summary.sources if s.kind == "filing"],
        )


def periods_fetched(result: ToolResult) -> tuple[str | None, list[str]]:
    """The key and periods of one market data result; quotes, profiles, ratings and news have none."""
    payload = result.result()
    if isinstance(payload, FinancialStatement):
        key = f"{result.symbol} {payload.statement} {payload.frequency}"
        return key, [period_end.isoformat() for period_end in payload.asked_periods]
    if isinstance(payload, Earnings):
        return f"{result.symbol} earnings", [event.date.date().isoformat() for event in payload.asked_reported]
    if isinstance(payload, PriceHistory):
        if not payload.bars:
            return f"{result.symbol} history", []
        first, last = payload.bars[0].date.date(), payload.bars[-1].date.date()
        return f"{result.symbol} history", [first.isoformat(), last.isoformat()]
    return None, []


def check_run(observation: RunObservation, expect: OfflineExpectation) -> list[str]:
    """Each way the run departs from what the row expects, as a sentence; empty when the row holds."""
    failures = []
    if expect.mode is not None and observation.mode != expect.mode:
        failures.append(f"took the {observation.mode} path, expected {expect.mode}")
    if expect.fast_path is not None and observation.fast_path != expect.fast_path:
        failures.append(f"fast path was {observation.fast_path}, expected {expect.fast_path}")
    if expect.routes is not None and observation.routes != expect.routes:
        failures.append(f"routes were {observation.routes}, expected {expect.routes}")
    if expect.fallbacks is not None and observation.fallbacks != expect.fallbacks:
        failures.append(f"{observation.fallbacks} fallbacks, expected {expect.fallbacks}")
    if expect.periods is not None and observation.periods != expect.periods:
        failures.append(f"periods fetched were {observation.periods}, expected {expect.periods}")
    checked = int(observation.numbers.get("checked") or 0)
    unmatched = int(observation.numbers.get("unmatched") or 0)
    if checked < expect.min_numbers_checked:
        failures.append(
            f"{checked} numbers checked against market data, expected at least {expect.min_numbers_checked}"
        )
    if unmatched > expect.max_numbers_unmatched:
        values = [item.get("value") for item in observation.numbers.get("unmatched_values") or []]
        failures.append(f"{unmatched} numbers match no tool value nor computed fact: {values}")
    if expect.filings is not None and observation.filings != expect.filings:
        failures.append(f"the filings cited were {observation.filings}, expected {expect.filings}")
    unresolved = int(observation.citations.get("unresolved") or 0)
    if unresolved:
        failures.append(f"{unresolved} of {observation.citations.get('markers')} [n] markers name no source")
    return failures
