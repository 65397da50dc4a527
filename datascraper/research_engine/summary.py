"""The run's wrap-up: the final answer judged once, and the summary the chat app stores on the run.

The answer's numbers cited to market data are checked (`evidence.number_check`) and the rounds' evidence
confidence summed up (`trace.run_confidence`) before the note under the answer is written; the summary
carries both, with the quality signals (`quality_logger`), which are logged here for failed runs too.
"""

from __future__ import annotations

from datascraper.citations import Verification
from datascraper.quality_logger import RunRecord, SubQuestionOutcome, compute_signals, log_signals
from datascraper.research_engine.bypass import QUOTE_STEP_ID
from datascraper.research_engine.evidence import number_check
from datascraper.research_engine.state import RunState
from datascraper.research_engine.trace import run_confidence
from datascraper.schemas import RunSummary


def judge_answer(state: RunState) -> None:
    """Check the final answer's numbers and sum up the run's confidence, once: the note under the answer
    and the summary (its signals included) both read them from the state."""
    state.numbers = number_check(state)
    state.confidence = run_confidence(state.trace, state.config.confidence_threshold)


def summarize(state: RunState, *, error: str | None = None, verification: Verification | None = None) -> RunSummary:
    """What the chat app stores on the run; the quality signals are logged here, for failed runs too.
    `verification` is None when citations were not checked (CITATION_VERIFY=0, a failed run, or the
    check failed)."""
    timings = state.clock.timings()
    signals = compute_signals(run_record(state, timings))
    signals["error"] = error
    signals["confidence"] = state.confidence.score if state.confidence is not None else None
    signals["verification"] = verification.signal() if verification is not None else None
    log_signals(signals)
    return RunSummary(
        mode=state.mode,
        answer=state.answer + state.answer_note,
        sources=state.sources,
        plan=state.plan.payload() if state.plan is not None else {},
        rounds=[record.model_dump(mode="json") for record in state.rounds],
        timings=timings,
        usage=state.ledger,
        signals=signals,
        facts=state.facts,
        charts=state.charts,
        confidence=state.confidence,
        trace=state.trace,
        verification=verification.citations if verification is not None else [],
    )


def run_record(state: RunState, timings: dict[str, int]) -> RunRecord:
    outcomes = [
        SubQuestionOutcome(
            id=finding.step.id,
            type=finding.step.type,
            planned_route=finding.step.route,
            route=finding.route,
            status=finding.status,
            fallback_reason=finding.fallback_reason,
            error=finding.error,
            from_filings=finding.filings is not None,
        )
        for finding in state.findings
    ]
    if state.fast_path:
        outcomes.append(
            SubQuestionOutcome(
                id=QUOTE_STEP_ID,
                type="numerical",
                planned_route="market_data",
                route="market_data" if state.quote_fallback is None else "web_search",
                status="answered",
                fallback_reason=state.quote_fallback,
            )
        )
    return RunRecord(
        requested_mode=state.query.mode,
        mode=state.mode,
        fast_path=state.fast_path,
        analysis_fallback=state.analysis_fallback,
        quote_fallback=state.quote_fallback,
        speculation=state.speculation,
        outcomes=outcomes,
        rounds=len(state.rounds),
        max_rounds=state.config.max_iterations,
        stop_reason=state.stop_reason,
        gap_detector_fallback=state.gap_detector_fallback,
        timings=timings,
        usage=state.ledger,
        answer=state.answer,
        sources=state.sources,
        citations_dropped=state.citations_dropped,
        numbers=state.numbers,
    )
