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
the events the chat app publishes. The rounds are `rounds.research_in_rounds`; the planner's calls (the
analyzer here, the gap detector in a round's verdict) go through `planner_call.call_planner`; where research
stands is saved and restored by `checkpoint`; the answer is judged and the run summed up by `summary`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator

from datascraper.citations import Verification, verify_citations
from datascraper.errors import DeadlineExceeded, ProviderNotConfigured, ResearchError
from datascraper.models_config import ResearchConfig, get_research_config
from datascraper.plan_schemas import QueryAnalysis, SubQuestion
from datascraper.query_analyzer import analyze_query, match_fast_path
from datascraper.research_engine.bypass import SpeculativeSearch, answer_from_quote, answer_with_one_search
from datascraper.research_engine.charts import charts_for
from datascraper.research_engine.checkpoint import checkpoint, restore
from datascraper.research_engine.evidence import market_evidence
from datascraper.research_engine.planner_call import PlannerMiss, call_planner
from datascraper.research_engine.rounds import last_contradictions, research_in_rounds
from datascraper.research_engine.state import (
    PlannedStep,
    ResearchCheckpoint,
    RunState,
    normalized_question,
    plan_steps,
    today_in,
)
from datascraper.research_engine.summary import judge_answer, summarize
from datascraper.research_engine.synthesizer import Synthesis
from datascraper.research_engine.trace import checked_confidence, low_confidence_note
from datascraper.schemas import (
    DeltaEvent,
    PlanEvent,
    ResearchEvent,
    ResearchQuery,
    SourcesEvent,
    StatusEvent,
    VerificationEvent,
)

logger = logging.getLogger(__name__)


async def run_research(
    query: ResearchQuery, config: ResearchConfig | None = None, *, resume_from: dict | None = None
) -> AsyncIterator[ResearchEvent]:
    """Answer `query`: typed events as they happen, ending with `SourcesEvent` and `RunSummary`.

    Raises a `ResearchError` when no answer can be given; a failure part way through the answer first
    yields a `SourcesEvent` with the sources so far, so the partial answer can be stored with them.
    """
    config = config or get_research_config()
    if config.missing_setting is not None:
        raise ProviderNotConfigured.missing(config.missing_setting)
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
    restore(state, saved)
    yield saved.plan
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


async def plan_research(state: RunState) -> list[PlannedStep] | None:
    """The first round's sub-questions, or None for the single-search path.

    A failed analysis takes the single-search path too, except in mode research, where decomposition is
    forced: the question itself is then the one sub-question.
    """
    query = state.query
    analysis = await call_planner(
        state,
        "analyzing",
        lambda timeout_s: analyze_query(
            query.question,
            history=query.history,
            today=state.today,
            timezone=query.timezone,
            config=state.config,
            ledger=state.ledger,
            timeout_s=timeout_s,
        ),
    )
    if isinstance(analysis, PlannerMiss):
        if analysis.deadline:
            # No round could run now, in any mode: one web search answers in the time kept for the answer.
            state.analysis_fallback = DeadlineExceeded.code
            logger.warning("The research deadline passed during query analysis; answering with one web search.")
            return None
        state.analysis_fallback = analysis.code
        if query.mode != "research":
            logger.warning("Query analysis failed (%s); answering with one web search.", analysis.code)
            return None
        logger.warning("Query analysis failed (%s); researching the question as asked.", analysis.code)
        analysis = QueryAnalysis(needs_decomposition=True)
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
            state.answer,
            state.sources,
            market_evidence(state),
            config=state.config,
            time_limit_s=time_limit_s,
            read_already=state.pages_read(),
        )
    except Exception:
        logger.exception("Citation verification failed; the answer is left unverified.")
        return None
    finally:
        state.clock.add("verifying", started)
