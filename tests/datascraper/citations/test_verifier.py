"""The whole check: every marker judged, each page read once, concurrency and the deadline held, market data
checked without a fetch. Pages come from a local server; private addresses are allowed for it."""

from __future__ import annotations

import time

import pytest

from datascraper.citations import MarketEvidence, verify_citations
from datascraper.models_config import ResearchConfig
from datascraper.schemas import Source
from tests.datascraper.citations.test_support import EVIDENCE
from tests.datascraper.citations.test_support import SOURCE as MARKET_SOURCE
from tests.fakes.page_server import FakePageServer, article

CONFIG = ResearchConfig(citation_fetch_allow_private=True)


def web(n: int, url: str) -> Source:
    return Source(n=n, title=f"Page {n}", url=url, kind="web")


async def verify(
    answer: str,
    sources: list[Source],
    market: dict[int, MarketEvidence] | None = None,
    *,
    config: ResearchConfig = CONFIG,
    time_limit_s: float = 5.0,
):
    return await verify_citations(answer, sources, market or {}, config=config, time_limit_s=time_limit_s)


async def test_each_marker_gets_a_status_in_the_answers_order_and_a_page_cited_twice_is_fetched_once(
    page_server: FakePageServer,
):
    results = page_server.add(
        "/results",
        article("Apple results", "Apple reported revenue of $391.04 billion for fiscal 2024.", "Services grew 13%."),
    )
    gone = page_server.url("/gone")
    answer = "Apple's revenue was $391 billion [1]. Services grew 13% [1]. iPhone sales doubled [1]. Macs too [2]."

    verification = await verify(answer, [web(1, results), web(2, gone)])

    assert [(c.marker_index, c.n, c.status) for c in verification.citations] == [
        (0, 1, "supported"),
        (1, 1, "supported"),
        (2, 1, "unsupported"),
        (3, 2, "unreachable"),
    ]
    assert "$391.04 billion" in verification.citations[0].evidence
    assert verification.citations[2].evidence is None
    assert verification.citations[3].reason == "http_404", "an unreachable citation says why"
    assert [c.reason for c in verification.citations[:3]] == [None, None, None]
    assert page_server.hits == {"/results": 1, "/gone": 1}
    assert verification.signal() | {"elapsed_ms": 0} == {
        "supported": 2,
        "unsupported": 1,
        "unreachable": 1,
        "unreachable_reasons": {"http_404": 1},
        "pages": 2,
        "elapsed_ms": 0,
    }


async def test_markers_naming_no_source_are_left_out_but_keep_their_place(page_server: FakePageServer):
    url = page_server.add("/a", article("A", "Revenue was $10.5 billion."))

    verification = await verify("Revenue was $10.5 billion [7]. Revenue was $10.5 billion [1].", [web(1, url)])

    assert [(c.marker_index, c.n, c.status) for c in verification.citations] == [(1, 1, "supported")]


async def test_pages_are_fetched_with_bounded_concurrency(page_server: FakePageServer):
    pages = [page_server.add(f"/p{i}", article(f"P{i}", f"Revenue was ${i}.5 billion."), delay_s=0.2) for i in range(1, 7)]
    sources = [web(i, url) for i, url in enumerate(pages, start=1)]
    answer = " ".join(f"Revenue was ${i}.5 billion [{i}]." for i in range(1, 7))

    verification = await verify(answer, sources, config=CONFIG.model_copy(update={"citation_fetch_concurrency": 2}))

    assert [c.status for c in verification.citations] == ["supported"] * 6
    assert page_server.peak_in_flight == 2


async def test_what_is_not_checked_by_the_deadline_is_unreachable(page_server: FakePageServer):
    quick = page_server.add("/quick", article("Quick", "Revenue was $5.5 billion."))
    slow = page_server.add("/slow", article("Slow", "Revenue was $6.5 billion."), delay_s=5)

    started = time.monotonic()
    verification = await verify(
        "Revenue was $5.5 billion [1]. Revenue was $6.5 billion [2].", [web(1, quick), web(2, slow)], time_limit_s=0.5
    )

    assert time.monotonic() - started < 4  # not the page's 5 s
    assert [(c.status, c.reason) for c in verification.citations] == [("supported", None), ("unreachable", "deadline")]


async def test_a_claim_past_the_size_cap_of_its_page_is_not_found(page_server: FakePageServer):
    filler = [f"Background paragraph {i} about nothing in particular." for i in range(3000)]
    body = article("Long page", "Early on, revenue was $7.25 billion.", *filler, "At the end, net income was $1.75B.")
    url = page_server.add("/long", body)
    config = CONFIG.model_copy(update={"citation_page_max_bytes": 65_536})
    assert len(body) > 2 * 65_536

    answer = "Revenue was $7.25 billion [1]. Net income was $1.75 billion [1]."

    verification = await verify(answer, [web(1, url)], config=config)

    assert [c.status for c in verification.citations] == ["supported", "unsupported"]
    # With the whole page read, both are found: the cap is what hid the second.
    whole = await verify(answer, [web(1, url)])
    assert [c.status for c in whole.citations] == ["supported", "supported"]


async def test_market_data_citations_are_checked_against_their_tool_output_without_a_fetch(page_server: FakePageServer):
    page = page_server.add("/news", article("News", "Apple's revenue was $391 billion."))
    answer = (
        "Apple's revenue was $391.04 billion [2]. It grew 2.0% [2]. Analysts expected 12.3% growth [2]. "
        "Apple's revenue was $391 billion [1]."
    )

    verification = await verify(answer, [web(1, page), MARKET_SOURCE], {MARKET_SOURCE.n: EVIDENCE})

    assert [(c.n, c.status) for c in verification.citations] == [
        (2, "supported"),
        (2, "supported"),
        (2, "unsupported"),
        (1, "supported"),
    ]
    assert verification.citations[0].evidence == "AAPL TotalRevenue 2024-09-30 = 391,035,000,000"
    assert verification.pages == 1 and page_server.hits == {"/news": 1}


async def test_a_market_data_source_with_no_tool_output_is_unreachable():
    verification = await verify("Revenue was $391.04 billion [2].", [MARKET_SOURCE])

    assert [(c.status, c.reason) for c in verification.citations] == [("unreachable", "no_market_data")]


@pytest.mark.parametrize("answer", ["", "No citations at all."])
async def test_an_answer_without_citations_needs_no_fetch(answer, page_server: FakePageServer):
    verification = await verify(answer, [web(1, page_server.url("/x"))])

    assert verification.citations == [] and verification.pages == 0 and not page_server.hits
