"""The four filing tools through a real MCP client connected in memory, over the real SEC client and the
fake SEC on loopback: what each answers, that each answer cites its filing, and each failure as a
one-sentence `<code>: <sentence>` result."""

from __future__ import annotations

import json
from typing import Any

import pytest

from datascraper.filings.schemas import FilingList, FilingSection, InsiderTransactions, ReportedFigures
from datascraper.filings.tools import FILING_TOOL_NAMES
from tests.datascraper.market_data.support import InMemoryMCP
from tests.datascraper.market_data.test_tools import error_of
from tests.fakes.sec_server import FIXTURES, FakeSecServer

pytestmark = pytest.mark.timeout(30)


async def figures(mcp_client: InMemoryMCP, **arguments: Any) -> ReportedFigures:
    result = await mcp_client.call_tool("get_reported_figures", arguments)
    assert not result.is_error, result.content
    return ReportedFigures.model_validate(result.structured_content)


async def test_the_server_lists_the_filing_tools_beside_the_yahoo_tools(mcp_client: InMemoryMCP) -> None:
    tools = {tool.name: tool for tool in await mcp_client.list_tools()}

    assert FILING_TOOL_NAMES <= set(tools)
    assert "get_quote" in tools
    for name in FILING_TOOL_NAMES:
        schema = tools[name].output_schema
        assert schema is not None
        assert {"ticker", "cik", "company", "as_of", "url"} <= set(schema["properties"])
        assert tools[name].annotations is not None and tools[name].annotations.read_only_hint


async def test_a_fiscal_quarter_is_the_companys_own_not_the_calendars(
    mcp_client: InMemoryMCP, fake_sec: FakeSecServer
) -> None:
    # NVIDIA's fiscal year ends in late January: its Q3 FY2025 is the quarter ending 2024-10-27.
    result = await figures(mcp_client, ticker="NVDA", concept="revenue", fiscal_year=2025, fiscal_period="Q3")

    [q3] = result.figures
    assert (q3.label, q3.value, q3.unit) == ("Q3 FY2025", 35_082_000_000, "USD")
    assert (str(q3.start), str(q3.end), q3.frame) == ("2024-07-29", "2024-10-27", "CY2024Q3")
    assert (q3.form, str(q3.filed), q3.accession) == ("10-Q", "2024-11-20", "0001045810-24-000316")
    assert q3.concept == "us-gaap:Revenues"
    assert (
        q3.filing_url
        == f"{fake_sec.www_url}/Archives/edgar/data/1045810/000104581024000316/0001045810-24-000316-index.htm"
    )
    assert result.url == f"{fake_sec.data_url}/api/xbrl/companyfacts/CIK0001045810.json"
    assert str(result.as_of) == "2024-11-20"


async def test_a_calendar_frame_finds_the_fiscal_year_that_fills_it(mcp_client: InMemoryMCP) -> None:
    by_frame = await figures(mcp_client, ticker="NVDA", concept="revenue", frame="cy2024")
    by_fiscal_year = await figures(mcp_client, ticker="NVDA", concept="revenue", fiscal_year=2025)

    assert [f.label for f in by_frame.figures] == ["FY2025"]
    assert by_frame.figures == by_fiscal_year.figures
    assert by_frame.figures[0].value == 130_497_000_000


async def test_comparatives_are_labelled_by_their_own_fiscal_year_not_the_filings(mcp_client: InMemoryMCP) -> None:
    # Every annual fact in Apple's fiscal 2024 10-K carries fy 2024; the earlier years are still FY2023, FY2022.
    result = await figures(mcp_client, ticker="AAPL", concept="revenue", frequency="annual", limit=3)

    assert [(f.label, f.value) for f in result.figures] == [
        ("FY2024", 391_035_000_000),
        ("FY2023", 383_285_000_000),
        ("FY2022", 394_328_000_000),
    ]
    assert {f.accession for f in result.figures} == {"0000320193-24-000123"}
    assert [len(f.versions) for f in result.figures] == [1, 2, 2]
    assert not any(f.restated for f in result.figures)


