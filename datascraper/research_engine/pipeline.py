"""The research router: analyse, then answer directly or research in rounds, then synthesize.

    question ─ fast path? ── yes ─► quote ─► answer (no model call)      ─┐
        │                          └─ market data fails ─► one web search ─┤
        no                                                                  │
        ├─ mode quick ───────────────────────────────► one web search ─────┤
        └─ analyzer ─ no decomposition (or it failed) ► one web search ─────┤
                     └─ sub-questions ─► round: execute ─► gap detector ─┐ ├─► sources, summary
                                          ▲── follow-ups, unless stop ◄──┘ │
                                          └─ stop ─► synthesizer ──────────┘

In mode auto the one web search starts together with the analyzer (`SpeculativeSearch`, unless
RESEARCH_SPECULATIVE_SEARCH=0): kept when the analyzer sees no need to decompose (or fails), its deltas
following the plan at once; cancelled, its HTTP stream closed, before a plan with sub-questions goes out.

Mode research always takes the sub-questions path: without the analyzer's, the question itself is the one
sub-question. Follow-ups join the plan, and a new `PlanEvent` names them before their round runs.

After each round the evidence confidence is computed by code (`confidence`): while it is shallow or below
RESEARCH_CONFIDENCE_THRESHOLD and rounds remain, research goes on with follow-ups targeted at its weak
areas, even when the gap detector finds the findings complete. Each round leaves a trace entry
(`trace`), checkpointed with it; an answer whose evidence stayed weak ends with a low-confidence note.

Limits (`RunState.deadline`, `RESEARCH_MAX_TOKENS_PER_RUN`): research, planner calls included, ends by
the research deadline, and no round follows one after which the token budget is spent; the answer is then
written from the findings so far (stop reason `deadline` or `token_budget`). The answer, and the quick
path, end by the hard deadline, or the run raises `DeadlineExceeded`.

After the answer's last delta and its sources, the citations are checked against what they cite
(`datascraper.citations`; `verify`, unless CITATION_VERIFY=0): a `VerificationEvent`, within its own
deadline, so the answer's first token never waits for it, and a check that fails leaves the answer
standing unverified.

Each node is a small function of the run's `RunState`; the nodes that stream are async generators of
the events the chat app publishes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator

from datascraper.citations import Verification, verify_citations
from datascraper.errors import (
    ACCOUNT_FAILURES,
    DeadlineExceeded,
    ProviderNotConfigured,
    ResearchError,
    UpstreamTimeout,
)
from datascraper.models_config import ResearchConfig, get_research_config
from datascraper.quality_logger import (
    RunRecord,
    SubQuestionOutcome,
    compute_signals,
    log_signals,
)
from datascraper.query_analyzer import analyze_query, match_fast_path
from datascraper.research_engine.bypass import (
    QUOTE_STEP_ID,
    SpeculativeSearch,
    answer_from_quote,
    answer_with_one_search,
)
from datascraper.research_engine.charts import charts_for
from datascraper.research_engine.confidence import EvidenceAssessment, WeakArea, assess, targeted_follow_ups
from datascraper.research_engine.evidence import market_evidence, number_check
from datascraper.research_engine.executor import execute_round
from datascraper.research_engine.gap_detector import detect_gaps, known_contradictions, run_limit_reached, stop_reason
from datascraper.research_engine.state import (
    Finding,
    PlannedStep,
    ResearchCheckpoint,
    RoundRecord,
    RunState,
    normalized_question,
    plan_steps,
    today_in,
)
from datascraper.research_engine.synthesizer import Synthesis
from datascraper.research_engine.trace import (
    checked_confidence,
    low_confidence_note,
    round_event,
    run_confidence,
    trace_entry,
)
from datascraper.schemas import (
    CheckpointEvent,
    Contradiction,
    DeltaEvent,
    GoOnReason,
    PlanChange,
    PlanEvent,
    QueryAnalysis,
    ResearchEvent,
    ResearchQuery,
    RoundEvent,
    RunSummary,
    SourcesEvent,
    StatusEvent,
    SubQuestion,
    VerificationEvent,
)

logger = logging.getLogger(__name__)

_DEADLINE_SLACK_S = 0.01


async def run_research(
    query: ResearchQuery, config: ResearchConfig | None = None, *, resume_from: dict | None = None
) -> AsyncIterator[ResearchEvent]:
    """Answer `query`: typed events as they happen, ending with `SourcesEvent` and `RunSummary`.

    Raises a `ResearchError` when no answer can be given; a failure part way through the answer first
    yields a `SourcesEvent` with the sources so far, so the partial answer can be stored with them.
    """
    config = config or get_research_config()
    if not config.is_configured:
        raise ProviderNotConfigured()
    state = RunState(query=query, config=config, today=today_in(query.timezone))
    try:
        if resume_from is None:
            route = route_question(state)
        else:
            route = resume(state, ResearchCheckpoint.model_validate(resume_from))
        async for event in route:
            yield event
    except ResearchError as exc:
        # A failed run is still measured: what it cost and how far it got travel with the error.
        judge_answer(state)
        exc.summary = summarize(state, error=exc.code)
        raise
    judge_answer(state)
    # Numbers cited to market data that nothing returned or computed are shown under the answer, as its
    # last text: every client (page, /v1, ask) shows deltas, and the stored answer keeps the note.
    # So is a low-confidence warning, when the evidence stayed below the threshold (or shallow).
    state.answer_note = state.numbers.note() + low_confidence_note(state.confidence)
    if state.answer_note:
        yield DeltaEvent(text=state.answer_note)
    yield SourcesEvent(sources=state.sources)
    verification = await verify(state) if config.citation_verify else None
    if verification is not None:
        yield VerificationEvent(citations=verification.citations)
        if state.confidence is not None:
            # The confidence stored and shown is the one the answer earned once its citations were checked.
            state.confidence = checked_confidence(state.confidence, verification.citations)
    yield summarize(state, verification=verification)


async def route_question(state: RunState) -> AsyncIterator[ResearchEvent]:
    mode = state.query.mode
    if mode != "research":
        match = match_fast_path(state.query.question)
        if match is not None:
            state.fast_path = True
            async for event in answer_from_quote(state, match):
                yield event
            if state.quote_fallback is None:
                return
            logger.info("The quote fast path fell back to a web search: %s", state.quote_fallback)
        if match is not None or mode == "quick":
            async for event in answer_with_one_search(state):
                yield event
            return

    speculation = SpeculativeSearch(state) if mode == "auto" and state.config.speculative_search else None
    try:
        yield StatusEvent(phase="analyzing", label="Analyzing the question")
        steps = await plan_research(state)
        if steps and speculation is not None:
            await speculation.cancel()
        if state.plan is not None:
            yield state.plan
        if not steps:
            async for event in answer_with_one_search(state, speculation):
                yield event
            return
    finally:
        # Whatever ended the analysis (a cancelled run, a bug), the search does not outlive it.
        if speculation is not None:
            await speculation.close()
    state.mode = "research"
    yield checkpoint(state, steps, asked={normalized_question(step.question) for step in steps}, previous_score=None)
    async for event in research_in_rounds(state, steps):
        yield event
    async for event in synthesize(state):
        yield event


async def resume(state: RunState, saved: ResearchCheckpoint) -> AsyncIterator[ResearchEvent]:
    """Go on from a checkpoint of an earlier attempt: the rounds still to run, then the answer."""
    state.mode = "research"
    state.plan = saved.plan
    state.findings = list(saved.findings)
    state.rounds = list(saved.rounds)
    state.trace = list(saved.trace)
    state.ledger = saved.ledger
    state.analysis_fallback = saved.analysis_fallback
    state.gap_detector_fallback = saved.gap_detector_fallback
    yield state.plan
    if saved.next_steps:
        rounds = research_in_rounds(
            state,
            saved.next_steps,
            first_round=len(saved.rounds) + 1,
            asked=set(saved.asked),
            previous_score=saved.previous_score,
        )
        async for event in rounds:
            yield event
    async for event in synthesize(state):
        yield event


def checkpoint(
    state: RunState, next_steps: list[PlannedStep], *, asked: set[str], previous_score: float | None
) -> CheckpointEvent:
    assert state.plan is not None
    saved = ResearchCheckpoint(
        plan=state.plan,
        findings=state.findings,
        rounds=state.rounds,
        next_steps=next_steps,
        asked=sorted(asked),
        previous_score=previous_score,
        ledger=state.ledger,
        analysis_fallback=state.analysis_fallback,
        gap_detector_fallback=state.gap_detector_fallback,
        trace=state.trace,
    )
    return CheckpointEvent(state=saved.model_dump(mode="json"))


async def plan_research(state: RunState) -> list[PlannedStep] | None:
    """The first round's sub-questions, or None for the single-search path.

    A failed analysis takes the single-search path too, except in mode research, where decomposition is
    forced: the question itself is then the one sub-question.
    """
    started = time.monotonic()
    query = state.query
    timeout_s = state.planner_timeout_s()
    try:
        analysis = await analyze_query(
            query.question,
            history=query.history,
            today=state.today,
            timezone=query.timezone,
            config=state.config,
            ledger=state.ledger,
            timeout_s=timeout_s,
        )
    except ACCOUNT_FAILURES:
        raise
    except ResearchError as exc:
        if _cut_by_deadline(exc, timeout_s, state):
            # No round could run now, in any mode: one web search answers in the time kept for the answer.
            state.analysis_fallback = DeadlineExceeded.code
            logger.warning("The research deadline passed during query analysis; answering with one web search.")
            return None
        state.analysis_fallback = exc.code
        if query.mode != "research":
            logger.warning("Query analysis failed (%s); answering with one web search.", exc.code)
            return None
        logger.warning("Query analysis failed (%s); researching the question as asked.", exc.code)
        analysis = QueryAnalysis(needs_decomposition=True)
    finally:
        state.clock.add("analyzing", started)
    sub_questions = analysis.sub_questions
    if query.mode == "research":
        # Forced decomposition: the analyzer's sub-questions even if it saw no need, else the question itself.
        sub_questions = sub_questions or [SubQuestion(question=query.question, type="qualitative")]
    elif not analysis.needs_decomposition or not sub_questions:
        state.plan = PlanEvent(needs_decomposition=False)
        return None
    steps = plan_steps(sub_questions, first_number=1, today=state.today)
    state.plan = PlanEvent(needs_decomposition=True, sub_questions=[step.public() for step in steps])
    return steps


async def research_in_rounds(
    state: RunState,
    steps: list[PlannedStep],
    *,
    first_round: int = 1,
    asked: set[str] | None = None,
    previous_score: float | None = None,
) -> AsyncIterator[ResearchEvent]:
    """Execute, evaluate, follow up, until a stop rule holds; every round ends with a `RoundEvent` carrying
    its trace entry (the evidence confidence after it), then a checkpoint of where research stands.

    Evidence that is shallow or below RESEARCH_CONFIDENCE_THRESHOLD keeps research going while rounds
    remain, with follow-ups targeted at its weak areas, even when the gap detector finds the findings
    complete; the run's limits (deadline, token budget) still end it."""
    config = state.config
    asked = asked if asked is not None else {normalized_question(step.question) for step in steps}
    for n in range(first_round, config.max_iterations + 1):
        async for event in execute(state, steps, n):
            yield event
        record = RoundRecord(n=n, sub_questions=[step.id for step in steps])
        state.rounds.append(record)
        limit = run_limit_reached(state)
        if limit is not None:
            # No time or tokens left even to judge the findings: the answer is written from them as they are.
            record.stop_reason = limit
            logger.info("Research stopped after round %d (%s); answering from the findings so far.", n, limit)
            yield end_round(state, record, unjudged_evidence(state))
            yield checkpoint(state, [], asked=asked, previous_score=previous_score)
            return

        yield StatusEvent(phase="evaluating", label="Checking the findings for gaps", detail=f"Round {n}")
        started = time.monotonic()
        timeout_s = state.planner_timeout_s()
        try:
            report = await detect_gaps(
                state.query.question,
                state.findings,
                round_number=n,
                today=state.today,
                timezone=state.query.timezone,
                config=config,
                ledger=state.ledger,
                timeout_s=timeout_s,
            )
        except ACCOUNT_FAILURES:
            raise
        except ResearchError as exc:
            if _cut_by_deadline(exc, timeout_s, state):
                record.stop_reason = "deadline"
                logger.info("The research deadline passed during the gap detector; answering from the findings.")
            else:
                state.gap_detector_fallback = exc.code
                record.stop_reason = "gap_detector_failed"
                logger.warning("The gap detector failed (%s); answering from the findings so far.", exc.code)
            yield end_round(state, record, unjudged_evidence(state))
            yield checkpoint(state, [], asked=asked, previous_score=previous_score)
            return
        finally:
            state.clock.add("evaluating", started)

        contradictions = known_contradictions(report, state.findings)
        evidence = evaluate_evidence(state, gaps=report.gaps, contradictions=contradictions)
        trusted = evidence.trusted(config.confidence_threshold)
        follow_ups = [sq for sq in report.follow_up_queries if normalized_question(sq.question) not in asked]
        targeted = []
        if not trusted:
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
        record.complete, record.score, record.gaps = report.complete, report.score, report.gaps
        record.stop_reason = reason
        changes: list[PlanChange] = []
        goes_on_because: GoOnReason | None = None
        if reason is None:
            steps, changes = plan_follow_ups(state, follow_ups, targeted)
            asked.update(normalized_question(step.question) for step in steps)
            record.follow_ups = [step.question for step in steps]
            gaps_remain = not report.complete and report.score < config.completeness_threshold and bool(follow_ups)
            goes_on_because = "gaps" if gaps_remain else "shallow" if evidence.confidence.shallow else "below_threshold"
        yield end_round(
            state,
            record,
            evidence,
            contradictions=contradictions,
            plan_changes=changes,
            goes_on_because=goes_on_because,
        )
        if reason is not None:
            yield checkpoint(state, [], asked=asked, previous_score=report.score)
            return
        # The next round's step events name these ids: the plan must list them first.
        yield extend_plan(state, steps)
        previous_score = report.score
        yield checkpoint(state, steps, asked=asked, previous_score=previous_score)


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


