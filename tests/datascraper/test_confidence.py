"""The evidence confidence on hand-built findings: each component, the shallow rule, the weak areas and
the follow-ups they ask for, and how sources are classified.

Expected values are worked out by hand from the rules in `research_engine/confidence.py`.
"""

from __future__ import annotations

from datetime import date

import pytest
from pydantic import ValidationError

from datascraper.market_data.finding_schemas import MarketDataFinding, ToolResult
from datascraper.models_config import ConfidenceWeights, ResearchConfig
from datascraper.research_engine.confidence import assess, targeted_follow_ups
from datascraper.research_engine.source_types import (
    SourceClassifier,
    is_opinion,
    published_from_url,
    registered_domain,
)
from datascraper.research_engine.state import Finding, PlannedStep
from datascraper.schemas import Source
from datascraper.trace_schemas import Contradiction

TODAY = date(2025, 6, 13)
WEIGHTS = ConfidenceWeights()


def web(step_id: str, question: str, *urls: str, type: str = "qualitative", about: str | None = None) -> Finding:
    """A web finding citing `urls`."""
    step = PlannedStep(id=step_id, question=question, type=type, route="web_search", about=about)
    sources = [Source(n=n, title=f"Page {n}", url=url, kind="web") for n, url in enumerate(urls, start=1)]
    return Finding(step=step, status="answered", route="web_search", text="Found [1].", sources=sources)


def market(step_id: str, symbol: str) -> Finding:
    """A numerical finding answered from market data (one income statement)."""
    url = f"https://finance.yahoo.com/quote/{symbol}/financials"
    step = PlannedStep(
        id=step_id, question=f"{symbol} revenue?", type="numerical", route="market_data", tickers=[symbol],
        data="income_statement",
    )  # fmt: skip
    result = ToolResult(
        symbol=symbol, tool="get_financial_statement", data={"symbol": symbol}, url=url, title=f"{symbol} income"
    )
    data = MarketDataFinding(tickers=[symbol], data="income_statement", results=[result])
    return Finding(step=step, status="answered", route="market_data", text="figures", market_data=data)


def failed(step_id: str, question: str) -> Finding:
    step = PlannedStep(id=step_id, question=question, type="qualitative", route="web_search")
    return Finding(step=step, status="failed", route="web_search", error="upstream_error")


def judged(findings, *, gaps=(), contradictions=(), weights=WEIGHTS):
    return assess(findings, gaps=list(gaps), contradictions=list(contradictions), today=TODAY, weights=weights)


ONE_DOMAIN = [
    web("q1", "What do analysts say about Apple?", "https://www.reuters.com/a"),
    web("q2", "What did Apple guide for?", "https://www.reuters.com/b", "https://www.reuters.com/c"),
]
FIVE_CREDIBLE_DOMAINS = [
    web("q1", "What do analysts say about Apple?", "https://www.sec.gov/a", "https://www.reuters.com/a"),
    web(
        "q2", "What did Apple guide for?",
        "https://investor.apple.com/b", "https://www.ft.com/c", "https://www.bloomberg.com/d",
    ),
]


# --- the components ----------------------------------------------------------------------------------------


def test_evidence_from_one_domain_is_shallow_and_below_the_threshold():
    assessment = judged(ONE_DOMAIN)

    c = assessment.confidence
    assert (c.coverage, c.credibility, c.consistency) == (1.0, 0.8, 1.0)  # all answered; major news; no contradictions
    assert c.diversity == 0.125  # (1 of 4 domains + no spread: one domain holds 100%) / 2
    assert c.evidence == 0.0  # neither claim has a second, independent source
    assert c.score == pytest.approx(0.25 * 1 + 0.25 * 0.8 + 0.15 * 0.125 + 0.20 * 0 + 0.15 * 1, abs=1e-3)
    assert c.shallow is True and not assessment.trusted(0.75)
    assert assessment.sources == 3
    assert [area.kind for area in assessment.weak_areas] == ["single_source", "single_source", "dominant_domain", "one_domain"]
    assert assessment.weak_areas[0].text == "q1: backed by one source (reuters.com)"
    assert assessment.weak_areas[-1].text == "every web source is from reuters.com"


def test_evidence_from_five_credible_domains_is_trusted():
    assessment = judged(FIVE_CREDIBLE_DOMAINS)

    c = assessment.confidence
    assert c.credibility == pytest.approx((1.0 + 0.8 + 0.9 + 0.8 + 0.8) / 5, abs=1e-3)  # SEC, Reuters, IR, FT, Bloomberg
    assert (c.coverage, c.diversity, c.evidence, c.consistency) == (1.0, 1.0, 1.0, 1.0)
    assert c.score == pytest.approx(0.25 + 0.25 * 0.86 + 0.15 + 0.20 + 0.15, abs=1e-3)
    assert c.shallow is False and assessment.trusted(0.75)
    assert assessment.weak_areas == []
    assert targeted_follow_ups(assessment.weak_areas, asked=set(), room=5) == []