async def test_a_restated_figure_answers_the_latest_filing_and_keeps_the_earlier_one(mcp_client: InMemoryMCP) -> None:
    # NVIDIA's 10-for-1 split: the fiscal 2025 10-K restates fiscal 2024's diluted EPS from 11.93 to 1.19.
    result = await figures(mcp_client, ticker="NVDA", concept="eps_diluted", fiscal_year=2024)

    [eps] = result.figures
    assert eps.restated
    assert (eps.value, eps.unit, str(eps.filed)) == (1.19, "USD/shares", "2025-02-26")
    assert [(v.value, v.form, str(v.filed), v.accession) for v in eps.versions] == [
        (1.19, "10-K", "2025-02-26", "0001045810-25-000023"),
        (11.93, "10-K", "2024-02-21", "0001045810-24-000029"),
    ]
    assert "restated: 11.93 in the 10-K filed 2024-02-21" in result.summary_text()


async def test_a_fourth_quarter_is_the_fiscal_year_less_its_nine_months_citing_both_filings(
    mcp_client: InMemoryMCP,
) -> None:
    # Apple's fiscal 2024 10-K reports the year only; its Q3 10-Q the nine months beside the quarter.
    result = await figures(mcp_client, ticker="AAPL", concept="revenue", fiscal_year=2024, fiscal_period="Q4")

    [q4] = result.figures
    assert (q4.label, q4.value, str(q4.start), str(q4.end)) == ("Q4 FY2024", 94_930_000_000, "2024-06-30", "2024-09-28")
    assert q4.derived_from is not None
    whole, earlier = q4.derived_from.whole, q4.derived_from.earlier
    assert (whole.label, whole.value, whole.form, str(whole.filed)) == ("FY2024", 391_035_000_000, "10-K", "2024-11-01")
    assert (earlier.label, earlier.value, earlier.form, str(earlier.filed), earlier.accession) == (
        "nine months to Q3 FY2024",
        296_105_000_000,
        "10-Q",
        "2024-08-02",
        "0000320193-24-000081",
    )
    assert (q4.form, q4.accession, q4.frame, q4.versions) == ("10-K", whole.accession, None, [])
    assert (
        "derived, not filed: FY2024 391,035,000,000 (10-K filed 2024-11-01) less nine months" in result.summary_text()
    )


async def test_cash_flows_filed_year_to_date_give_their_quarters_by_difference(mcp_client: InMemoryMCP) -> None:
    result = await figures(mcp_client, ticker="AAPL", concept="operating_cash_flow", frequency="quarterly")

    # Q1 is its own year to date; Q4 is the year less nine months; Q2 and Q3 need a six months not filed here.
    assert [(f.label, f.value, f.derived_from is not None) for f in result.figures] == [
        ("Q1 FY2025", 29_935_000_000, False),
        ("Q4 FY2024", 26_811_000_000, True),
        ("Q1 FY2024", 39_895_000_000, False),
    ]


async def test_a_derived_quarter_takes_each_figure_as_last_filed(
    mcp_client: InMemoryMCP, fake_sec: FakeSecServer
) -> None:
    path = "companyfacts/CIK0000320193.json"
    facts = json.loads((FIXTURES / path).read_text())
    revenue = facts["facts"]["us-gaap"]["RevenueFromContractWithCustomerExcludingAssessedTax"]["units"]["USD"]
    revenue.append(
        {"start": "2023-10-01", "end": "2024-09-28", "val": 391_000_000_000, "accn": "0000320193-25-000079",
         "fy": 2025, "fp": "FY", "form": "10-K", "filed": "2025-10-31"}
    )  # fmt: skip
    fake_sec.serve(f"/data.sec.gov/api/xbrl/{path}", json.dumps(facts).encode())

    result = await figures(mcp_client, ticker="AAPL", concept="revenue", fiscal_year=2024, fiscal_period="Q4")

    [q4] = result.figures
    assert q4.value == 94_895_000_000 and q4.restated  # 391,000 as restated less 296,105 million
    assert q4.derived_from is not None and q4.derived_from.whole.restated
    assert (q4.derived_from.whole.value, str(q4.filed)) == (391_000_000_000, "2025-10-31")
    assert "FY2024 391,000,000,000 (10-K filed 2025-10-31, as restated) less" in result.summary_text()


