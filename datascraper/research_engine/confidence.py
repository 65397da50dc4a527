"""How far a run's evidence can be trusted: computed by code from the findings after every round.

The gap detector judges whether the findings answer the question; this module judges how well they are
supported, from what can be counted. Five components, each 0-1:

- coverage: the sub-questions answered of those planned (analytical ones, answered by the synthesis,
  do not count), times a factor for the gaps the detector still names (1 - 0.15 per gap, at least 0.4).
- credibility: the mean weight of the distinct sources, by publisher (`source_types`): regulator 1.0,
  exchange and government 0.95, company investor relations 0.9, academic 0.85, major news 0.8, other
  0.5, blog 0.3; market data 0.9. A web source whose publication day is known loses weight with age
  against the day asked: 0.9 after half a year, 0.75 after a year, 0.6 after three.
- diversity: half the distinct domains (4 or more count fully), half the spread (a domain holding more
  than 40% of the sources is penalised, linearly to nothing at 100%), times 1 - half the share of
  opinion pieces among the web sources.
- evidence: the share of answered sub-questions backed by two or more independent sources (distinct
  domains; market data counts as backed), and, when numerical sub-questions were asked, 40% of it their
  quantitative backing: 1 from market data, 0.5 from two independent web domains, else 0.
- consistency: 1, halved by each unresolved contradiction of severity 1 (x (1 - severity / 2) each).

score = the configured weights (default 0.25 coverage, 0.25 credibility, 0.15 diversity, 0.20 evidence,
0.15 consistency) times the components. Follow-ups asked to strengthen a sub-question's evidence
(`PlannedStep.about`) count towards that sub-question: their sources back its claims.

**Shallow** evidence, whatever the score: fewer than `MIN_SOURCES` distinct sources (unless every
sub-question was answered from market data); every web source from one domain; or a numerical
sub-question answered only from the web with fewer than two independent domains (numbers without market
data). Research goes on while it is shallow or below the threshold.

Weak areas say what to strengthen, each with a targeted follow-up (prompts in `prompts`): disagreeing
findings, an unanswered sub-question, figures without market data, a single source, only low-credibility
sources, only old sources, one dominant domain.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Literal

from datascraper import prompts
from datascraper.models_config import ConfidenceWeights
from datascraper.plan_schemas import SubQuestion
from datascraper.query_analyzer import COMMON_TICKERS
from datascraper.research_engine.source_types import (
    SourceClassifier,
    is_opinion,
    published_from_url,
    registered_domain,
)
from datascraper.research_engine.state import Finding, normalized_question
from datascraper.schemas import DomainType, Source
from datascraper.sources import publisher_url
from datascraper.trace_schemas import Confidence, Contradiction

TYPE_WEIGHTS: dict[DomainType, float] = {
    "regulator": 1.0,
    "exchange": 0.95,
    "government": 0.95,
    "company_ir": 0.9,
    "academic": 0.85,
    "major_news": 0.8,
    "other": 0.5,
    "blog": 0.3,
}
MARKET_DATA_WEIGHT = 0.9
# Age (days before the day asked) -> the share of its weight a dated web source keeps.
RECENCY_STEPS: tuple[tuple[int, float], ...] = ((180, 1.0), (365, 0.9), (3 * 365, 0.75))
OLD_SOURCE_WEIGHT = 0.6
GAP_PENALTY = 0.15
MIN_GAP_FACTOR = 0.4
FULL_DIVERSITY_DOMAINS = 4
MAX_DOMAIN_SHARE = 0.4
MIN_SOURCES = 3
# Below this weight a source is "low credibility" (blogs and unrated sites).
LOW_CREDIBILITY = 0.6
# A contradiction this severe or worse is a weak area with its own follow-up.
SEVERE_CONTRADICTION = 0.5
_COMPANY_NAMES: dict[str, str] = {ticker: name for ticker, name in COMMON_TICKERS.values()}

WeakAreaKind = Literal[
    "contradiction",
    "unanswered",
    "numbers_without_market_data",
    "single_source",
    "low_credibility",
    "stale",
    "dominant_domain",
    "few_sources",
    "one_domain",
]
# The weak areas that make evidence shallow, whatever its score.
SHALLOW_KINDS: frozenset[WeakAreaKind] = frozenset({"few_sources", "one_domain", "numbers_without_market_data"})


@dataclass(frozen=True)
class WeakArea:
    """Something the evidence lacks, in words, and the follow-up that would strengthen it (if any)."""

    kind: WeakAreaKind
    text: str
    about: str | None = None  # the sub-question it concerns
    follow_up: str | None = None


@dataclass
class EvidenceAssessment:
    """The confidence after a round, the weak areas behind it and the distinct sources counted."""

    confidence: Confidence
    weak_areas: list[WeakArea]
    sources: int

    def trusted(self, threshold: float) -> bool:
        """Whether research may stop on the evidence: confident enough, and not shallow."""
        return self.confidence.score >= threshold and not self.confidence.shallow


@dataclass
class _Claim:
    """A sub-question's answer (a claim) with the follow-ups asked to confirm it."""

    root: Finding
    findings: list[Finding] = field(default_factory=list)

    @property
    def answered(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "answered"]

    @property
    def from_market_data(self) -> bool:
        """Answered from structured data: market data, or the company's own filings."""
        return any(f.market_data is not None or f.filings is not None for f in self.answered)

    @property
    def web_sources(self) -> list[Source]:
        return [s for f in self.answered for s in f.sources]

    @property
    def domains(self) -> list[str]:
        return sorted({registered_domain(publisher_url(s)) for s in self.web_sources})

    @property
    def backed(self) -> bool:
        return self.from_market_data or len(self.domains) >= 2


