"""Where the findings are judged: the gap detector's report, and the rules that end the research loop."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import date

from datascraper import prompts
from datascraper.models_config import ResearchConfig
from datascraper.plan_schemas import GapReport
from datascraper.providers.structured import parse_structured
from datascraper.research_engine.confidence import EvidenceAssessment
from datascraper.research_engine.state import Finding, RunState
from datascraper.schemas import UsageLedger
from datascraper.trace_schemas import Contradiction, StopReason

logger = logging.getLogger(__name__)

# Each finding's text the gap detector reads: enough for a long web answer or a statement summary.
FINDING_REVIEW_CHARS = 6_000


async def detect_gaps(
    question: str,
    findings: list[Finding],
    *,
    round_number: int,
    today: date,
    timezone: str | None,
    config: ResearchConfig,
    ledger: UsageLedger,
    timeout_s: float | None = None,
) -> GapReport:
    """The planner model's report on `findings`, follow-ups capped at `config.max_sub_questions`.

    The call is bounded by `timeout_s` (default `config.planner_timeout_s`). Raises the named error of
    `parse_structured` (`UpstreamTimeout` past the bound); the caller ends the loop on it.
    """
    report = await parse_structured(
        config.planner_model,
        prompts.GAP_DETECTOR_INSTRUCTIONS.format(max_sub_questions=config.max_sub_questions),
        prompts.GAP_DETECTOR_INPUT.format(
            time_context=prompts.time_context(today, timezone),
            question=question,
            round=round_number,
            max_rounds=config.max_iterations,
            findings="\n\n".join(render_for_review(finding) for finding in findings),
        ),
        GapReport,
        ledger,
        timeout_s=config.planner_timeout_s if timeout_s is None else timeout_s,
    )
    return report.model_copy(update={"follow_up_queries": report.follow_up_queries[: config.max_sub_questions]})


def render_for_review(finding: Finding) -> str:
    if finding.status == "answered":
        body = finding.text
        if len(body) > FINDING_REVIEW_CHARS:
            body = body[:FINDING_REVIEW_CHARS] + " […]"
    elif finding.status == "deferred":
        body = prompts.FINDING_DEFERRED
    else:
        body = prompts.FINDING_NOT_ANSWERED.format(reason=finding.error or "unknown error")
    return prompts.FINDING_FOR_REVIEW.format(
        id=finding.step.id, type=finding.step.type, route=finding.route, question=finding.step.question, body=body
    )


def known_contradictions(report: GapReport, findings: Sequence[Finding]) -> list[Contradiction]:
    """The report's contradictions between findings that exist, each once; the others are dropped (logged):
    a contradiction naming a finding nobody can show is no use to the answer."""
    ids = {finding.step.id for finding in findings}
    kept: dict[tuple[str, str, str, str], Contradiction] = {}
    for contradiction in report.contradictions:
        claim_a, claim_b = contradiction.claim_a.strip(), contradiction.claim_b.strip()
        finding_a, finding_b = contradiction.finding_a.strip(), contradiction.finding_b.strip()
        if finding_a not in ids or finding_b not in ids or not claim_a or not claim_b:
            logger.info("A contradiction naming unknown findings or empty claims was dropped: %s", contradiction)
            continue
        key = (finding_a, claim_a, finding_b, claim_b)
        kept.setdefault(
            key,
            Contradiction(
                claim_a=claim_a,
                finding_a=finding_a,
                claim_b=claim_b,
                finding_b=finding_b,
                severity=contradiction.severity,
            ),
        )
    return list(kept.values())


def stop_reason(
    report: GapReport,
    *,
    round_number: int,
    previous_score: float | None,
    evidence: EvidenceAssessment,
    previous_confidence: float | None,
    new_follow_ups: int,
    config: ResearchConfig,
) -> StopReason | None:
    """Why the loop ends after this round, or None to run the follow-ups. The first rule that holds wins.

    The gap detector's verdict (`complete`, `threshold`) ends research only when the evidence is trusted
    too (confidence at or above the threshold, not shallow); `no_improvement` needs both its score and
    the confidence to have stalled. `new_follow_ups` counts the detector's and the weak areas' follow-ups.
    """
    trusted = evidence.trusted(config.confidence_threshold)
    if report.complete and trusted:
        return "complete"
    if report.score >= config.completeness_threshold and trusted:
        return "threshold"
    confidence_gain = None if previous_confidence is None else evidence.confidence.score - previous_confidence
    if (
        previous_score is not None
        and report.score - previous_score < config.min_score_improvement
        and (confidence_gain is None or confidence_gain < config.min_confidence_gain)
    ):
        return "no_improvement"
    if new_follow_ups == 0:
        return "no_follow_ups"
    if round_number >= config.max_iterations:
        return "max_iterations"
    return None


def run_limit_reached(state: RunState) -> StopReason | None:
    """Why no further research fits the run's limits, or None: checked after a round's sub-questions
    (no time or tokens for the gap detector) and before follow-ups would start another round."""
    if state.deadline.research_expired:
        return "deadline"
    if state.token_budget_spent:
        return "token_budget"
    return None