async def test_a_frame_on_a_proxy_statements_untagged_copy_finds_the_figure_as_the_10k_filed_it(
    mcp_client: InMemoryMCP,
) -> None:
    by_frame = await figures(mcp_client, ticker="NVDA", concept="net_income", frame="CY2024")

    [year] = by_frame.figures
    assert (year.label, year.value, year.frame) == ("FY2025", 72_880_000_000, "CY2024")
    assert (year.form, str(year.filed)) == ("10-K", "2025-02-26")
    assert [v.form for v in year.versions] == ["10-K"]  # the DEF 14A's copy is no version, and labels nothing


async def test_a_line_name_is_mapped_to_the_concept_the_company_reports_and_says_which(mcp_client: InMemoryMCP) -> None:
    ours = await figures(mcp_client, ticker="AAPL", concept="revenue", limit=1)
    yahoos = await figures(mcp_client, ticker="AAPL", concept="TotalRevenue", limit=1)

    assert ours.concepts_used == ["us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"]
    assert ours.figures == yahoos.figures
    assert "[us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax]" in ours.summary_text()


async def test_quarterly_balances_include_the_year_end_a_10q_repeats(mcp_client: InMemoryMCP) -> None:
    result = await figures(mcp_client, ticker="AAPL", concept="total_assets", frequency="quarterly")

    assert [(f.label, str(f.end), f.start) for f in result.figures] == [
        ("Q1 FY2025", "2024-12-28", None),
        ("FY2024", "2024-09-28", None),
        ("FY2023", "2023-09-30", None),
    ]


async def test_a_foreign_private_issuer_without_xbrl_facts_is_named_as_such(mcp_client: InMemoryMCP) -> None:
    result = await mcp_client.call_tool("get_reported_figures", {"ticker": "TSM", "concept": "revenue"})

    code, text = error_of(result)
    assert code == "no_data"
    assert "foreign private issuer filing 20-F" in text


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"ticker": "ZZZZ", "concept": "revenue"}, "not_found"),  # not in the SEC's ticker map
        ({"ticker": "BRK-B", "concept": "revenue"}, "not_found"),  # in the map, but the SEC has no such CIK
        ({"ticker": "AAPL", "concept": "not a concept!"}, "invalid_argument"),
        ({"ticker": "AAPL", "concept": "revenue", "fiscal_period": "Q2"}, "invalid_argument"),
        ({"ticker": "AAPL", "concept": "revenue", "fiscal_year": 1990}, "no_data"),
        ({"ticker": "AAPL", "concept": "InventoryNet"}, "no_data"),
    ],
)
async def test_figure_requests_that_cannot_be_answered_say_why(
    mcp_client: InMemoryMCP, arguments: dict[str, Any], code: str
) -> None:
    result = await mcp_client.call_tool("get_reported_figures", arguments)

    assert error_of(result)[0] == code