@dataclass(frozen=True)
class _Counted:
    """One distinct source as the profile counts it."""

    domain: str
    weight: float
    web: bool
    opinion: bool


def classifier_for(findings: Sequence[Finding]) -> SourceClassifier:
    """The run's classifier: the companies its sub-questions name (tickers, and the common names of
    well-known ones) and the websites market data gave for them count as investor relations."""
    tickers = {ticker for f in findings for ticker in f.step.tickers}
    websites = [
        result.data.get("website") or ""
        for f in findings
        if f.market_data is not None
        for result in f.market_data.results
        if result.tool == "get_company_profile"
    ]
    names = [*tickers, *(_COMPANY_NAMES[t] for t in tickers if t in _COMPANY_NAMES)]
    return SourceClassifier.for_companies(names, websites)


def annotate_sources(sources: Iterable[Source], classifier: SourceClassifier, today: date) -> None:
    """Give web sources their `domain_type` and, when their address names it, their `published` day."""
    for source in sources:
        if source.kind != "web" or source.domain_type is not None:
            continue
        source.domain_type = classifier.domain_type(publisher_url(source))
        # A search API may give the day itself; else it is read from the address.
        source.published = source.published or published_from_url(source.url, today)


def assess(
    findings: Sequence[Finding],
    *,
    gaps: Sequence[str],
    contradictions: Sequence[Contradiction],
    today: date,
    weights: ConfidenceWeights,
) -> EvidenceAssessment:
    """The evidence profile of `findings` (every round's so far), given the gaps and unresolved
    contradictions the gap detector reported last. Annotates the web sources first."""
    classifier = classifier_for(findings)
    for finding in findings:
        annotate_sources(finding.sources, classifier, today)
    claims = _claims(findings)
    counted = _distinct_sources(findings, today)
    web = [c for c in counted.values() if c.web]

    coverage = _coverage(claims, len(gaps))
    credibility = _mean(c.weight for c in counted.values())
    diversity = _diversity(list(counted.values()), web)
    evidence = _evidence(claims)
    consistency = 1.0
    for contradiction in contradictions:
        consistency *= 1 - contradiction.severity / 2
    components = {
        "coverage": coverage,
        "credibility": credibility,
        "diversity": diversity,
        "evidence": evidence,
        "consistency": consistency,
    }
    score = sum(getattr(weights, name) * value for name, value in components.items())

    weak_areas = _weak_areas(claims, counted, contradictions, today)
    shallow = any(area.kind in SHALLOW_KINDS for area in weak_areas)
    confidence = Confidence(
        score=round(score, 3), **{name: round(value, 3) for name, value in components.items()}, shallow=shallow
    )
    return EvidenceAssessment(confidence=confidence, weak_areas=weak_areas, sources=len(counted))


def targeted_follow_ups(
    weak_areas: Sequence[WeakArea], *, asked: set[str], room: int
) -> list[tuple[SubQuestion, WeakArea]]:
    """Up to `room` follow-ups for the weak areas, in order, one per sub-question, none asked before
    (`asked` holds normalized questions)."""
    chosen: list[tuple[SubQuestion, WeakArea]] = []
    concerned: set[str | None] = set()
    for area in weak_areas:
        if len(chosen) >= room:
            break
        if area.follow_up is None or area.about in concerned or normalized_question(area.follow_up) in asked:
            continue
        concerned.add(area.about)
        chosen.append((SubQuestion(question=area.follow_up, type="qualitative"), area))
    return chosen


