"""Where research stands, saved after the plan and after every round, and read back by a resumed attempt.

The chat app stores each `CheckpointEvent` on the run; an attempt that takes the run over hands the newest
back as `run_research(..., resume_from=...)` and goes on from the rounds still to run, without asking the
planner again.
"""

from __future__ import annotations

from datascraper.research_engine.state import PlannedStep, ResearchCheckpoint, RunState
from datascraper.schemas import CheckpointEvent


def checkpoint(
    state: RunState, next_steps: list[PlannedStep], *, asked: set[str], previous_score: float | None
) -> CheckpointEvent:
    """The research so far, with the next round's sub-questions (none: the answer is next)."""
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


def restore(state: RunState, saved: ResearchCheckpoint) -> None:
    """`state` as `saved` left it: the plan, the findings, the rounds and their trace, what was spent, and
    the fallbacks taken."""
    state.plan = saved.plan
    state.findings = list(saved.findings)
    state.rounds = list(saved.rounds)
    state.trace = list(saved.trace)
    state.ledger = saved.ledger
    state.analysis_fallback = saved.analysis_fallback
    state.gap_detector_fallback = saved.gap_detector_fallback