async def test_filings_by_form_carry_dates_links_and_8k_items(mcp_client: InMemoryMCP, fake_sec: FakeSecServer) -> None:
    result = await mcp_client.call_tool("get_filings", {"ticker": "AAPL", "forms": ["8-K", "10-K"]})

    listing = FilingList.model_validate(result.structured_content)
    assert [(f.form, str(f.filed)) for f in listing.filings] == [
        ("8-K", "2025-01-30"),
        ("10-K", "2024-11-01"),
        ("8-K", "2024-10-31"),
        ("8-K", "2024-09-20"),
        ("10-K", "2023-11-03"),
    ]
    latest = listing.filings[0]
    assert [(i.number, i.title) for i in latest.items] == [
        ("2.02", "Results of Operations and Financial Condition"),
        ("9.01", "Financial Statements and Exhibits"),
    ]
    assert latest.url == f"{fake_sec.www_url}/Archives/edgar/data/320193/000032019325000007/aapl-20250130.htm"
    assert str(listing.filings[1].report_date) == "2024-09-28"
    assert str(listing.as_of) == "2025-01-30"


async def test_insider_and_proxy_filings_are_listed_by_their_forms(mcp_client: InMemoryMCP) -> None:
    result = await mcp_client.call_tool("get_filings", {"ticker": "AAPL", "forms": ["4", "DEF 14A"], "limit": 2})

    listing = FilingList.model_validate(result.structured_content)
    assert [f.form for f in listing.filings] == ["4", "4"]
    everything = FilingList.model_validate(
        (await mcp_client.call_tool("get_filings", {"ticker": "AAPL"})).structured_content
    )
    assert "DEF 14A" in {f.form for f in everything.filings}


async def test_risk_factors_come_from_the_latest_10k_body_not_its_table_of_contents(
    mcp_client: InMemoryMCP, fake_sec: FakeSecServer
) -> None:
    result = await mcp_client.call_tool("get_filing_section", {"ticker": "AAPL", "section": "risk_factors"})

    section = FilingSection.model_validate(result.structured_content)
    assert (section.form, str(section.filed), section.accession) == ("10-K", "2024-11-01", "0000320193-24-000123")
    assert section.heading == "Item 1A. Risk Factors"
    assert section.url == f"{fake_sec.www_url}/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"
    assert section.text.startswith("The Company’s business, reputation, results of operations")
    assert "outsourcing partners located primarily in China mainland" in section.text
    assert section.text.endswith("described in Item 3 below.")  # runs to Item 1B, past the mid-text "Item 7"
    assert "Unresolved Staff Comments" not in section.text
    assert "dei:AmendmentFlag" not in section.text and "context c-1" not in section.text


@pytest.mark.parametrize(
    ("section", "heading", "says"),
    [
        (
            "mdna",
            "Item 7. Management’s Discussion and Analysis of Financial Condition and Results of Operations",
            "Greater China 66,952 (8)% 72,559",
        ),
        ("legal_proceedings", "Item 3. Legal Proceedings", "Digital Markets Act"),
        ("market_risk", "Item 7A. Quantitative and Qualitative Disclosures About Market Risk", "interest rates"),
        ("segment_note", "Note 13 – Segment Information and Geographic Data", "Japan $25,052 million"),
    ],
)
async def test_named_10k_sections_are_found_by_their_item_headings(
    mcp_client: InMemoryMCP, section: str, heading: str, says: str
) -> None:
    result = await mcp_client.call_tool("get_filing_section", {"ticker": "AAPL", "section": section})

    found = FilingSection.model_validate(result.structured_content)
    assert found.heading == heading
    assert says in found.text
    assert "Item 9." not in found.text and "SIGNATURES" not in found.text


async def test_the_last_note_ends_where_the_auditors_report_begins(mcp_client: InMemoryMCP) -> None:
    # As filed, the last note of Item 8 is followed by the auditor's report, with no Note or Item heading
    # between them, and the page's footer before it.
    result = await mcp_client.call_tool("get_filing_section", {"ticker": "AAPL", "section": "segment_note"})

    found = FilingSection.model_validate(result.structured_content)
    assert found.text.startswith("The Company manages its business primarily on a geographic basis.")
    assert found.text.endswith("Japan $25,052 million; Rest of Asia Pacific $30,658 million.")
    assert "Report of Independent Registered Public Accounting Firm" not in found.text
    assert "Ernst & Young" not in found.text and "2024 Form 10-K | 47" not in found.text


