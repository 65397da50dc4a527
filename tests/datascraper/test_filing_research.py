"""Research with the SEC's filings as a source: the real router, executor, synthesizer and citation check,
the real MCP server and client, the real SEC client over the fake SEC on loopback, the real yfinance over
canned Yahoo replies, and the fake OpenAI server. Only the far ends are fakes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest

from datascraper.models_config import get_research_config
from datascraper.research_engine.data import filings as filing_research
from datascraper.research_engine.data.filings import FilingFinding, FilingToolResult
from datascraper.research_engine.state import Finding, plan_steps
from datascraper.schemas import Source
from tests.datascraper.conftest import SEC_USER_AGENT, install_market_data
from tests.datascraper.research_support import (
    gaps,
    is_synthesis,
    of_type,
    requests_of,
    run,
    script_analysis,
    script_gaps,
    script_synthesis,
    script_well_sourced_searches,
    searched,
    sub,
    summary_of,
)
from tests.fakes.sec_server import FIXTURES, FakeSecServer
from tests.fakes.yfinance import FakeYahoo, Response
from tests.fakes.yfinance import _reply as yahoo_reply


class ThrottledYahoo(FakeYahoo):
    """Yahoo answering 429 to every request, as it does to a client it throttles."""

    def serve(self, method: str, url: str, params: dict[str, Any], body: Any) -> Response:
        return yahoo_reply(url, 429, "Too Many Requests", "text/plain")


@pytest.fixture
def yahoo_throttled(sec_server: FakeSecServer) -> Iterator[FakeSecServer]:
    """The filing tools on the fake SEC, and Yahoo throttling every request."""
    for _ in install_market_data(sec_server, user_agent=SEC_USER_AGENT, yahoo=ThrottledYahoo()):
        yield sec_server


@pytest.fixture
def filings_off(sec_server: FakeSecServer) -> Iterator[FakeSecServer]:
    """The same server without SEC_USER_AGENT: the filing tools answer not_configured."""
    for _ in install_market_data(sec_server, user_agent=""):
        yield sec_server


def synthesis_prompt(fake) -> str:
    [request] = requests_of(fake, is_synthesis)
    return request.input_text


def filing_sources(events: list) -> list[Source]:
    return [source for source in summary_of(events).sources if source.kind == "filing"]


APPLE_REVENUE = sub(
    "What was Apple's revenue in fiscal 2023 and fiscal 2024?",
    "numerical",
    ["AAPL"],
    "income_statement",
    frequency="annual",
    fiscal_period="FY2023-FY2024",
)


async def test_a_statement_question_cites_each_figure_to_the_filing_that_reported_it(fake_openai, filed):
    script_analysis(fake_openai, APPLE_REVENUE, sub("How did it change?", "analytical"))
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "Apple's FY2024 revenue was $391.04 billion [1].")

    events = await run("How did Apple's revenue change from fiscal 2023 to fiscal 2024?")

    [ten_k] = filing_sources(events)
    assert (ten_k.form, ten_k.period, ten_k.filed) == ("10-K", "FY2024", date(2024, 11, 1))
    assert ten_k.url.endswith("/Archives/edgar/data/320193/000032019324000123/0000320193-24-000123-index.htm")
    assert ten_k.title == "SEC EDGAR — Apple Inc. 10-K for FY2024, filed 2024-11-01"
    prompt = synthesis_prompt(fake_openai)
    # Figures as filed come before Yahoo's, each with its filing's number; FY2023 as the FY2024 10-K restates
    # it (the latest filing wins), with its fiscal label from the filing.
    assert prompt.index("as reported to the SEC") < prompt.index("Yahoo Finance — AAPL income statement")
    assert "FY2024 (2023-10-01 to 2024-09-28; calendar frame CY2024): 391,035,000,000 USD" in prompt
    assert f"10-K filed 2024-11-01 [{ten_k.n}]" in prompt
    assert "FY2023 (2022-09-25 to 2023-09-30" in prompt
    # Yahoo agrees with the filing: nothing is listed as a contradiction.
    assert "### Contradictions" not in prompt
    assert summary_of(events).signals["filing_hits"] == 1
    # The step stays a market data step: the filing tools are reached through the same server.
    assert ("q1", "done", "market_data") in [(e.sub_question_id, e.state, e.route) for e in of_type(events, "step")]


async def test_a_fact_computed_from_figures_the_filing_bears_out_cites_the_filing(fake_openai, filed):
    script_analysis(fake_openai, APPLE_REVENUE, sub("How did it change?", "analytical"))
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "Revenue grew.")

    summary = summary_of(await run("How did Apple's revenue change from fiscal 2023 to fiscal 2024?"))

    [ten_k] = [source for source in summary.sources if source.kind == "filing"]
    growth = next(fact for fact in summary.facts if fact.kind == "growth" and fact.inputs[0].line == "TotalRevenue")
    assert {item.source.url for item in growth.inputs} == {ten_k.url}
    assert {item.source.n for item in growth.inputs} == {ten_k.n}


async def test_a_cited_filing_figure_is_checked_against_the_value_the_filing_reported(fake_openai, filed, verifying):
    script_analysis(fake_openai, APPLE_REVENUE, sub("How did it change?", "analytical"))
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(
        fake_openai,
        "Apple's revenue was $391.04 billion in fiscal 2024 [1].",
        " It was $401.2 billion in fiscal 2023 [1].",
    )

    events = await run("How did Apple's revenue change from fiscal 2023 to fiscal 2024?")

    [verification] = of_type(events, "verification")
    assert [check.status for check in verification.citations] == ["supported", "unsupported"]
    assert "AAPL revenue FY2024 = 391,035,000,000.00 USD (10-K filed 2024-11-01)" in verification.citations[0].evidence
    numbers = summary_of(events).signals["numbers"]
    assert numbers["checked"] == 2 and [u["value"] for u in numbers["unmatched_values"]] == ["$401.2 billion"]


async def test_yahoo_figures_that_differ_from_the_filing_are_listed_as_contradictions_with_both_sources(
    fake_openai, filed
):
    # The fake Yahoo's NVIDIA diluted EPS is not NVIDIA's (its lines besides revenue and net income are
    # Apple's, scaled); the filing's is 2.94 for FY2025, and 1.19 for FY2024 as restated for the split.
    script_analysis(
        fake_openai,
        sub("What were NVIDIA's revenue and EPS in fiscal 2025?", "numerical", ["NVDA"], "income_statement",
            frequency="annual", fiscal_period="FY2025"),
    )  # fmt: skip
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "NVIDIA's diluted EPS was $2.94 [1].")

    events = await run("What were NVIDIA's revenue and diluted EPS in fiscal 2025?")

    prompt = synthesis_prompt(fake_openai)
    contradictions = prompt[prompt.index("### Contradictions") :]
    assert "Yahoo Finance: NVDA Diluted EPS for the annual period ending 2025-01-26" in contradictions
    assert (
        "SEC EDGAR — NVIDIA CORP 10-K for FY2025, filed 2025-02-26: FY2025 us-gaap:EarningsPerShareDiluted is 2.94"
        in (contradictions)
    )
    # Revenue agrees (130,497 million both): not listed.
    assert "Total Revenue" not in contradictions
    assert [s.form for s in filing_sources(events)] == ["10-K"]


async def test_a_question_about_a_companys_own_risks_reads_its_10k_before_the_web(fake_openai, filed, verifying):
    script_analysis(
        fake_openai,
        sub("What risks does Apple's latest 10-K name about its supply chain?", "qualitative", ["AAPL"], "filing_text"),
    )
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(
        fake_openai,
        "Apple says substantially all of its manufacturing is performed by outsourcing partners located "
        "primarily in China mainland, India, Japan, South Korea, Taiwan and Vietnam [1].",
    )

    events = await run("What supply chain risks does Apple disclose?")

    assert requests_of(fake_openai, searched("What risks does Apple's latest 10-K name")) == []
    [source] = filing_sources(events)
    assert (source.form, source.filed) == ("10-K", date(2024, 11, 1))
    assert source.title.endswith("Item 1A. Risk Factors")
    prompt = synthesis_prompt(fake_openai)
    assert "Item 1A. Risk Factors (the filing's own words)" in prompt
    [verification] = of_type(events, "verification")
    assert [check.status for check in verification.citations] == ["supported"]


async def test_an_earnings_release_question_reads_the_8k_item(fake_openai, filed):
    script_analysis(
        fake_openai,
        sub("What did Apple's latest earnings release say?", "qualitative", ["AAPL"], "filing_text", section="2.02"),
    )
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "Apple reported its results [1].")

    events = await run("What did Apple's latest earnings release say?")

    [source] = filing_sources(events)
    assert (source.form, source.period, source.filed) == ("8-K", "2025-01-30", date(2025, 1, 30))
    assert "Item 2.02" in source.title


async def test_without_sec_user_agent_statements_come_from_yahoo_and_disclosures_from_the_web(fake_openai, filings_off):
    script_analysis(
        fake_openai,
        APPLE_REVENUE,
        sub("What risks does Apple's latest 10-K name?", "qualitative", ["AAPL"], "filing_text"),
    )
    script_gaps(fake_openai, gaps(9, complete=True))
    script_well_sourced_searches(fake_openai)
    script_synthesis(fake_openai, "Revenue and risks [1].")

    events = await run("How did Apple's revenue change, and what risks does it name?")

    assert filing_sources(events) == []
    assert filings_off.requests == []  # nothing was asked of the SEC
    assert len(requests_of(fake_openai, searched("What risks does Apple's latest 10-K name?"))) == 1
    steps = [(e.sub_question_id, e.state, e.route) for e in of_type(events, "step")]
    assert ("q1", "done", "market_data") in steps and ("q2", "fallback", "web_search") in steps
    signals = summary_of(events).signals
    assert signals["fallback_reasons"] == {"not_configured": 1} and signals["filing_hits"] == 0
    assert "as reported to the SEC" not in synthesis_prompt(fake_openai)


async def test_q3_fiscal_2025_is_the_quarter_nvidias_own_10q_calls_so(fake_openai, filed):
    script_analysis(
        fake_openai,
        sub("What was NVIDIA's revenue in Q3 FY2025?", "numerical", ["NVDA"], "income_statement",
            frequency="quarterly", fiscal_period="Q3 FY2025"),
    )  # fmt: skip
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "NVIDIA's Q3 FY2025 revenue was $35.08 billion [1].")

    events = await run("What was NVIDIA's revenue in Q3 FY2025?")

    [ten_q] = filing_sources(events)
    assert (ten_q.form, ten_q.period, ten_q.filed) == ("10-Q", "Q3 FY2025", date(2024, 11, 20))
    prompt = synthesis_prompt(fake_openai)
    assert "Q3 FY2025 (2024-07-29 to 2024-10-27; calendar frame CY2024Q3): 35,082,000,000 USD" in prompt
    # The nine months to date the 10-Q also reports are not a quarter: not given as one.
    assert "91,166,000,000" not in prompt


async def test_a_fourth_quarter_derived_from_the_10k_and_10q_reaches_the_answer_marked_derived_citing_both(
    fake_openai, filed, verifying
):
    # Apple's 10-K reports fiscal 2024, not its fourth quarter: Q4 is the year less the Q3 10-Q's nine months.
    script_analysis(
        fake_openai,
        sub("How did Apple's revenue change from Q3 to Q4 of fiscal 2024?", "numerical", ["AAPL"], "income_statement",
            frequency="quarterly", fiscal_period="Q3 FY2024-Q4 FY2024"),
    )  # fmt: skip
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "Apple's Q4 FY2024 revenue was $94.93 billion, derived [1][2].")

    events = await run("How did Apple's revenue change from Q3 to Q4 of fiscal 2024?")

    sources = filing_sources(events)
    ten_k = next(s for s in sources if s.form == "10-K")
    ten_q = next(s for s in sources if s.form == "10-Q")
    assert (ten_k.period, ten_k.filed, ten_q.period, ten_q.filed) == (
        "FY2024",
        date(2024, 11, 1),
        "Q3 FY2024",
        date(2024, 8, 2),
    )
    prompt = synthesis_prompt(fake_openai)
    assert (
        "- Q4 FY2024 (2024-06-30 to 2024-09-28; calendar frame none): 94,930,000,000 USD (about 94.93B) "
        "[us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax], derived, not filed as a quarter: "
        f"FY2024 391,035,000,000 (10-K filed 2024-11-01) [{ten_k.n}] less nine months to Q3 FY2024 "
        f"296,105,000,000 (10-Q filed 2024-08-02) [{ten_q.n}]"
    ) in prompt
    assert (
        "A quarter marked derived was not filed as a quarter" in requests_of(fake_openai, is_synthesis)[0].instructions
    )
    # Yahoo's fourth quarter agrees with the derived one: no contradiction, and the growth fact cites both filings.
    assert "### Contradictions" not in prompt
    growth = next(f for f in summary_of(events).facts if f.kind == "growth" and f.inputs[0].line == "TotalRevenue")
    q4 = growth.inputs[0]
    assert q4.period == "2024-09-28" and q4.source.n == ten_k.n
    assert q4.derived is not None and q4.derived.earlier_source.n == ten_q.n
    assert q4.derived.formula.startswith("FY2024 391,035,000,000 (10-K filed 2024-11-01) less nine months to Q3")
    assert "its input TotalRevenue for the period ending 2024-09-28 is derived, not filed as a quarter" in prompt
    # Either filing bears the derived figure out.
    [verification] = of_type(events, "verification")
    assert [check.status for check in verification.citations] == ["supported", "supported"]


async def test_yahoo_differing_from_a_derived_quarter_is_a_contradiction_that_says_the_filed_side_is_derived(
    fake_openai, filed
):
    path = "companyfacts/CIK0000320193.json"
    facts = json.loads((FIXTURES / path).read_text())
    for row in facts["facts"]["us-gaap"]["RevenueFromContractWithCustomerExcludingAssessedTax"]["units"]["USD"]:
        if (row.get("start"), row["end"]) == ("2023-10-01", "2024-06-29"):
            row["val"] = 290_105_000_000  # six billion less for nine months: six billion more for Q4
    filed.serve(f"/data.sec.gov/api/xbrl/{path}", json.dumps(facts).encode())
    script_analysis(
        fake_openai,
        sub("What was Apple's revenue in Q4 FY2024?", "numerical", ["AAPL"], "income_statement",
            frequency="quarterly", fiscal_period="Q4 FY2024"),
    )  # fmt: skip
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "Apple's Q4 FY2024 revenue [1].")

    await run("What was Apple's revenue in Q4 FY2024?")

    prompt = synthesis_prompt(fake_openai)
    contradictions = prompt[prompt.index("### Contradictions") :]
    assert "Yahoo Finance: AAPL Total Revenue for the quarterly period ending 2024-09-28 is 94,930,000,000" in (
        contradictions
    )
    assert (
        "Q4 FY2024 us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax is 100,930,000,000 USD, derived: "
        "FY2024 391,035,000,000 (10-K filed 2024-11-01) less nine months to Q3 FY2024 290,105,000,000 (10-Q filed "
        "2024-08-02)"
    ) in contradictions


async def test_a_foreign_filer_without_xbrl_figures_is_answered_from_yahoo_after_one_sec_lookup(fake_openai, filed):
    script_analysis(
        fake_openai,
        sub("What was TSMC's revenue last year?", "numerical", ["TSM"], "income_statement", frequency="annual"),
    )
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "TSMC's revenue [1].")

    events = await run("What was TSMC's revenue last year?")

    assert filing_sources(events) == []
    assert [s.kind for s in summary_of(events).sources] == ["market_data"]
    # The first line's answer (no XBRL figures: a 20-F filer) stops the other lines being asked.
    assert sum(1 for request in filed.requests if "companyfacts" in request.path) == 1


async def test_a_hung_sec_costs_neither_yahoos_figures_nor_the_web_search(fake_openai, filed, monkeypatch):
    monkeypatch.setenv("RESEARCH_MARKET_DATA_TIMEOUT", "0.5")
    get_research_config.cache_clear()
    filed.delay_s = 30.0
    script_analysis(
        fake_openai,
        APPLE_REVENUE,
        sub("What risks does Apple's latest 10-K name?", "qualitative", ["AAPL"], "filing_text"),
    )
    script_gaps(fake_openai, gaps(9, complete=True))
    script_well_sourced_searches(fake_openai)
    script_synthesis(fake_openai, "Revenue and risks [1].")

    try:
        events = await run("How did Apple's revenue change, and what risks does it name?")
    finally:
        filed.delay_s = 0.0
        get_research_config.cache_clear()

    steps = [(e.sub_question_id, e.state, e.route) for e in of_type(events, "step")]
    assert ("q1", "done", "market_data") in steps and ("q2", "fallback", "web_search") in steps
    assert filing_sources(events) == []
    assert summary_of(events).signals["fallback_reasons"] == {"timeout": 1}
    assert "Yahoo Finance — AAPL income statement" in synthesis_prompt(fake_openai)


async def test_insider_trades_are_read_from_form_4s_each_cited(fake_openai, filed):
    # No data hint: the question's words name insider trades.
    script_analysis(fake_openai, sub("Have Apple's insiders been selling shares recently?", "qualitative", ["AAPL"]))
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "Apple insiders sold shares [1].")

    events = await run("Have Apple's insiders been selling?")

    assert requests_of(fake_openai, searched("Have Apple's insiders been selling shares")) == []
    sources = filing_sources(events)
    assert sources and {s.form for s in sources} == {"4"}
    assert all(s.url.endswith(".xml") and s.period and s.filed for s in sources)
    assert "insider transactions from 2 Form 4 filings" in synthesis_prompt(fake_openai)


async def test_a_companys_filings_are_listed_with_their_8k_items(fake_openai, filed):
    script_analysis(fake_openai, sub("Which 8-K filings has Apple made recently?", "qualitative", ["AAPL"], "filings"))
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "Apple filed 8-Ks [1].")

    events = await run("Which 8-Ks has Apple filed recently?")

    sources = filing_sources(events)
    assert [s.form for s in sources] == ["8-K", "8-K", "8-K"]
    assert sources[0].title.endswith("items 2.02, 9.01") and sources[0].filed == date(2025, 1, 30)


def test_a_finding_with_filings_survives_a_checkpoint():
    [step] = plan_steps([APPLE_REVENUE], first_number=1, today=date(2025, 6, 13))
    section = {"ticker": "AAPL", "cik": "0000320193", "company": "Apple Inc.", "as_of": "2024-11-01",
               "url": "https://www.sec.gov/x.htm", "form": "10-K", "filed": "2024-11-01", "report_date": "2024-09-28",
               "accession": "0000320193-24-000123", "section": "risk_factors", "heading": "Item 1A. Risk Factors",
               "text": "Risks.", "offset": 0, "total_chars": 6, "truncated": False}  # fmt: skip
    filings = FilingFinding(
        tickers=["AAPL"], results=[FilingToolResult(symbol="AAPL", tool="get_filing_section", data=section)]
    )
    finding = Finding(step=step, status="answered", route="market_data", text="Risks.", filings=filings)

    restored = Finding.model_validate_json(finding.model_dump_json())

    assert restored == finding and restored.filings is not None
    [source] = filing_research.filing_sources(restored.filings.results[0].result())
    assert source.title.endswith("Item 1A. Risk Factors")


async def test_with_yahoo_throttled_the_filed_figures_answer_and_their_growth_cites_the_10k(
    fake_openai, yahoo_throttled
):
    script_analysis(fake_openai, APPLE_REVENUE, sub("How did it change?", "analytical"))
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "Apple's revenue grew 2.02% in fiscal 2024 [1].")

    events = await run("How did Apple's revenue change from fiscal 2023 to fiscal 2024?")

    summary = summary_of(events)
    assert [(s.kind, s.form) for s in summary.sources] == [("filing", "10-K")]
    [growth] = [fact for fact in summary.facts if fact.kind == "growth"]
    assert round(growth.value, 2) == 2.02  # 391,035 over 383,285 million, as filed
    assert {(item.line, item.source.n) for item in growth.inputs} == {("TotalRevenue", 1)}
    prompt = synthesis_prompt(fake_openai)
    assert "Yahoo Finance — AAPL" not in prompt and "rate_limited" in prompt


def long_ten_k() -> bytes:
    """Apple's 10-K with a risk factors section of about 110,000 characters, one risk near its end."""
    filler = "".join(
        f"<p>Risk {i}: the Company's results of operations can be affected by general economic conditions in "
        f"the markets it serves, by competition and by changes in the demand for its products. {'More. ' * 40}</p>"
        for i in range(250)
    )
    late = "<p>New tariffs on components imported from Vietnam could raise the cost of the Company's Mac products.</p>"
    return (
        "<html><body><p>PART I</p><p>Item 1. Business</p><p>The Company designs smartphones.</p>"
        f"<p>Item 1A. Risk Factors</p>{filler}{late}<p>Item 1B. Unresolved Staff Comments</p><p>None.</p>"
        "</body></html>"
    ).encode()


