"""Sections of Apple's and NVIDIA's real 10-Ks and 10-Qs, as the SEC serves them (`../shared/recorded/sec/`).

Each document is served by the loopback SEC at its real path, beside the company's real submissions file,
and read as the tool reads it: `get_filing_section` through an MCP client over the real SEC client (read
on by `offset` where a section is longer than a call's 40,000 characters). A note other than the segment
note has no tool section of its own; it is read by `find_note` from the text the client extracted. Every
section must run from its first sentence to its last as printed, and hold nothing of what follows it: the
next Item or note, the auditor's report, the signatures, the exhibit index, a page's footer.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from datascraper.filings.client import SecClient
from datascraper.filings.schemas import FilingSection
from datascraper.filings.sections import document_text, find_note
from tests.datascraper.market_data.support import InMemoryMCP
from tests.fakes.sec_server import FakeSecServer
from tests.recorded import recorded_bytes, requires_recorded

pytestmark = requires_recorded

# What follows the sections asked for, somewhere in each document; none of it belongs to any of them.
NEVER_IN_A_SECTION = (
    "Report of Independent Registered Public Accounting Firm",
    "/s/ ",
    "Exhibit Index",
    "SIGNATURE",
    "Pursuant to the requirements of",
    "Schedule II",
)


@dataclass(frozen=True)
class Filed:
    ticker: str
    form: str
    accession: str
    document: str  # its path under /Archives/edgar/data/

    @property
    def cik10(self) -> str:
        return self.document.split("/")[0].zfill(10)


APPLE_10K_FY2025 = Filed("AAPL", "10-K", "0000320193-25-000079", "320193/000032019325000079/aapl-20250927.htm")
APPLE_10K_FY2024 = Filed("AAPL", "10-K", "0000320193-24-000123", "320193/000032019324000123/aapl-20240928.htm")
APPLE_10Q_Q3_FY2025 = Filed("AAPL", "10-Q", "0000320193-25-000073", "320193/000032019325000073/aapl-20250628.htm")
APPLE_10Q_Q2_FY2025 = Filed("AAPL", "10-Q", "0000320193-25-000057", "320193/000032019325000057/aapl-20250329.htm")
NVIDIA_10K_FY2025 = Filed("NVDA", "10-K", "0001045810-25-000023", "1045810/000104581025000023/nvda-20250126.htm")
NVIDIA_10Q_Q2_FY2026 = Filed("NVDA", "10-Q", "0001045810-25-000209", "1045810/000104581025000209/nvda-20250727.htm")


@dataclass(frozen=True)
class Expected:
    filed: Filed
    section: str  # a tool section, or a note's title words for `find_note`
    heading: str
    first: str  # how the section's text starts
    last: str  # how it ends: its last sentence (or a table's last row)
    follows: str  # the line after it in the document (the next heading, or the page's footer before it)

    def __str__(self) -> str:
        return f"{self.filed.document.rsplit('/', 1)[1]}:{self.section}"


APPLE_RISKS_LAST = (
    "If the Company fails to meet expectations related to future growth, profitability, dividends, share "
    "repurchases or other market expectations, the price of the Company’s stock may decline significantly, which "
    "could have a material adverse impact on investor confidence and employee retention."
)
APPLE_LEGAL_LAST = (
    "If one or more legal matters were resolved against the Company in a reporting period for amounts above "
    "management’s expectations, the Company’s financial condition and operating results for that reporting "
    "period could be materially adversely affected."
)
APPLE_10K_MDNA_FIRST = (
    "The following discussion should be read in conjunction with the consolidated financial statements and "
    "accompanying notes included in Part II, Item 8 of this Form 10-K."
)
APPLE_10K_MDNA_LAST = (
    "Resolution of legal matters in a manner inconsistent with management’s expectations could have a material "
    "impact on the Company’s financial condition and operating results."
)
APPLE_10K_MARKET_LAST = (
    "Changes in the Company’s underlying foreign currency exposures, which were excluded from the assessment, "
    "generally offset changes in the fair values of the Company’s foreign currency derivatives."
)
APPLE_10Q_RISKS_FIRST = (
    "The Company’s business, reputation, results of operations, financial condition and stock price can be "
    "affected by a number of factors, whether currently known or unknown, including those described in Part I, "
    "Item 1A of the 2024 Form 10-K"
)
APPLE_10Q_MDNA_FIRST = (
    "This Item and other sections of this Quarterly Report on Form 10-Q (“Form 10-Q”) contain forward-looking "
    "statements, within the meaning of the Private Securities Litigation Reform Act of 1995, that involve risks "
    "and uncertainties."
)
APPLE_10Q_MDNA_LAST = (
    "There have been no material changes to the Company’s critical accounting estimates since the 2024 Form 10-K."
)
APPLE_10Q_MARKET_LAST = (
    "For a discussion of the Company’s exposure to market risk, refer to the Company’s market risk disclosures "
    "set forth in Part II, Item 7A, “Quantitative and Qualitative Disclosures About Market Risk” of the 2024 "
    "Form 10-K."
)
APPLE_10Q_NOTE_1_LAST = (
    "Unless otherwise stated, references to particular years, quarters, months and periods refer to the "
    "Company’s fiscal years ended in September and the associated quarters, months and periods of those fiscal "
    "years."
)
NVIDIA_NOTE_1_LAST = (
    "We do not expect the adoption of this standard to have a material impact on our Consolidated Financial "
    "Statements other than additional disclosures."
)
NVIDIA_SEGMENTS_FIRST = (
    "Our Chief Executive Officer is our chief operating decision maker, or CODM, and reviews financial "
    "information presented on an operating segment basis for purposes of making decisions and assessing "
    "financial performance."
)
APPLE_SEGMENTS = "Note 13 – Segment Information and Geographic Data"
APPLE_10Q_SEGMENTS = "Note 10 – Segment Information and Geographic Data"
APPLE_AUDITOR = "Report of Independent Registered Public Accounting Firm"

ITEMS = [
    # Apple's FY2025 10-K
    Expected(
        APPLE_10K_FY2025,
        "risk_factors",
        "Item 1A. Risk Factors",
        "The following summarizes factors that could have a material adverse effect on the Company’s business, "
        "reputation, results of operations, financial condition and stock price.",
        APPLE_RISKS_LAST,
        "Item 1B. Unresolved Staff Comments",
    ),
    Expected(
        APPLE_10K_FY2025,
        "legal_proceedings",
        "Item 3. Legal Proceedings",
        "Digital Markets Act Investigations\nOn March 25, 2024, the Commission announced that it had opened a "
        "formal noncompliance investigation against the Company under Article 5(4) of the EU DMA",
        APPLE_LEGAL_LAST,
        "Item 4. Mine Safety Disclosures",
    ),
    Expected(
        APPLE_10K_FY2025,
        "mdna",
        "Item 7. Management’s Discussion and Analysis of Financial Condition and Results of Operations",
        APPLE_10K_MDNA_FIRST,
        APPLE_10K_MDNA_LAST,
        "Item 7A. Quantitative and Qualitative Disclosures About Market Risk",
    ),
    Expected(
        APPLE_10K_FY2025,
        "market_risk",
        "Item 7A. Quantitative and Qualitative Disclosures About Market Risk",
        "The Company is exposed to economic risk from interest rates and foreign exchange rates.",
        APPLE_10K_MARKET_LAST,
        "Apple Inc. | 2025 Form 10-K | 27",  # then Item 8
    ),
    # Apple's FY2024 10-K
    Expected(
        APPLE_10K_FY2024,
        "risk_factors",
        "Item 1A. Risk Factors",
        "The Company’s business, reputation, results of operations, financial condition and stock price can be "
        "affected by a number of factors, whether currently known or unknown, including those described below.",
        APPLE_RISKS_LAST,
        "Item 1B. Unresolved Staff Comments",
    ),
    Expected(
        APPLE_10K_FY2024,
        "legal_proceedings",
        "Item 3. Legal Proceedings",
        "Digital Markets Act Investigations\nOn March 25, 2024, the Commission announced that it had opened two "
        "formal noncompliance investigations against the Company under the DMA.",
        APPLE_LEGAL_LAST,
        "Item 4. Mine Safety Disclosures",
    ),
    Expected(
        APPLE_10K_FY2024,
        "mdna",
        "Item 7. Management’s Discussion and Analysis of Financial Condition and Results of Operations",
        APPLE_10K_MDNA_FIRST,
        APPLE_10K_MDNA_LAST,
        "Apple Inc. | 2024 Form 10-K | 26",  # then Item 7A
    ),
    Expected(
        APPLE_10K_FY2024,
        "market_risk",
        "Item 7A. Quantitative and Qualitative Disclosures About Market Risk",
        "The Company is exposed to economic risk from interest rates and foreign exchange rates.",
        APPLE_10K_MARKET_LAST,
        "Apple Inc. | 2024 Form 10-K | 27",  # then Item 8
    ),
    # NVIDIA's FY2025 10-K: Item 8 refers to the statements, which follow Item 15
    Expected(
        NVIDIA_10K_FY2025,
        "risk_factors",
        "Item 1A. Risk Factors",
        "The following risk factors should be considered in addition to the other information in this Annual "
        "Report on Form 10-K.",
        "These provisions could delay or prevent a change in control of NVIDIA, discourage proxy contests, and make "
        "it more difficult for shareholders to elect directors of their choosing and to cause us to take other "
        "corporate actions they desire.",
        "Item 1B. Unresolved Staff Comments",
    ),
    Expected(
        NVIDIA_10K_FY2025,
        "legal_proceedings",
        "Item 3. Legal Proceedings",
        "Please see Note 12 of the Notes to the Consolidated Financial Statements in Part IV, Item 15",
        "for a discussion of our legal proceedings.",
        "Item 4. Mine Safety Disclosures",
    ),
    Expected(
        NVIDIA_10K_FY2025,
        "mdna",
        "Item 7. Management's Discussion and Analysis of Financial Condition and Results of Operations",
        "The following discussion and analysis of our financial condition and results of operations should be read "
        "in conjunction with “Item 1A. Risk Factors,”",
        "Refer to Note 1 of the Notes to the Consolidated Financial Statements in Part IV, Item 15 of this Annual "
        "Report on Form 10-K for a discussion of adoption of new and recently issued accounting pronouncements.",
        "Item 7A. Quantitative and Qualitative Disclosures about Market Risk",
    ),
    Expected(
        NVIDIA_10K_FY2025,
        "market_risk",
        "Item 7A. Quantitative and Qualitative Disclosures about Market Risk",
        "Investment and Interest Rate Risk\nWe are exposed to interest rate risk related to our fixed-rate "
        "investment portfolio and outstanding debt.",
        "Refer to Note 10 of the Notes to the Consolidated Financial Statements in Part IV, Item 15 of this Annual "
        "Report on Form 10-K for additional information.",
        "Item 8. Financial Statements and Supplementary Data",
    ),
    # Apple's Q3 FY2025 10-Q: Part I Items 2 and 3, Part II Items 1 and 1A
    Expected(
        APPLE_10Q_Q3_FY2025,
        "risk_factors",
        "Item 1A. Risk Factors",
        APPLE_10Q_RISKS_FIRST,
        "Except for the risk factors disclosed in Part II, Item 1A of the first quarter 2025 Form 10-Q and the "
        "second quarter 2025 Form 10-Q, which are hereby incorporated by reference into this Part II, Item 1A of "
        "this Form 10-Q, there have been no material changes to the Company’s risk factors since the 2024 Form 10-K.",
        "Item 2. Unregistered Sales of Equity Securities and Use of Proceeds",
    ),
    Expected(
        APPLE_10Q_Q3_FY2025,
        "legal_proceedings",
        "Item 1. Legal Proceedings",
        "Digital Markets Act Investigations\nOn March 25, 2024, the Commission announced that it had opened a "
        "formal noncompliance investigation against the Company under Article 5(4) of the EU Digital Markets Act",
        APPLE_LEGAL_LAST,
        "Apple Inc. | Q3 2025 Form 10-Q | 20",  # then Item 1A
    ),
    Expected(
        APPLE_10Q_Q3_FY2025,
        "mdna",
        "Item 2. Management’s Discussion and Analysis of Financial Condition and Results of Operations",
        APPLE_10Q_MDNA_FIRST,
        APPLE_10Q_MDNA_LAST,
        "Item 3. Quantitative and Qualitative Disclosures About Market Risk",
    ),
    Expected(
        APPLE_10Q_Q3_FY2025,
        "market_risk",
        "Item 3. Quantitative and Qualitative Disclosures About Market Risk",
        "There have been no material changes to the Company’s market risk during the first nine months of 2025.",
        APPLE_10Q_MARKET_LAST,
        "Item 4. Controls and Procedures",
    ),
    # Apple's Q2 FY2025 10-Q
    Expected(
        APPLE_10Q_Q2_FY2025,
        "risk_factors",
        "Item 1A. Risk Factors",
        APPLE_10Q_RISKS_FIRST,
        "can result in adverse reactions by consumers and other stakeholders, including the commencement of legal "
        "and regulatory proceedings against the Company, and can materially adversely affect the Company’s "
        "business, reputation, results of operations, financial condition and stock price.",
        "Apple Inc. | Q2 2025 Form 10-Q | 21",  # then Item 2
    ),
    Expected(
        APPLE_10Q_Q2_FY2025,
        "legal_proceedings",
        "Item 1. Legal Proceedings",
        "Digital Markets Act Investigations\nOn March 25, 2024, the Commission announced that it had opened two "
        "formal noncompliance investigations against the Company under the EU Digital Markets Act",
        APPLE_LEGAL_LAST,
        "Apple Inc. | Q2 2025 Form 10-Q | 19",  # then Item 1A
    ),
    Expected(
        APPLE_10Q_Q2_FY2025,
        "mdna",
        "Item 2. Management’s Discussion and Analysis of Financial Condition and Results of Operations",
        APPLE_10Q_MDNA_FIRST,
        APPLE_10Q_MDNA_LAST,
        "Item 3. Quantitative and Qualitative Disclosures About Market Risk",
    ),
    Expected(
        APPLE_10Q_Q2_FY2025,
        "market_risk",
        "Item 3. Quantitative and Qualitative Disclosures About Market Risk",
        "There have been no material changes to the Company’s market risk during the first six months of 2025.",
        APPLE_10Q_MARKET_LAST,
        "Item 4. Controls and Procedures",
    ),
    # NVIDIA's Q2 FY2026 10-Q
    Expected(
        NVIDIA_10Q_Q2_FY2026,
        "risk_factors",
        "Item 1A. Risk Factors",
        "Other than the risk factors listed below, there have been no material changes from the risk factors "
        "previously described under Item 1A of our Annual Report on Form 10-K for the fiscal year ended January 26, "
        "2025",
        "Any new restrictions that negatively impact our ability to receive supply of components, parts, or "
        "services from Taiwan and South Korea, would negatively impact our business and financial results.",
        "Item 2. Unregistered Sales of Equity Securities and Use of Proceeds",
    ),
    Expected(
        NVIDIA_10Q_Q2_FY2026,
        "legal_proceedings",
        "Item 1. Legal Proceedings",
        "Refer to Part I, Item 1, Note 11 of the Notes to Condensed Consolidated Financial Statements for a "
        "discussion of significant developments in our legal proceedings since January 26, 2025.",
        "Also refer to Item 3, “Legal Proceedings” in our Annual Report on Form 10-K for the fiscal year ended "
        "January 26, 2025 for a prior discussion of our legal proceedings.",
        "Item 1A. Risk Factors",
    ),
    Expected(
        NVIDIA_10Q_Q2_FY2026,
        "mdna",
        "Item 2. Management's Discussion and Analysis of Financial Condition and Results of Operations",
        "Forward-Looking Statements\nThis Quarterly Report on Form 10-Q contains forward-looking statements within "
        "the meaning of Section 27A of the Securities Act of 1933",
        "There has been no adoption of any new and recently issued accounting pronouncements.",
        "Item 3. Quantitative and Qualitative Disclosures about Market Risk",
    ),
    Expected(
        NVIDIA_10Q_Q2_FY2026,
        "market_risk",
        "Item 3. Quantitative and Qualitative Disclosures about Market Risk",
        "Investment and Interest Rate Risk\nFinancial market risks related to investment and interest rate risk "
        "are described in Part II, Item 7A",
        "As of July 27, 2025, there have been no material changes to the foreign exchange rate risks described as "
        "of January 26, 2025.",
        "Item 4. Controls and Procedures",
    ),
]

SEGMENT_NOTES = [
    Expected(
        APPLE_10K_FY2025,
        "segment_note",
        APPLE_SEGMENTS,
        "The Company manages its business primarily on a geographic basis. The Company’s CEO is its CODM.",
        "(1)China includes Hong Kong and Taiwan.",
        APPLE_AUDITOR,  # the last note, then the auditor's reports and Item 9
    ),
    Expected(
        APPLE_10K_FY2024,
        "segment_note",
        APPLE_SEGMENTS,
        "The Company manages its business primarily on a geographic basis. The Company’s reportable segments "
        "consist of the Americas, Europe, Greater China, Japan and Rest of Asia Pacific.",
        "(1)China includes Hong Kong and Taiwan.",
        APPLE_AUDITOR,
    ),
    Expected(
        NVIDIA_10K_FY2025,
        "segment_note",
        "Note 16 - Segment Information",
        NVIDIA_SEGMENTS_FIRST,
        "Total long-lived assets $ 6,283 $ 3,914",
        "Note 17 - Leases",
    ),
    Expected(
        APPLE_10Q_Q3_FY2025,
        "segment_note",
        APPLE_10Q_SEGMENTS,
        "The following table shows information by reportable segment for the three- and nine-month periods ended "
        "June 28, 2025 and June 29, 2024 (in millions):",
        "Total operating income $ 28,202 $ 25,352 $ 100,623 $ 93,625",
        "Item 2. Management’s Discussion and Analysis",  # the last note, then Item 2
    ),
    Expected(
        APPLE_10Q_Q2_FY2025,
        "segment_note",
        APPLE_10Q_SEGMENTS,
        "The following table shows information by reportable segment for the three- and six-month periods ended "
        "March 29, 2025 and March 30, 2024 (in millions):",
        "Total operating income $ 29,589 $ 27,900 $ 72,421 $ 68,273",
        "Item 2. Management’s Discussion and Analysis",
    ),
    Expected(
        NVIDIA_10Q_Q2_FY2026,
        "segment_note",
        "Note 13 - Segment Information",
        NVIDIA_SEGMENTS_FIRST,
        "Total revenue $ 46,743 $ 30,040 $ 90,805 $ 56,084",
        "Note 14 - Leases",  # after the page's footer and the next page's head
    ),
]

NOTES = [
    Expected(
        APPLE_10K_FY2025,
        "summary of significant accounting policies",
        "Note 1 – Summary of Significant Accounting Policies",
        "Basis of Presentation and Preparation\nThe consolidated financial statements include the accounts of "
        "Apple Inc. and its wholly owned subsidiaries.",
        "The Company combines and accounts for lease and nonlease components as a single lease component for "
        "leases of corporate and retail facilities.",
        "Note 2 – Revenue",
    ),
    Expected(
        APPLE_10K_FY2024,
        "summary of significant accounting policies",
        "Note 1 – Summary of Significant Accounting Policies",
        "Basis of Presentation and Preparation\nThe consolidated financial statements include the accounts of "
        "Apple Inc. and its wholly owned subsidiaries.",
        "The Company combines and accounts for lease and nonlease components as a single lease component for "
        "leases of corporate, data center and retail facilities.",
        "Apple Inc. | 2024 Form 10-K | 34",  # then Note 2
    ),
    Expected(
        NVIDIA_10K_FY2025,
        "organization and summary of significant accounting policies",
        "Note 1 - Organization and Summary of Significant Accounting Policies",
        "Our Company\nHeadquartered in Santa Clara, California, NVIDIA was incorporated in California in April "
        "1993 and reincorporated in Delaware in April 1998.",
        NVIDIA_NOTE_1_LAST,
        "Note 2 - Business Combination",
    ),
    Expected(
        NVIDIA_10K_FY2025,
        "leases",
        "Note 17 - Leases",
        "Our lease obligations primarily consist of operating leases for our headquarters' campus and domestic "
        "and international offices and data centers, with lease periods expiring between fiscal years 2026 and "
        "2037.",
        "As of January 28, 2024, our operating leases had a weighted average remaining lease term of 6.1 years and "
        "a weighted average discount rate of 3.76%.",
        "Schedule II – Valuation and Qualifying Accounts",  # the last note, after the next page's head
    ),
    Expected(
        APPLE_10Q_Q3_FY2025,
        "summary of significant accounting policies",
        "Note 1 – Summary of Significant Accounting Policies",
        "Basis of Presentation and Preparation\nThe condensed consolidated financial statements include the "
        "accounts of Apple Inc. and its wholly owned subsidiaries",
        APPLE_10Q_NOTE_1_LAST,
        "Note 2 – Revenue",
    ),
    Expected(
        APPLE_10Q_Q2_FY2025,
        "summary of significant accounting policies",
        "Note 1 – Summary of Significant Accounting Policies",
        "Basis of Presentation and Preparation\nThe condensed consolidated financial statements include the "
        "accounts of Apple Inc. and its wholly owned subsidiaries",
        APPLE_10Q_NOTE_1_LAST,
        "Note 2 – Revenue",
    ),
    Expected(
        NVIDIA_10Q_Q2_FY2026,
        "summary of significant accounting policies",
        "Note 1 - Summary of Significant Accounting Policies",
        "Basis of Presentation\nThe accompanying unaudited condensed consolidated financial statements were "
        "prepared in accordance with accounting principles generally accepted in the United States of America",
        NVIDIA_NOTE_1_LAST,
        "Note 2 - Stock-Based Compensation",
    ),
    Expected(
        NVIDIA_10Q_Q2_FY2026,
        "leases",
        "Note 14 - Leases",
        "Our lease obligations primarily consist of operating leases for our offices and data centers, with lease "
        "periods expiring between fiscal years 2026 and 2041.",
        "As of January 26, 2025, our operating leases had a weighted average remaining lease term of 6.5 years and "
        "a weighted average discount rate of 4.16%.",
        "Item 2. Management's Discussion and Analysis",  # the last note, then Item 2
    ),
]


def serve_recorded(fake_sec: FakeSecServer, filed: Filed) -> str:
    """The loopback SEC serves the company's real submissions file and the real document at its own path;
    the document's URL."""
    fake_sec.serve(
        f"/data.sec.gov/submissions/CIK{filed.cik10}.json",
        recorded_bytes("sec", "data", "submissions", f"CIK{filed.cik10}.json"),
    )
    path = f"/Archives/edgar/data/{filed.document}"
    fake_sec.serve(f"/www.sec.gov{path}", recorded_bytes("sec", "www", *path.strip("/").split("/")))
    return f"{fake_sec.www_url}{path}"