@pytest.mark.parametrize(
    ("section", "heading", "says"),
    [
        ("risk_factors", "ITEM 1A. RISK FACTORS", "no material changes from the risk factors previously disclosed"),
        (
            "mdna",
            "ITEM 2. MANAGEMENT'S DISCUSSION AND ANALYSIS OF FINANCIAL CONDITION AND RESULTS OF OPERATIONS",
            "Data Center revenue for the third quarter of fiscal year 2025 was $30.8 billion",
        ),
        ("legal_proceedings", "ITEM 1. LEGAL PROCEEDINGS", "Note 13"),
    ],
)
async def test_10q_sections_are_found_in_either_part(
    mcp_client: InMemoryMCP, section: str, heading: str, says: str
) -> None:
    # Part I and Part II both number from Item 1: a 10-Q's sections are told apart by their titles.
    result = await mcp_client.call_tool("get_filing_section", {"ticker": "NVDA", "section": section, "form": "10-Q"})

    found = FilingSection.model_validate(result.structured_content)
    assert (found.form, str(found.report_date), found.heading) == ("10-Q", "2024-10-27", heading)
    assert says in found.text
    assert "PART II" not in found.text and "SIGNATURE" not in found.text


async def test_an_8k_item_is_read_from_the_latest_8k_that_carries_it(mcp_client: InMemoryMCP) -> None:
    result = await mcp_client.call_tool("get_filing_section", {"ticker": "AAPL", "section": "2.02"})

    section = FilingSection.model_validate(result.structured_content)
    assert (section.form, str(section.filed), section.accession) == ("8-K", "2025-01-30", "0000320193-25-000007")
    assert section.heading == "Item 2.02 Results of Operations and Financial Condition."
    item = section.text[: section.exhibits[0].starts_at]  # then its Exhibit 99.1 (test_exhibits.py)
    assert "first fiscal quarter ended December 28, 2024" in item
    assert "Exhibit 99.1" in item and "Press release issued" not in item  # stops at Item 9.01


async def test_a_section_is_bounded_and_read_on_by_offset(mcp_client: InMemoryMCP) -> None:
    first = FilingSection.model_validate(
        (
            await mcp_client.call_tool(
                "get_filing_section", {"ticker": "AAPL", "section": "risk_factors", "max_chars": 500}
            )
        ).structured_content
    )
    rest = FilingSection.model_validate(
        (
            await mcp_client.call_tool(
                "get_filing_section", {"ticker": "AAPL", "section": "risk_factors", "offset": 500, "max_chars": 40_000}
            )
        ).structured_content
    )

    assert len(first.text) == 500 and first.truncated
    assert not rest.truncated and rest.offset == 500
    assert first.total_chars == rest.total_chars == 500 + len(rest.text)
    assert "more characters" in first.summary_text()


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"ticker": "AAPL", "section": "poetry"}, "invalid_argument"),
        ({"ticker": "AAPL", "section": "business", "form": "10-Q"}, "invalid_argument"),
        ({"ticker": "AAPL", "section": "5.07"}, "no_data"),  # no recent 8-K carries item 5.07
        ({"ticker": "TSM", "section": "risk_factors"}, "no_data"),  # files 20-F, no 10-K
        ({"ticker": "AAPL", "section": "risk_factors", "accession": "0000320193-99-000001"}, "not_found"),
    ],
)
async def test_section_requests_that_cannot_be_answered_say_why(
    mcp_client: InMemoryMCP, arguments: dict[str, Any], code: str
) -> None:
    assert error_of(await mcp_client.call_tool("get_filing_section", arguments))[0] == code