async def synthesize(state: RunState) -> AsyncIterator[ResearchEvent]:
    """The streamed, cited answer from every finding of every round, after the charts of their market data."""
    started = time.monotonic()
    synthesis = Synthesis(
        state.query.question,
        state.findings,
        history=state.query.history,
        today=state.today,
        timezone=state.query.timezone,
        config=state.config,
        ledger=state.ledger,
        contradictions=last_contradictions(state),
    )
    state.sources = synthesis.sources
    state.facts = synthesis.facts
    answered = sum(1 for finding in state.findings if finding.status == "answered")
    yield StatusEvent(
        phase="synthesizing",
        label="Writing the answer",
        detail=f"From {answered} finding{'s' if answered != 1 else ''} and {len(state.sources)} sources",
    )
    # Charts cite their sources by number, known from here on; they go out before the answer's text.
    state.charts = charts_for(state.findings, state.sources)
    for chart in state.charts:
        yield chart
    try:
        async for delta in state.deadline.within(synthesis):
            state.clock.first_token()
            yield delta
    except ResearchError:
        if state.sources:
            yield SourcesEvent(sources=state.sources)
        raise
    finally:
        state.clock.add("synthesizing", started)
        state.citations_dropped = synthesis.guard.dropped
    state.answer = synthesis.text


