"""Questions through the research pipeline, a few at once, each result logged as soon as it is graded.

The same entry point as the API (`run_research`), so an evaluation measures what users get. Rows already
in the results log (the same id asking the same question: `results.row_key`) are skipped: an interrupted
evaluation, run again, goes on where it stopped, and a row whose question was edited since runs again.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from datascraper.errors import ResearchError
from datascraper.evaluation.judge import Judge
from datascraper.evaluation.pricing import estimate_cost, usage_cost
from datascraper.evaluation.questions import EvalQuestion
from datascraper.evaluation.results import EvalResult, ResultLog, RunMeasures, must_pass_failures, row_key
from datascraper.research_engine import run_research
from datascraper.schemas import ModelUsage, ResearchQuery, RunSummary, UsageLedger

Research = Callable[[ResearchQuery], AsyncIterator[Any]]
DEFAULT_CONCURRENCY = 2


@dataclass(frozen=True)
class EvaluationProgress:
    """Where an evaluation stands after a result: `done` of `total` to run now, `skipped` logged before."""

    result: EvalResult
    done: int
    total: int
    skipped: int


async def run_evaluation(
    questions: Sequence[EvalQuestion],
    log: ResultLog,
    *,
    judge: Judge | None,
    concurrency: int = DEFAULT_CONCURRENCY,
    research: Research = run_research,
    on_result: Callable[[EvaluationProgress], None] | None = None,
) -> list[EvalResult]:
    """Run and grade every question not yet in `log`, at most `concurrency` at once; returns the new results
    in the order they finished. `judge=None` leaves answers ungraded."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    done_before = log.done_keys()
    pending = [question for question in questions if row_key(question) not in done_before]
    skipped = len(questions) - len(pending)
    slots = asyncio.Semaphore(concurrency)
    finished: list[EvalResult] = []

    async def one(question: EvalQuestion) -> None:
        async with slots:
            result = await evaluate_question(question, judge=judge, research=research)
        log.append(result)
        finished.append(result)
        if on_result is not None:
            on_result(EvaluationProgress(result, len(finished), len(pending), skipped))

    async with asyncio.TaskGroup() as group:
        for question in pending:
            group.create_task(one(question))
    return finished


async def evaluate_question(
    question: EvalQuestion, *, judge: Judge | None, research: Research = run_research
) -> EvalResult:
    """One question: its run through the pipeline, measured, then graded when it was answered."""
    started = time.monotonic()
    summary: RunSummary | None = None
    error: ResearchError | None = None
    try:
        async for event in research(ResearchQuery(question=question.question, mode=question.mode)):
            if isinstance(event, RunSummary):
                summary = event
    except ResearchError as exc:
        error, summary = exc, exc.summary
    latency_ms = round((time.monotonic() - started) * 1000)
    result = EvalResult(
        id=question.id,
        question=question.question,
        category=question.category,
        status="error" if error is not None or summary is None else "answered",
        error_code=error.code if error is not None else (None if summary is not None else "no_summary"),
        error_message=error.message if error is not None else None,
        mode=summary.mode if summary is not None else None,
        answer=summary.answer if summary is not None and error is None else "",
        sources=len(summary.sources) if summary is not None else 0,
        measures=measures_of(summary, latency_ms),
        finished_at=datetime.now(UTC),
    )
    if judge is not None and result.status == "answered":
        result.judge_model = judge.model
        ledger = UsageLedger()
        try:
            result.judge = await judge.grade(question, result.answer, ledger)
        except ResearchError as exc:
            result.judge_error = exc.code
        else:
            result.must_pass_failed = must_pass_failures(question.rubric, result.judge)
        result.judge_usage = ledger.by_model.get(judge.model, ModelUsage())
        result.judge_cost_usd = usage_cost(judge.model, result.judge_usage)
    return result


def measures_of(summary: RunSummary | None, latency_ms: int) -> RunMeasures:
    """The report's figures of one run, read from its summary (a failed run's, when the pipeline kept one)."""
    if summary is None:
        return RunMeasures(latency_ms=latency_ms)
    signals = summary.signals
    routes = {"market_data": int(signals.get("market_data_hits") or 0), "web_search": int(signals.get("web_hits") or 0)}
    return RunMeasures(
        latency_ms=latency_ms,
        usage=summary.usage,
        cost_usd=estimate_cost(summary.usage),
        rounds=len(summary.rounds),
        routes={route: count for route, count in routes.items() if count},
        fallbacks=int(signals.get("fallbacks") or 0),
        confidence=summary.confidence.score if summary.confidence is not None else None,
        citations=dict(Counter(check.status for check in summary.verification)),
        citations_checked=signals.get("verification") is not None,
        markers_unresolved=int((signals.get("citations") or {}).get("unresolved") or 0),
        numbers_unmatched=int((signals.get("numbers") or {}).get("unmatched") or 0),
    )
