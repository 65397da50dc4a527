"""Helpers for the evaluation tests: rows, run summaries and results as a run would make them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

from datascraper.evaluation.questions import EvalQuestion, RubricItem
from datascraper.evaluation.results import EvalResult, JudgeVerdict, RunMeasures, Verdict
from datascraper.schemas import CitationCheck, ModelUsage, ResearchQuery, RunSummary, StatusEvent, UsageLedger
from datascraper.trace_schemas import RunConfidence
from tests.fakes.openai_server import RecordedRequest


def question(id: str = "aapl-fy2024", **fields: object) -> EvalQuestion:
    defaults: dict[str, object] = {
        "question": "What was Apple's total net sales in fiscal 2024?",
        "reference": "$391.04 billion for the fiscal year ended 2024-09-28.",
        "rubric": [RubricItem(operator="correctness", criteria="391.0 billion")],
        "as_of": "2024-11-01",
        "category": "statement",
    }
    return EvalQuestion(id=id, **{**defaults, **fields})


def confidence(score: float) -> RunConfidence:
    return RunConfidence(
        score=score, coverage=score, credibility=score, diversity=score, evidence=score, consistency=score,
        shallow=False, threshold=0.75, rounds=1, progression=[score], refinements=0, uncertain=[], summary="",
    )  # fmt: skip


def summary(answer: str = "Apple's net sales were $391.04 billion [1].", *, score: float | None = 0.82) -> RunSummary:
    ledger = UsageLedger()
    ledger.record("gpt-5.4-mini", ModelUsage(calls=2, input_tokens=1_000, output_tokens=200))
    ledger.record("gpt-5.4", ModelUsage(calls=1, input_tokens=3_000, output_tokens=500, cached_tokens=1_000, web_search_calls=2))
    return RunSummary(
        mode="research" if score is not None else "quick",
        answer=answer,
        rounds=[{"n": 1, "sub_questions": ["q1"]}] if score is not None else [],
        usage=ledger,
        signals={
            "market_data_hits": 1,
            "web_hits": 1,
            "fallbacks": 0,
            "citations": {"markers": 1, "resolved": 1, "unresolved": 0},
            "numbers": {"checked": 1, "unmatched": 0},
            "verification": {"checked": 2},
        },
        verification=[
            CitationCheck(n=1, marker_index=0, status="supported"),
            CitationCheck(n=2, marker_index=1, status="unsupported"),
        ],
        confidence=confidence(score) if score is not None else None,
    )


def router(
    answer_for: Callable[[str], RunSummary | Exception], *, delay_s: float = 0.0, seen: list[str] | None = None
) -> Callable[[ResearchQuery], AsyncIterator[object]]:
    """A stand-in for `run_research`: each question's summary (or failure) from `answer_for`."""

    async def research(query: ResearchQuery) -> AsyncIterator[object]:
        if seen is not None:
            seen.append(query.question)
        yield StatusEvent(phase="analyzing", label="Reading the question")
        await asyncio.sleep(delay_s)
        outcome = answer_for(query.question)
        if isinstance(outcome, Exception):
            raise outcome
        yield outcome

    return research


def result(
    id: str,
    verdict: Verdict | None = "correct",
    *,
    latency_ms: int = 10_000,
    cost_usd: float | None = 0.05,
    confidence: float | None = 0.8,
    status: str = "answered",
) -> EvalResult:
    judge = JudgeVerdict(criteria=[], verdict=verdict, explanation="") if verdict is not None else None
    return EvalResult(
        id=id,
        question=f"question {id}",
        status=status,  # type: ignore[arg-type]
        error_code="upstream_timeout" if status == "error" else None,
        answer="" if status == "error" else "an answer",
        measures=RunMeasures(
            latency_ms=latency_ms,
            usage=UsageLedger(by_model={"gpt-5.4": ModelUsage(calls=1, input_tokens=900, output_tokens=100)}),
            cost_usd=cost_usd,
            confidence=confidence,
        ),
        judge=judge,
        finished_at=datetime(2026, 11, 26, tzinfo=UTC),
    )


def is_judge(request: RecordedRequest) -> bool:
    """The judge's call: a structured output with the JudgeVerdict schema."""
    return request.is_structured and (request.text_format or {}).get("name") == "JudgeVerdict"