def test_unresolved_contradictions_lower_consistency_by_severity_and_a_severe_one_asks_for_a_follow_up():
    severe = Contradiction(
        claim_a="Revenue was $94.9B", finding_a="q1", claim_b="Revenue was $89.5B", finding_b="q2", severity=1.0
    )
    minor = Contradiction(claim_a="Call on May 1", finding_a="q1", claim_b="Call on May 2", finding_b="q2", severity=0.2)

    calm = judged(FIVE_CREDIBLE_DOMAINS)
    disputed = judged(FIVE_CREDIBLE_DOMAINS, contradictions=[severe, minor])

    assert disputed.confidence.consistency == pytest.approx(0.5 * 0.9)
    assert calm.confidence.score - disputed.confidence.score == pytest.approx(0.15 * (1 - 0.45), abs=1e-3)
    [area] = disputed.weak_areas  # only the severe one is a weak area
    assert area.kind == "contradiction" and area.about == "q1"
    assert area.text == "q1 and q2 disagree: Revenue was $94.9B / Revenue was $89.5B"
    [(follow_up, _)] = targeted_follow_ups(disputed.weak_areas, asked=set(), room=5)
    assert '"Revenue was $94.9B" versus "Revenue was $89.5B"' in follow_up.question


def test_open_gaps_and_failed_sub_questions_lower_coverage():
    findings = [*FIVE_CREDIBLE_DOMAINS, failed("q3", "What did the CFO say?")]

    assessment = judged(findings, gaps=["the CFO's comments", "margins"])

    assert assessment.confidence.coverage == pytest.approx(2 / 3 * (1 - 2 * 0.15), abs=1e-3)
    [area] = [a for a in assessment.weak_areas if a.kind == "unanswered"]
    assert area.text == "q3: not answered (upstream_error)" and area.follow_up.startswith("What did the CFO say?")


def test_analytical_sub_questions_do_not_count_in_coverage():
    step = PlannedStep(id="q3", question="Which is better?", type="analytical", route="synthesis")
    findings = [*FIVE_CREDIBLE_DOMAINS, Finding(step=step, status="deferred", route="synthesis")]

    assert judged(findings).confidence.coverage == 1.0


def test_numbers_from_market_data_are_backed_and_not_shallow_with_two_sources():
    assessment = judged([market("q1", "AAPL"), market("q2", "MSFT")])

    c = assessment.confidence
    assert (c.coverage, c.credibility, c.evidence, c.shallow) == (1.0, 0.9, 1.0, False)
    assert c.diversity == 0.125  # one provider
    assert assessment.weak_areas == []  # two sources, but figures straight from market data need no second


def test_numbers_from_one_web_source_are_shallow_and_ask_for_primary_figures():
    findings = [
        market("q1", "AAPL"),
        web("q2", "What was Microsoft's revenue in fiscal 2024?", "https://www.cnbc.com/msft", type="numerical"),
        web("q3", "What do analysts say?", "https://www.reuters.com/a", "https://www.ft.com/b"),
    ]

    assessment = judged(findings)

    assert assessment.confidence.shallow is True
    assert assessment.confidence.evidence == pytest.approx(0.6 * 2 / 3 + 0.4 * (1 + 0) / 2, abs=1e-3)
    [area] = [a for a in assessment.weak_areas if a.kind == "numbers_without_market_data"]
    assert area.text == "q2: figures from the web only, without market data (cnbc.com)"
    [(follow_up, chosen)] = targeted_follow_ups(assessment.weak_areas, asked=set(), room=5)
    assert chosen is area and follow_up.type == "qualitative"
    assert follow_up.question.startswith("What was Microsoft's revenue in fiscal 2024? Give the figures as reported")


def test_a_confirming_follow_up_counts_towards_the_claim_it_was_asked_about():
    first = web("q1", "What do analysts say about Apple?", "https://www.reuters.com/a")
    before = judged([first, *FIVE_CREDIBLE_DOMAINS[1:]])
    confirmation = web("q3", "What do analysts say about Apple? Confirm...", "https://www.wsj.com/x", about="q1")

    after = judged([first, *FIVE_CREDIBLE_DOMAINS[1:], confirmation])

    assert [a.kind for a in before.weak_areas] == ["single_source"]
    assert before.confidence.evidence == 0.5 and after.confidence.evidence == 1.0
    assert after.confidence.coverage == 1.0  # still two claims, both answered
    assert after.weak_areas == []