def describe_contradiction(contradiction: Contradiction) -> str:
    c = contradiction
    return f"{c.finding_a} and {c.finding_b} disagree: {c.claim_a} / {c.claim_b}"


# --- the components -------------------------------------------------------------------------------------


def _claims(findings: Sequence[Finding]) -> list[_Claim]:
    """Each planned sub-question's claim with its confirming follow-ups; analytical ones are left out."""
    by_id: dict[str, _Claim] = {}
    for finding in findings:
        if finding.step.about is None or finding.step.about not in by_id:
            by_id[finding.step.id] = _Claim(root=finding, findings=[finding])
        else:
            claim = by_id[finding.step.about]
            claim.findings.append(finding)
            by_id[finding.step.id] = claim  # a follow-up of a follow-up joins the same claim
    unique = {id(claim): claim for claim in by_id.values()}.values()
    return [claim for claim in unique if claim.root.status != "deferred"]


def _distinct_sources(findings: Sequence[Finding], today: date) -> dict[str, _Counted]:
    counted: dict[str, _Counted] = {}
    for finding in findings:
        if finding.status != "answered":
            continue
        for source in finding.sources:
            if source.url not in counted:
                weight = TYPE_WEIGHTS[source.domain_type or "other"] * _recency(source.published, today)
                opinion = is_opinion(publisher_url(source), source.title)
                counted[source.url] = _Counted(registered_domain(publisher_url(source)), weight, True, opinion)
        if finding.market_data is not None:
            for result in finding.market_data.results:
                market = _Counted(registered_domain(result.url), MARKET_DATA_WEIGHT, web=False, opinion=False)
                counted.setdefault(result.url, market)
        if finding.filings is not None:
            # A company's own filings with its regulator: a primary source, weighted as one, and one voice
            # however many of its filings are read (three 10-Qs are not three independent publishers).
            for symbol in finding.filings.companies():
                filed = _Counted("sec.gov", TYPE_WEIGHTS["regulator"], web=False, opinion=False)
                counted.setdefault(f"sec.gov filings of {symbol}", filed)
    return counted


def _recency(published: date | None, today: date) -> float:
    if published is None:
        return 1.0
    age = (today - published).days
    for days, share in RECENCY_STEPS:
        if age <= days:
            return share
    return OLD_SOURCE_WEIGHT


def _coverage(claims: Sequence[_Claim], open_gaps: int) -> float:
    if not claims:
        return 0.0
    answered = sum(1 for claim in claims if claim.answered) / len(claims)
    return answered * max(MIN_GAP_FACTOR, 1 - GAP_PENALTY * open_gaps)


def _diversity(counted: Sequence[_Counted], web: Sequence[_Counted]) -> float:
    if not counted:
        return 0.0
    shares: dict[str, int] = {}
    for source in counted:
        shares[source.domain] = shares.get(source.domain, 0) + 1
    largest = max(shares.values()) / len(counted)
    spread = 1.0 if largest <= MAX_DOMAIN_SHARE else (1 - largest) / (1 - MAX_DOMAIN_SHARE)
    distinct = min(1.0, len(shares) / FULL_DIVERSITY_DOMAINS)
    opinion = sum(1 for s in web if s.opinion) / len(web) if web else 0.0
    return (distinct + spread) / 2 * (1 - opinion / 2)


def _evidence(claims: Sequence[_Claim]) -> float:
    answered = [claim for claim in claims if claim.answered]
    if not answered:
        return 0.0
    backed = sum(1 for claim in answered if claim.backed) / len(answered)
    numerical = [claim for claim in claims if claim.root.step.type == "numerical"]
    if not numerical:
        return backed
    quantitative = _mean(_quantitative_backing(claim) for claim in numerical)
    return 0.6 * backed + 0.4 * quantitative


def _quantitative_backing(claim: _Claim) -> float:
    if claim.from_market_data:
        return 1.0
    return 0.5 if len(claim.domains) >= 2 else 0.0


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0


# --- weak areas -----------------------------------------------------------------------------------------