async def verify(state: RunState) -> Verification | None:
    """The answer's citations checked against their sources, after its last delta and within
    CITATION_VERIFY_TIMEOUT (cut to what is left of the run). None if the check itself failed: an
    unverified answer still stands."""
    started = time.monotonic()
    time_limit_s = min(state.config.citation_verify_timeout_s, state.deadline.remaining())
    try:
        return await verify_citations(
            state.answer, state.sources, market_evidence(state), config=state.config, time_limit_s=time_limit_s
        )
    except Exception:
        logger.exception("Citation verification failed; the answer is left unverified.")
        return None
    finally:
        state.clock.add("verifying", started)


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


def judge_answer(state: RunState) -> None:
    """Check the final answer's numbers and sum up the run's confidence, once: the note under the answer
    and the summary (its signals included) both read them from the state."""
    state.numbers = number_check(state)
    state.confidence = run_confidence(state.trace, state.config.confidence_threshold)


def _cut_by_deadline(exc: ResearchError, timeout_s: float, state: RunState) -> bool:
    """Whether a planner call given `timeout_s` timed out because the research deadline came first
    (rather than RESEARCH_PLANNER_TIMEOUT or the provider's own timeout)."""
    return (
        isinstance(exc, UpstreamTimeout)
        and timeout_s < state.config.planner_timeout_s
        # asyncio may fire a timeout a clock tick early: "up" means within a few milliseconds.
        and state.deadline.research_remaining() < _DEADLINE_SLACK_S
    )