async def read_section(mcp_client: InMemoryMCP, filed: Filed, section: str) -> FilingSection:
    """The whole section through `get_filing_section`, page after page."""
    arguments = {"ticker": filed.ticker, "section": section, "form": filed.form, "accession": filed.accession}
    pages: list[FilingSection] = []
    while not pages or pages[-1].truncated:
        offset = sum(len(page.text) for page in pages)
        result = await mcp_client.call_tool("get_filing_section", {**arguments, "offset": offset, "max_chars": 40_000})
        assert not result.is_error, result.content
        pages.append(FilingSection.model_validate(result.structured_content))
    return pages[0].model_copy(update={"text": "".join(page.text for page in pages), "truncated": False})


def assert_runs_as_printed(heading: str, text: str, expected: Expected) -> None:
    assert heading == expected.heading
    assert text.startswith(expected.first)
    assert text.endswith(expected.last)
    assert expected.follows not in text
    assert not [marker for marker in NEVER_IN_A_SECTION if marker in text]


@pytest.mark.parametrize("expected", ITEMS + SEGMENT_NOTES, ids=str)
async def test_a_real_filings_section_runs_from_its_first_sentence_to_its_last(
    mcp_client: InMemoryMCP, fake_sec: FakeSecServer, expected: Expected
) -> None:
    url = serve_recorded(fake_sec, expected.filed)

    found = await read_section(mcp_client, expected.filed, expected.section)

    assert (found.url, found.form, found.accession) == (url, expected.filed.form, expected.filed.accession)
    assert len(found.text) == found.total_chars
    assert_runs_as_printed(found.heading, found.text, expected)


@pytest.mark.parametrize("expected", NOTES, ids=str)
async def test_a_real_filings_first_and_last_notes_run_from_their_first_sentence_to_their_last(
    sec_client: SecClient, fake_sec: FakeSecServer, expected: Expected
) -> None:
    url = serve_recorded(fake_sec, expected.filed)
    text = await sec_client.document(url, ttl_s=60, transform=document_text)

    note = find_note(text, expected.section)

    assert_runs_as_printed(note.heading, note.text, expected)


async def test_apples_last_note_stops_before_the_auditors_reports_that_follow_it(
    mcp_client: InMemoryMCP, fake_sec: FakeSecServer
) -> None:
    # Found on the real FY2025 10-K: Note 13 (the last note, about 3,800 characters) came back as 13,490,
    # running through both of Ernst & Young's reports to "/s/ Ernst & Young LLP".
    serve_recorded(fake_sec, APPLE_10K_FY2025)

    found = await read_section(mcp_client, APPLE_10K_FY2025, "segment_note")

    assert found.heading == APPLE_SEGMENTS
    assert 3_600 < found.total_chars < 3_900
    assert "Ernst & Young" not in found.text and "critical audit matter" not in found.text