def test_dated_old_sources_lose_credibility_and_a_claim_backed_only_by_old_ones_is_stale():
    old = web(
        "q1",
        "What do analysts say about Apple?",
        "https://www.reuters.com/markets/apple-2023-01-10/",  # 2 years 5 months before TODAY
        "https://www.ft.com/content/2024/01/05/apple",  # 1 year 5 months
    )

    assessment = judged([old, *FIVE_CREDIBLE_DOMAINS[1:]])

    assert [s.published for s in old.sources] == [date(2023, 1, 10), date(2024, 1, 5)]
    assert assessment.confidence.credibility == pytest.approx((0.8 * 0.75 + 0.8 * 0.75 + 0.9 + 0.8 + 0.8) / 5, abs=1e-3)
    [stale] = [a for a in assessment.weak_areas if a.kind == "stale"]
    assert stale.text == "q1: newest source published 2024-01-05"
    assert "as close as possible to 2025-06-13" in stale.follow_up


def test_opinion_pieces_and_blogs_lower_diversity_and_credibility():
    findings = [
        web("q1", "Is Apple a buy?", "https://seekingalpha.com/article/1", "https://www.wsj.com/opinion/apple"),
        web("q2", "What do analysts say?", "https://medium.com/@someone/apple", "https://www.reuters.com/a"),
    ]

    assessment = judged(findings)

    # 4 domains, none over 40%; 2 of 4 web sources are opinion pieces
    assert assessment.confidence.diversity == pytest.approx(1.0 * (1 - 0.5 * 2 / 4))
    assert assessment.confidence.credibility == pytest.approx((0.3 + 0.8 + 0.3 + 0.8) / 4)


def test_only_blogs_or_unrated_sites_behind_a_claim_ask_for_authoritative_sources():
    findings = [web("q1", "What is Apple's moat?", "https://medium.com/a", "https://www.example.com/b")]

    assessment = judged(findings)

    [area] = [a for a in assessment.weak_areas if a.kind == "low_credibility"]
    assert area.text == "q1: only blogs or unrated sites (example.com, medium.com)"
    assert "Use authoritative sources only" in area.follow_up


def test_targeted_follow_ups_take_one_weak_area_per_sub_question_skip_questions_asked_and_fit_the_room():
    assessment = judged(ONE_DOMAIN)
    q1_follow_up = assessment.weak_areas[0].follow_up
    asked = {" ".join(q1_follow_up.lower().split())}

    follow_ups = targeted_follow_ups(assessment.weak_areas, asked=asked, room=5)

    # q1's was asked already; q2 gets one (its single-source one, not also the dominant-domain one)
    assert [(area.kind, area.about) for _, area in follow_ups] == [("single_source", "q2")]
    assert targeted_follow_ups(assessment.weak_areas, asked=set(), room=1)[0][1].about == "q1"
    assert targeted_follow_ups(assessment.weak_areas, asked=set(), room=0) == []


def test_sources_are_annotated_with_their_publisher_and_date_once():
    filing, article = "https://www.sec.gov/Archives/edgar/data/320193/x.htm", "https://www.cnbc.com/2025/05/01/apple.html"
    finding = web("q1", "Apple?", filing, article)

    judged([finding])

    assert [(s.domain_type, s.published) for s in finding.sources] == [
        ("regulator", None),
        ("major_news", date(2025, 5, 1)),
    ]
    assert finding.sources[1].model_dump(mode="json")["published"] == "2025-05-01"
    assert "published" not in finding.sources[0].model_dump(mode="json")  # unknown: left out


# --- the weights ---------------------------------------------------------------------------------------------


def test_the_weights_are_read_from_the_environment_the_unnamed_keeping_their_defaults():
    config = ResearchConfig.from_env({"RESEARCH_CONFIDENCE_WEIGHTS": "coverage=0.45, credibility=0.1,diversity=0.1"})

    assert config.confidence_weights == ConfidenceWeights(
        coverage=0.45, credibility=0.1, diversity=0.1, evidence=0.2, consistency=0.15
    )
    assert ResearchConfig.from_env({}).confidence_weights == ConfidenceWeights(
        coverage=0.25, credibility=0.25, diversity=0.15, evidence=0.2, consistency=0.15
    )
    assert ResearchConfig.from_env({"RESEARCH_CONFIDENCE_THRESHOLD": "0.6"}).confidence_threshold == 0.6


