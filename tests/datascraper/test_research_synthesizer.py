"""The synthesizer's source list and its citation check, which runs on the text as it streams."""

from __future__ import annotations

import pytest

from datascraper.research_engine.state import Finding, PlannedStep
from datascraper.research_engine.synthesizer import CitationGuard, SourceBook, render_findings
from datascraper.schemas import Source


def guard_in_chunks(text: str, size: int, valid: set[int]) -> tuple[str, CitationGuard]:
    guard = CitationGuard(valid=valid)
    shown = "".join(guard.feed(text[i : i + size]) for i in range(0, len(text), size)) + guard.flush()
    return shown, guard


@pytest.mark.parametrize("size", [1, 2, 3, 5, 1000])
def test_markers_that_resolve_pass_and_others_are_dropped_however_the_text_is_split(size):
    text = "Revenue rose [1]. Margins fell [2, 7]. Unknown [9]. A list [a] and [ 3 ] stays. Last [3]"

    shown, guard = guard_in_chunks(text, size, {1, 2, 3})

    assert shown == "Revenue rose [1]. Margins fell [2]. Unknown . A list [a] and [3] stays. Last [3]"
    assert (guard.resolved, guard.dropped) == (4, 2)


def test_an_unclosed_bracket_is_released_at_the_end():
    shown, guard = guard_in_chunks("Ends with [12", 4, {1})

    assert shown == "Ends with [12" and guard.dropped == 0


def test_sources_are_merged_by_url_and_markers_renumbered():
    book = SourceBook()
    book.add("Yahoo Finance — AAPL quote", "https://finance.yahoo.com/quote/AAPL", "market_data")
    first = [Source(n=1, title="A", url="https://a.example/x?utm_source=openai", kind="web")]
    second = [
        Source(n=1, title="B", url="https://b.example/y", kind="web"),
        Source(n=2, title="A again", url="https://a.example/x", kind="web"),
    ]

    assert book.renumber("Fact [1].", first) == "Fact [2]."
    assert book.renumber("Other [1] and same [2]; stray [5].", second) == "Other [3] and same [2]; stray ."
    assert [(s.n, s.url) for s in book.sources] == [
        (1, "https://finance.yahoo.com/quote/AAPL"),
        (2, "https://a.example/x"),
        (3, "https://b.example/y"),
    ]


def test_findings_are_rendered_in_plan_order_with_failures_and_deferred_parts_stated():
    def step(n: int, type: str = "qualitative", route: str = "web_search") -> PlannedStep:
        return PlannedStep(id=f"q{n}", question=f"Question {n}?", type=type, route=route)

    findings = [
        Finding(step=step(10), status="answered", route="web_search", text="Ten [1].",
                sources=[Source(n=1, title="T", url="https://t.example", kind="web")]),
        Finding(step=step(2), status="failed", route="web_search", error="sub_question_timeout"),
        Finding(step=step(3, "analytical", "synthesis"), status="deferred", route="synthesis"),
    ]

    text = render_findings(findings, SourceBook())

    assert text.index("### q2") < text.index("### q3") < text.index("### q10")
    assert "Not answered: the research for it took too long." in text
    assert "Analytical: answer this yourself from the other findings." in text
    assert "Ten [1]." in text