async def test_insider_transactions_are_read_from_the_form4_xml(
    mcp_client: InMemoryMCP, fake_sec: FakeSecServer
) -> None:
    result = await mcp_client.call_tool("get_insider_transactions", {"ticker": "AAPL"})

    insiders = InsiderTransactions.model_validate(result.structured_content)
    assert insiders.filings_read == 2
    rows = [
        (t.owner, t.role, str(t.transaction_date), t.code, t.shares, t.price, t.acquired_disposed, t.owned_after)
        for t in insiders.transactions
        if not t.derivative
    ]
    assert rows == [
        ("Levinson Arthur D", "director", "2025-04-02", "S", 50_000, 223.85, "D", 4_155_229),
        ("O'BRIEN DEIRDRE", "officer (Senior Vice President)", "2025-04-01", "M", 34_821, None, "A", 171_322),
        ("O'BRIEN DEIRDRE", "officer (Senior Vice President)", "2025-04-01", "F", 18_200, 223.89, "D", 153_122),
        ("O'BRIEN DEIRDRE", "officer (Senior Vice President)", "2025-04-01", "S", 16_621, 222.31, "D", 136_501),
    ]
    [units] = [t for t in insiders.transactions if t.derivative]
    assert (units.security, units.code, units.shares, units.acquired_disposed) == (
        "Restricted Stock Unit",
        "M",
        34_821,
        "D",
    )
    # The XML itself, not the XSL rendering the submissions file lists.
    assert insiders.transactions[0].url.endswith("/000032019325000041/wk-form4_1743800000.xml")
    assert "/Archives/edgar/data/320193/000032019325000041/wk-form4_1743800000.xml" in fake_sec.paths(200)


async def test_without_a_user_agent_every_filing_tool_answers_not_configured_and_asks_nothing(
    fake_sec: FakeSecServer,
) -> None:
    from datascraper.filings.client import SecClient
    from datascraper.filings.config import FilingsConfig
    from datascraper.filings.service import FilingsService
    from datascraper.mcp_server import build_server

    unconfigured = FilingsService(SecClient(FilingsConfig(data_url=fake_sec.data_url, www_url=fake_sec.www_url)))
    client = InMemoryMCP(build_server(filings=unconfigured))
    calls = [
        ("get_reported_figures", {"ticker": "AAPL", "concept": "revenue"}),
        ("get_filings", {"ticker": "AAPL"}),
        ("get_filing_section", {"ticker": "AAPL", "section": "risk_factors"}),
        ("get_insider_transactions", {"ticker": "AAPL"}),
    ]
    for name, arguments in calls:
        code, text = error_of(await client.call_tool(name, arguments))
        assert code == "not_configured"
        assert "SEC_USER_AGENT" in text
    assert fake_sec.requests == []


async def test_a_throttled_sec_is_rate_limited_after_backing_off(
    mcp_client: InMemoryMCP, fake_sec: FakeSecServer
) -> None:
    fake_sec.throttle(times=3)

    code, _ = error_of(await mcp_client.call_tool("get_filings", {"ticker": "AAPL"}))

    assert code == "rate_limited"
    assert fake_sec.paths(429) == ["/files/company_tickers.json"] * 3


async def test_each_result_summarises_itself_with_what_a_citation_needs(mcp_client: InMemoryMCP) -> None:
    listing = FilingList.model_validate(
        (await mcp_client.call_tool("get_filings", {"ticker": "AAPL", "forms": ["8-K"], "limit": 1})).structured_content
    )
    insiders = InsiderTransactions.model_validate(
        (
            await mcp_client.call_tool("get_insider_transactions", {"ticker": "AAPL", "filings_wanted": 1})
        ).structured_content
    )

    assert (
        listing.summary_text()
        .splitlines()[1]
        .startswith(
            "8-K filed 2025-01-30 on an event of 2025-01-30, items 2.02 Results of Operations and Financial Condition, "
            "9.01 Financial Statements and Exhibits: http"
        )
    )
    assert insiders.summary_text().splitlines()[1] == (
        "2025-04-02: Levinson Arthur D, director, disposed of 50,000 shares at 223.85 (S: open market or private "
        "sale); 4,155,229 held after; Form 4 filed 2025-04-04"
    )
