"""How far a run's findings can be trusted, round by round, as the trace records it and the run stores it.

After each round the evidence confidence is computed by code (`research_engine.confidence`) and the round
leaves a `TraceEntry`: the confidence, the contradictions between findings, the sub-questions it added to
the plan, and why research stopped or went on. `RunConfidence` is the last round's, summed up for the run
(`research_engine.trace`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator


class Contradiction(BaseModel):
    """Two findings that disagree: each claim with the id of the finding that makes it (q1, q3, ...)."""

    claim_a: str
    finding_a: str
    claim_b: str
    finding_b: str
    severity: float = Field(description="How much the disagreement matters to the answer, 0 (minor) to 1.")

    @field_validator("severity")
    @classmethod
    def _clamp_severity(cls, severity: float) -> float:
        return min(1.0, max(0.0, severity))


StopReason = Literal[
    "complete",  # the gap detector found the findings complete, and the evidence is confident
    "threshold",  # its score reached `completeness_threshold`, and the evidence is confident
    "no_improvement",  # neither its score nor the evidence confidence rose enough over the previous round
    "no_follow_ups",  # nothing new to ask: neither the gap detector nor the weak areas give a follow-up
    "max_iterations",  # RESEARCH_MAX_ITERATIONS rounds have run
    "gap_detector_failed",  # it could not be asked; the findings so far are answered from
    "deadline",  # the research deadline passed (RESEARCH_RUN_TIMEOUT less the answer's reserve)
    "token_budget",  # the run's tokens reached RESEARCH_MAX_TOKENS_PER_RUN
]
# Why research goes on after a round: the gap detector wants more, or the evidence is not yet trusted.
GoOnReason = Literal["gaps", "shallow", "below_threshold"]


class Confidence(BaseModel):
    """The evidence confidence after a round (`research_engine.confidence`): each component and the
    weighted score in 0-1, and whether the evidence is shallow."""

    score: float
    coverage: float
    credibility: float
    diversity: float
    evidence: float
    consistency: float
    shallow: bool


class PlanChange(BaseModel):
    """A sub-question a round added to the plan, and why: a gap the detector named, or weak evidence."""

    id: str
    question: str
    reason: Literal["gap", "weak_evidence"]
    weak_area: str | None = None


class TraceEntry(BaseModel):
    """One research round as the trace shows it: how trusted the evidence was, what changed, what next."""

    n: int
    confidence: Confidence
    new_sources: int = Field(description="Sources first seen in this round.")
    sources: int = Field(description="Distinct sources so far.")
    weak_areas: list[str] = Field(default_factory=list)
    contradictions: list[Contradiction] = Field(default_factory=list)
    plan_changes: list[PlanChange] = Field(default_factory=list)
    stop_reason: StopReason | None = None
    goes_on_because: GoOnReason | None = None


class RunConfidence(Confidence):
    """The run's confidence, as stored and served: the last round's, with a summary of how it was reached."""

    threshold: float
    rounds: int
    progression: list[float] = Field(description="The score after each round.")
    refinements: int = Field(description="Sub-questions added after the first round.")
    uncertain: list[str] = Field(description="What remains uncertain: weak areas and contradictions left.")
    summary: str = Field(description="The above in one paragraph, as shown under a low-confidence answer.")
    evidence_score: float | None = Field(
        default=None, description="The research's own score, before the citation check lowered it (null: not lowered)."
    )
    citation_support: float | None = Field(
        default=None,
        description="Share of the citations the check could read that it found supported; null when citations "
        "were not checked, or none could be read.",
    )
    citations_unchecked: int | None = Field(
        default=None,
        description="Citations whose source could not be read to check (`unreachable`): they leave the score "
        "where the research put it. Null when citations were not checked.",
    )
    unchecked_reasons: dict[str, int] = Field(
        default_factory=dict,
        description="Why, per reason code of the unreachable citations (`http_403`, `timeout`, `deadline`, ...).",
    )