@pytest.mark.parametrize("text", ["coverage=0.5", "coverage", "coverage=abc", "novelty=0.1,coverage=0.15"])
def test_weights_that_do_not_sum_to_one_or_cannot_be_read_stop_the_configuration(text):
    with pytest.raises(ValidationError):
        ResearchConfig.from_env({"RESEARCH_CONFIDENCE_WEIGHTS": text})


def test_other_weights_change_the_score():
    coverage_only = ConfidenceWeights(coverage=1, credibility=0, diversity=0, evidence=0, consistency=0)

    assert judged(ONE_DOMAIN, weights=coverage_only).confidence.score == 1.0


# --- classifying sources -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://www.sec.gov/Archives/edgar/data/320193/000032019325000079/aapl-20250628.htm", "regulator"),
        ("https://www.fca.org.uk/news", "regulator"),
        ("https://www.nasdaq.com/market-activity/stocks/aapl", "exchange"),
        ("https://www.bls.gov/cpi/", "government"),
        ("https://www.ons.gov.uk/economy", "government"),
        ("https://www.imf.org/en/Publications", "government"),
        ("https://web.mit.edu/paper", "academic"),
        ("https://www.nber.org/papers/w1", "academic"),
        ("https://investor.apple.com/sec-filings/", "company_ir"),
        ("https://ir.tesla.com/press-release/x", "company_ir"),
        ("https://www.apple.com/newsroom/2025/05/apple-reports-second-quarter-results/", "company_ir"),
        ("https://www.businesswire.com/news/home/2025/x", "company_ir"),
        ("https://www.somecorp.com/investor-relations/results", "company_ir"),
        ("https://www.reuters.com/technology/apple-2025-05-01/", "major_news"),
        ("https://www.forbes.com/sites/someone/2025/05/01/apple/", "blog"),
        ("https://medium.com/@analyst/apple", "blog"),
        ("https://blog.example.com/apple", "blog"),
        ("https://www.example.com/apple", "other"),
    ],
)
def test_sources_are_classified_by_their_address(url, expected):
    assert SourceClassifier.for_companies(["AAPL", "Apple"]).domain_type(url) == expected


def test_the_domains_of_the_companies_asked_about_and_their_websites_are_investor_relations():
    classifier = SourceClassifier.for_companies(["MSFT", "Microsoft"], websites=["https://www.abc.xyz"])

    assert classifier.domain_type("https://www.microsoft.com/en-us/about") == "company_ir"
    assert classifier.domain_type("https://abc.xyz/investor/") == "company_ir"
    assert SourceClassifier().domain_type("https://www.microsoft.com/en-us/about") == "other"


@pytest.mark.parametrize(
    ("url", "domain"),
    [
        ("https://www.reuters.com/a", "reuters.com"),
        ("https://reuters.com/a", "reuters.com"),
        ("https://news.bbc.co.uk/x", "bbc.co.uk"),
        ("https://www.afr.com.au/x", "afr.com.au"),
        ("https://finance.yahoo.com/quote/AAPL", "yahoo.com"),
    ],
)
def test_domains_are_compared_by_their_registered_part(url, domain):
    assert registered_domain(url) == domain


@pytest.mark.parametrize(
    ("url", "published"),
    [
        ("https://www.cnbc.com/2025/05/01/apple-earnings.html", date(2025, 5, 1)),
        ("https://www.reuters.com/technology/apple-results-2025-05-01/", date(2025, 5, 1)),
        ("https://example.com/news/20250501-apple", None),  # run together, as filings name their period
        ("https://www.sec.gov/Archives/edgar/data/320193/aapl-20250329.htm", None),
        ("https://www.apple.com/newsroom/2025/05/apple-reports/", None),  # no day: unknown, not guessed
        ("https://example.com/2025/02/30/x", None),  # not a day
        ("https://example.com/2026/01/01/x", None),  # after the day asked
        ("https://example.com/article/123456789", None),
    ],
)
def test_the_publication_day_is_read_from_the_address_only_when_it_names_one(url, published):
    assert published_from_url(url, TODAY) == published


def test_opinion_pieces_are_recognised_by_section_title_or_site():
    assert is_opinion("https://www.wsj.com/opinion/apple-x", "Apple")
    assert is_opinion("https://www.reuters.com/breakingviews/apple/", "Apple")
    assert is_opinion("https://www.ft.com/content/x", "Opinion: Apple is overvalued")
    assert is_opinion("https://seekingalpha.com/article/1-apple", "Apple")
    assert not is_opinion("https://www.reuters.com/technology/apple/", "Apple beats estimates")
