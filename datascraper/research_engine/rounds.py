"""Research in rounds: execute a round's sub-questions, judge the findings, follow up, until a stop rule holds.

    round n: execute ─► verdict (gap detector, evidence confidence, stop rules) ─┬─ stop ─► the answer
                ▲                                                               │
                └──────── follow-ups join the plan, checkpoint ◄── go on ───────┘

Every round ends with a `RoundEvent` carrying its trace entry (the evidence confidence after it), then a
checkpoint of where research stands. Evidence that is shallow or below RESEARCH_CONFIDENCE_THRESHOLD keeps
research going while rounds remain, with follow-ups targeted at its weak areas, even when the gap detector
finds the findings complete; the run's limits (deadline, token budget) still end it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from datascraper.plan_schemas import GapReport, SubQuestion
from datascraper.research_engine.checkpoint import checkpoint
from datascraper.research_engine.confidence import EvidenceAssessment, WeakArea, assess, targeted_follow_ups
from datascraper.research_engine.executor import execute_round
from datascraper.research_engine.gap_detector import detect_gaps, known_contradictions, run_limit_reached, stop_reason
from datascraper.research_engine.planner_call import PlannerMiss, call_planner
from datascraper.research_engine.state import (
    Finding,
    PlannedStep,
    RoundRecord,
    RunState,
    normalized_question,
    plan_steps,
)
from datascraper.research_engine.trace import round_event, trace_entry
from datascraper.schemas import PlanEvent, ResearchEvent, RoundEvent, StatusEvent
from datascraper.trace_schemas import Contradiction, GoOnReason, PlanChange, StopReason

logger = logging.getLogger(__name__)


@dataclass
class RoundVerdict:
    """Whether research goes on after a round, and from what.

    `report` is None when the gap detector did not judge the round (no time or tokens left, or it failed):
    the evidence is then assessed with the gaps and contradictions last reported."""

    evidence: EvidenceAssessment
    stop_reason: StopReason | None
    report: GapReport | None = None
    contradictions: list[Contradiction] | None = None  # None: the last reported still stand
    follow_ups: list[SubQuestion] = field(default_factory=list)  # the gap detector's, not asked before
    targeted: list[tuple[SubQuestion, WeakArea]] = field(default_factory=list)  # at the weak areas
    goes_on_because: GoOnReason | None = None


async def research_in_rounds(
    state: RunState,
    steps: list[PlannedStep],
    *,
    first_round: int = 1,
    asked: set[str] | None = None,
    previous_score: float | None = None,
) -> AsyncIterator[ResearchEvent]:
    """Execute, judge, follow up, until a stop rule holds (module docstring)."""
    asked = asked if asked is not None else {normalized_question(step.question) for step in steps}
    for n in range(first_round, state.config.max_iterations + 1):
        async for event in execute(state, steps, n):
            yield event
        ids = {step.id for step in steps}
        models = {f.step.id: f.model for f in state.findings if f.step.id in ids and f.model is not None}
        record = RoundRecord(n=n, sub_questions=[step.id for step in steps], models=models)
        state.rounds.append(record)
        if (limit := run_limit_reached(state)) is not None:
            # No time or tokens left even to judge the findings: the answer is written from them as they are.
            logger.info("Research stopped after round %d (%s); answering from the findings so far.", n, limit)
            verdict = RoundVerdict(unjudged_evidence(state), limit)
        else:
            yield StatusEvent(phase="evaluating", label="Checking the findings for gaps", detail=f"Round {n}")
            verdict = await round_verdict(state, n, asked=asked, previous_score=previous_score)
        record.stop_reason = verdict.stop_reason
        if (report := verdict.report) is not None:
            record.complete, record.score, record.gaps = report.complete, report.score, report.gaps
            previous_score = report.score
        if verdict.stop_reason is not None:
            yield end_round(state, record, verdict.evidence, contradictions=verdict.contradictions)
            yield checkpoint(state, [], asked=asked, previous_score=previous_score)
            return
        steps, changes = plan_follow_ups(state, verdict.follow_ups, verdict.targeted)
        asked.update(normalized_question(step.question) for step in steps)
        record.follow_ups = [step.question for step in steps]
        yield end_round(
            state,
            record,
            verdict.evidence,
            contradictions=verdict.contradictions,
            plan_changes=changes,
            goes_on_because=verdict.goes_on_because,
        )
        # The next round's step events name these ids: the plan must list them first.
        yield extend_plan(state, steps)
        yield checkpoint(state, steps, asked=asked, previous_score=previous_score)


async def execute(state: RunState, steps: list[PlannedStep], n: int) -> AsyncIterator[ResearchEvent]:
    """One round's sub-questions, concurrently; their findings join `state.findings`."""
    started = time.monotonic()
    label = f"Researching {len(steps)} sub-question{'s' if len(steps) != 1 else ''}"
    yield StatusEvent(phase="researching", label=label, detail=f"Round {n}")
    findings: list[Finding] = []
    try:
        async for item in execute_round(
            steps, config=state.config, ledger=state.ledger, today=state.today, deadline=state.deadline
        ):
            if isinstance(item, Finding):
                findings.append(item)
            else:
                yield item
    finally:
        state.findings.extend(findings)
        state.clock.add("researching", started)