async def test_a_long_section_is_read_on_to_the_paragraphs_the_question_is_about(fake_openai, filed):
    path = "/www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"
    filed.serve(path, long_ten_k())
    script_analysis(
        fake_openai,
        sub("What does Apple's 10-K say about tariffs on components from Vietnam?", "qualitative", ["AAPL"],
            "filing_text", section="risk_factors"),
    )  # fmt: skip
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "Apple names tariffs on components from Vietnam [1].")

    await run("What does Apple's 10-K say about tariffs on Vietnamese components?")

    prompt = synthesis_prompt(fake_openai)
    assert "New tariffs on components imported from Vietnam" in prompt  # past the first 40,000 characters
    assert "[…]" in prompt and len(prompt) < 20_000
    assert filed.paths().count(path.removeprefix("/www.sec.gov")) == 1  # later pages from the cache


async def test_a_form_4_with_trades_on_several_days_is_one_source(fake_openai, filed):
    path = "/www.sec.gov/Archives/edgar/data/320193/000032019325000038/wk-form4_1743700000.xml"
    xml = (FIXTURES / path.removeprefix("/www.sec.gov/")).read_text()
    filed.serve(path, xml.replace("<value>2025-04-01</value>", "<value>2025-03-31</value>", 1).encode())
    script_analysis(fake_openai, sub("Have Apple's insiders been selling shares recently?", "qualitative", ["AAPL"]))
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "Apple insiders sold shares [1].")

    sources = filing_sources(await run("Have Apple's insiders been selling?"))

    assert len(sources) == len({s.url for s in sources}) == 2
    first = next(s for s in sources if s.url.endswith("wk-form4_1743700000.xml"))
    assert first.period == "2025-03-31"  # the report's first trading day