def _weak_areas(
    claims: Sequence[_Claim], counted: dict[str, _Counted], contradictions: Sequence[Contradiction], today: date
) -> list[WeakArea]:
    """What the evidence lacks, most pressing first: each kind in turn, claims in plan order."""
    areas = [
        WeakArea(
            "contradiction",
            describe_contradiction(c),
            about=c.finding_a,
            follow_up=prompts.FOLLOW_UP_CONTRADICTION.format(claim_a=c.claim_a, claim_b=c.claim_b),
        )
        for c in contradictions
        if c.severity >= SEVERE_CONTRADICTION
    ]
    for kind in ("unanswered", "numbers_without_market_data", "single_source", "low_credibility", "stale"):
        for claim in claims:
            area = _claim_weakness(kind, claim, today)
            if area is not None:
                areas.append(area)
    areas.extend(_dominant_domain(claims, counted))
    # Figures straight from market data need no second source; anything else does.
    if len(counted) < MIN_SOURCES and not all(claim.from_market_data for claim in claims):
        areas.append(WeakArea("few_sources", f"only {len(counted)} distinct source{'s' if len(counted) != 1 else ''}"))
    web_domains = {source.domain for source in counted.values() if source.web}
    if len(web_domains) == 1:
        areas.append(WeakArea("one_domain", f"every web source is from {next(iter(web_domains))}"))
    return areas


def _claim_weakness(kind: str, claim: _Claim, today: date) -> WeakArea | None:
    step = claim.root.step
    question = step.question
    if kind == "unanswered":
        if claim.answered:
            return None
        reason = claim.root.error or "no answer"
        follow_up = prompts.FOLLOW_UP_UNANSWERED.format(question=question)
        return WeakArea("unanswered", f"{step.id}: not answered ({reason})", step.id, follow_up)
    if not claim.answered or claim.from_market_data:
        return None
    domains = claim.domains
    named = ", ".join(domains) or "no source cited"
    if kind == "numbers_without_market_data":
        if step.type != "numerical" or len(domains) >= 2:
            return None
        return WeakArea(
            "numbers_without_market_data",
            f"{step.id}: figures from the web only, without market data ({named})",
            step.id,
            prompts.FOLLOW_UP_PRIMARY_FIGURES.format(question=question),
        )
    if kind == "single_source":
        if step.type == "numerical" or len(domains) >= 2:
            return None
        text = f"{step.id}: backed by one source ({named})" if domains else f"{step.id}: no source cited"
        follow_up = prompts.FOLLOW_UP_CONFIRM.format(question=question, domains=named)
        return WeakArea("single_source", text, step.id, follow_up)
    sources = claim.web_sources
    if not sources:
        return None
    if kind == "low_credibility":
        if max(TYPE_WEIGHTS[s.domain_type or "other"] for s in sources) >= LOW_CREDIBILITY:
            return None
        return WeakArea(
            "low_credibility",
            f"{step.id}: only blogs or unrated sites ({named})",
            step.id,
            prompts.FOLLOW_UP_AUTHORITATIVE.format(question=question),
        )
    dates = [s.published for s in sources]
    if None in dates or (today - max(d for d in dates if d is not None)).days <= RECENCY_STEPS[1][0]:
        return None
    newest = max(d for d in dates if d is not None)
    return WeakArea(
        "stale",
        f"{step.id}: newest source published {newest.isoformat()}",
        step.id,
        prompts.FOLLOW_UP_RECENT.format(question=question, today=today.isoformat()),
    )


def _dominant_domain(claims: Sequence[_Claim], counted: dict[str, _Counted]) -> list[WeakArea]:
    if len(counted) < MIN_SOURCES:
        return []
    shares: dict[str, int] = {}
    for source in counted.values():
        shares[source.domain] = shares.get(source.domain, 0) + 1
    domain, count = max(shares.items(), key=lambda item: item[1])
    if count / len(counted) <= MAX_DOMAIN_SHARE:
        return []
    text = f"{domain} holds {count / len(counted):.0%} of the sources"
    # The follow-up goes to the web claim leaning most on that domain (market data cannot be re-asked).
    leaning = [c for c in claims if not c.from_market_data and domain in c.domains]
    if not leaning:
        return [WeakArea("dominant_domain", text)]
    claim = max(leaning, key=lambda c: sum(1 for s in c.web_sources if registered_domain(publisher_url(s)) == domain))
    step = claim.root.step
    follow_up = prompts.FOLLOW_UP_OTHER_SOURCES.format(question=step.question, domain=domain)
    return [WeakArea("dominant_domain", text, step.id, follow_up)]