async def round_verdict(state: RunState, n: int, *, asked: set[str], previous_score: float | None) -> RoundVerdict:
    """Whether research goes on after round `n`: the gap detector's report on every finding so far, the
    evidence confidence (`confidence`), the follow-ups not `asked` before (and, for evidence not trusted,
    those targeted at its weak areas), then the stop rules (`gap_detector.stop_reason`) and the run's
    limits. A gap detector that gives no report ends research on the findings so far."""
    config = state.config
    report = await call_planner(
        state,
        "evaluating",
        lambda timeout_s: detect_gaps(
            state.query.question,
            state.findings,
            round_number=n,
            today=state.today,
            timezone=state.query.timezone,
            config=config,
            ledger=state.ledger,
            timeout_s=timeout_s,
        ),
    )
    if isinstance(report, PlannerMiss):
        return unjudged_verdict(state, report)
    contradictions = known_contradictions(report, state.findings)
    evidence = evaluate_evidence(state, gaps=report.gaps, contradictions=contradictions)
    follow_ups = [sq for sq in report.follow_up_queries if normalized_question(sq.question) not in asked]
    targeted = []
    if not evidence.trusted(config.confidence_threshold):
        proposed = asked | {normalized_question(sq.question) for sq in follow_ups}
        targeted = targeted_follow_ups(
            evidence.weak_areas, asked=proposed, room=config.max_sub_questions - len(follow_ups)
        )
    reason = stop_reason(
        report,
        round_number=n,
        previous_score=previous_score,
        evidence=evidence,
        previous_confidence=state.trace[-1].confidence.score if state.trace else None,
        new_follow_ups=len(follow_ups) + len(targeted),
        config=config,
    ) or run_limit_reached(state)
    goes_on_because: GoOnReason | None = None
    if reason is None:
        gaps_remain = not report.complete and report.score < config.completeness_threshold and bool(follow_ups)
        goes_on_because = "gaps" if gaps_remain else "shallow" if evidence.confidence.shallow else "below_threshold"
    return RoundVerdict(
        evidence,
        reason,
        report=report,
        contradictions=contradictions,
        follow_ups=follow_ups,
        targeted=targeted,
        goes_on_because=goes_on_because,
    )


def unjudged_verdict(state: RunState, miss: PlannerMiss) -> RoundVerdict:
    """The end of research when the gap detector gave no report: the deadline came first, or it failed."""
    if miss.deadline:
        logger.info("The research deadline passed during the gap detector; answering from the findings.")
        return RoundVerdict(unjudged_evidence(state), "deadline")
    state.gap_detector_fallback = miss.code
    logger.warning("The gap detector failed (%s); answering from the findings so far.", miss.code)
    return RoundVerdict(unjudged_evidence(state), "gap_detector_failed")


def evaluate_evidence(state: RunState, *, gaps: list[str], contradictions: list[Contradiction]) -> EvidenceAssessment:
    """The evidence confidence of every finding so far (`research_engine.confidence`)."""
    return assess(
        state.findings,
        gaps=gaps,
        contradictions=contradictions,
        today=state.today,
        weights=state.config.confidence_weights,
    )


def unjudged_evidence(state: RunState) -> EvidenceAssessment:
    """The evidence of a round the gap detector did not judge: the gaps and contradictions last reported
    still stand."""
    earlier_gaps = state.rounds[-2].gaps if len(state.rounds) > 1 else []
    return evaluate_evidence(state, gaps=earlier_gaps, contradictions=last_contradictions(state))


def last_contradictions(state: RunState) -> list[Contradiction]:
    """The contradictions the gap detector last reported, unresolved as far as the run knows."""
    return list(state.trace[-1].contradictions) if state.trace else []


def plan_follow_ups(
    state: RunState, follow_ups: list[SubQuestion], targeted: list[tuple[SubQuestion, WeakArea]]
) -> tuple[list[PlannedStep], list[PlanChange]]:
    """The next round's steps, the gap detector's follow-ups first, then those targeted at weak evidence
    (each `about` the sub-question it strengthens), and the plan changes they are."""
    asked = [*follow_ups, *(sq for sq, _ in targeted)]
    steps = plan_steps(asked, first_number=len(state.findings) + 1, today=state.today)
    changes = [PlanChange(id=step.id, question=step.question, reason="gap") for step in steps[: len(follow_ups)]]
    for step, (_, area) in zip(steps[len(follow_ups) :], targeted, strict=True):
        step.about = area.about
        changes.append(PlanChange(id=step.id, question=step.question, reason="weak_evidence", weak_area=area.text))
    return steps, changes


def end_round(
    state: RunState,
    record: RoundRecord,
    evidence: EvidenceAssessment,
    *,
    contradictions: list[Contradiction] | None = None,
    plan_changes: list[PlanChange] | None = None,
    goes_on_because: GoOnReason | None = None,
) -> RoundEvent:
    """The round's trace entry, added to the run's trace, as its `round` event."""
    entry = trace_entry(
        record.n,
        evidence,
        previous=state.trace[-1] if state.trace else None,
        contradictions=last_contradictions(state) if contradictions is None else contradictions,
        plan_changes=plan_changes or [],
        stop_reason=record.stop_reason,
        goes_on_because=goes_on_because,
    )
    state.trace.append(entry)
    return round_event(entry, complete=record.complete, gaps=record.gaps)


def extend_plan(state: RunState, steps: list[PlannedStep]) -> PlanEvent:
    """The plan with `steps` appended, now the run's plan; clients replace theirs with the newest."""
    planned = state.plan.sub_questions if state.plan is not None else []
    state.plan = PlanEvent(needs_decomposition=True, sub_questions=[*planned, *(step.public() for step in steps)])
    return state.plan
