"""The research trace: one entry per round, and the summary of how the answer's evidence was reached.

Each round ends with an entry (`TraceEntry`): its evidence confidence, the sources it added, the weak
areas and contradictions left, the sub-questions it added to the plan and why, and either the stop rule
that held or the reason research went on. Entries travel on `round` events, are checkpointed with the
round (a resumed run goes on with the same trace) and stored on the run. After the last round they are
summed up (`RunConfidence`): rounds run, confidence progression, refinements, what remains uncertain.
That summary is data for clients; it becomes text under the answer only when the evidence stayed below
the confidence threshold, or shallow, as a low-confidence note.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from datascraper import prompts
from datascraper.citations.fetcher import reason_text
from datascraper.research_engine.confidence import EvidenceAssessment, describe_contradiction
from datascraper.schemas import CitationCheck, RoundEvent
from datascraper.trace_schemas import Contradiction, GoOnReason, PlanChange, RunConfidence, StopReason, TraceEntry

# Items of "still uncertain" named in the summary text (all of them stay in the data).
SUMMARY_UNCERTAIN_ITEMS = 3


def trace_entry(
    n: int,
    assessment: EvidenceAssessment,
    *,
    previous: TraceEntry | None,
    contradictions: Sequence[Contradiction],
    plan_changes: Sequence[PlanChange] = (),
    stop_reason: StopReason | None = None,
    goes_on_because: GoOnReason | None = None,
) -> TraceEntry:
    return TraceEntry(
        n=n,
        confidence=assessment.confidence,
        new_sources=assessment.sources - (previous.sources if previous is not None else 0),
        sources=assessment.sources,
        weak_areas=[area.text for area in assessment.weak_areas],
        contradictions=list(contradictions),
        plan_changes=list(plan_changes),
        stop_reason=stop_reason,
        goes_on_because=goes_on_because,
    )


def round_event(entry: TraceEntry, *, complete: bool = False, gaps: Sequence[str] = ()) -> RoundEvent:
    """The `round` event of a finished round: the gap detector's verdict and the round's trace entry."""
    return RoundEvent(
        n=entry.n,
        complete=complete,
        gaps=list(gaps),
        follow_ups=[change.question for change in entry.plan_changes],
        confidence=entry.confidence.score,
        shallow=entry.confidence.shallow,
        new_sources=entry.new_sources,
        weak_areas=entry.weak_areas,
        contradictions=entry.contradictions,
        stop_reason=entry.stop_reason,
    )


def run_confidence(trace: Sequence[TraceEntry], threshold: float) -> RunConfidence | None:
    """The last round's confidence with the summary of the rounds; None for a run without rounds."""
    if not trace:
        return None
    last = trace[-1]
    changes = [change for entry in trace for change in entry.plan_changes]
    targeted = sum(1 for change in changes if change.reason == "weak_evidence")
    uncertain = [*last.weak_areas, *_minor_contradictions(last)]
    progression = [entry.confidence.score for entry in trace]
    refinements = (
        prompts.RESEARCH_SUMMARY_REFINEMENTS.format(count=len(changes), s=_s(len(changes)), targeted=targeted)
        if changes
        else ""
    )
    shown = uncertain[:SUMMARY_UNCERTAIN_ITEMS]
    if len(uncertain) > len(shown):
        shown.append(f"{len(uncertain) - len(shown)} more")
    summary = prompts.RESEARCH_SUMMARY.format(
        rounds=len(trace),
        s=_s(len(trace)),
        progression=" → ".join(f"{score:.2f}" for score in progression),
        refinements=refinements,
        uncertain=prompts.RESEARCH_SUMMARY_UNCERTAIN.format(items="; ".join(shown)) if shown else "",
    )
    return RunConfidence(
        **last.confidence.model_dump(),
        threshold=threshold,
        rounds=len(trace),
        progression=progression,
        refinements=len(changes),
        uncertain=uncertain,
        summary=summary,
    )


# How much of the confidence rests on the answer's citations holding up: with none supported, half is left.
CITATION_WEIGHT = 0.5


def checked_confidence(confidence: RunConfidence, citations: Sequence[CitationCheck]) -> RunConfidence:
    """The confidence the answer earned once its citations were checked.

    The research's score judges the evidence found; an answer that cites it for claims it does not support
    has not earned that score: each unsupported citation lowers it, by `CITATION_WEIGHT` over the number of
    citations. A citation whose source could not be read (a paywall, a bot wall, a timeout) is neither
    confirmed nor refuted: it leaves the score where the research put it, and is counted, with why, so that
    the answer says how much went unchecked. Counting it against the answer would punish the sources that
    most often refuse a fetcher (Reuters, the FT, Bloomberg, the WSJ), which are those the credibility
    score trusts most. With no citation checked the confidence stands.
    """
    if not citations:
        return confidence.model_copy(
            update={"citation_support": None, "citations_unchecked": None, "unchecked_reasons": {}}
        )
    statuses = Counter(check.status for check in citations)
    read = statuses["supported"] + statuses["unsupported"]
    reasons = Counter(check.reason or "unknown" for check in citations if check.status == "unreachable")
    score = round(confidence.score * (1 - CITATION_WEIGHT * statuses["unsupported"] / len(citations)), 3)
    update: dict[str, object] = {
        "citation_support": round(statuses["supported"] / read, 3) if read else None,
        "citations_unchecked": statuses["unreachable"],
        "unchecked_reasons": dict(reasons),
    }
    summary = confidence.summary
    if score < confidence.score:
        summary += prompts.CITATION_CHECK_SUMMARY.format(
            unsupported=statuses["unsupported"], checked=len(citations), before=confidence.score, after=score
        )
        update |= {"score": score, "evidence_score": confidence.score}
    if reasons:
        summary += prompts.CITATION_UNCHECKED_SUMMARY.format(
            unchecked=statuses["unreachable"], checked=len(citations), reasons=unchecked_reasons_text(reasons)
        )
    return confidence.model_copy(update=update | {"summary": summary})


def unchecked_reasons_text(reasons: Counter[str]) -> str:
    """ "3 HTTP 403, 2 timeout": why citations went unchecked, the most frequent first, ties by their code (a
    stored run's counts come back from PostgreSQL's jsonb in another key order; the page sorts them the same)."""
    ordered = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{count} {reason_text(reason)}" for reason, count in ordered)


def low_confidence_note(confidence: RunConfidence | None) -> str:
    """The note under an answer whose evidence stayed below the threshold or shallow; else nothing."""
    if confidence is None or (confidence.score >= confidence.threshold and not confidence.shallow):
        return ""
    reasons = []
    if confidence.score < confidence.threshold:
        reasons.append(prompts.LOW_CONFIDENCE_BELOW.format(score=confidence.score, threshold=confidence.threshold))
    if confidence.shallow:
        reasons.append(prompts.LOW_CONFIDENCE_SHALLOW)
    return prompts.LOW_CONFIDENCE_NOTE.format(reasons="; ".join(reasons), summary=confidence.summary)


def _minor_contradictions(entry: TraceEntry) -> list[str]:
    """Contradictions not already among the weak areas (those below the severity that makes one)."""
    texts = (describe_contradiction(c) for c in entry.contradictions)
    return [text for text in texts if text not in entry.weak_areas]


def _s(count: int) -> str:
    return "" if count == 1 else "s"
