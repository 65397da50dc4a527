"""Figures as the filings give them, held to the SEC's real company facts: Apple's and NVIDIA's, as recorded
(`../shared/recorded/sec`, see `tests/recorded.py`), served on loopback at the SEC's own paths and read by the
real SEC client through the MCP tool.

What the real facts hold and a fake written from the documentation did not: a 10-K reports the fiscal year,
not its fourth quarter; cash flows are filed year to date only; a calendar frame may sit only on a proxy
statement's untagged copy of a fact. Each quarter derived here is checked against the filed figures it comes
from and cites both filings.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import pytest

from datascraper.filings.schemas import ReportedFigure
from tests.datascraper.filings.test_tools import figures
from tests.datascraper.market_data.support import InMemoryMCP
from tests.datascraper.market_data.test_tools import error_of
from tests.fakes.sec_server import FakeSecServer
from tests.recorded import recorded_path

pytestmark = pytest.mark.timeout(60)

APPLE_FY2025_10K = ("10-K", date(2025, 10, 31), "0000320193-25-000079")
APPLE_Q3_FY2025_10Q = ("10-Q", date(2025, 8, 1), "0000320193-25-000073")
APPLE_Q2_FY2025_10Q = ("10-Q", date(2025, 5, 2), "0000320193-25-000057")
NVIDIA_FY2026_10K = ("10-K", date(2026, 2, 25), "0001045810-26-000021")
NVIDIA_Q3_FY2026_10Q = ("10-Q", date(2025, 11, 19), "0001045810-25-000230")


@pytest.fixture(scope="module")
def sec_server() -> Iterator[FakeSecServer]:
    """The SEC's recorded replies on loopback, in place of the fixtures (the conftest's fixtures use it)."""
    with FakeSecServer(recorded=recorded_path("sec")) as fake:
        yield fake


def derived_from(figure: ReportedFigure) -> tuple[tuple[str, float, str, date, str], ...]:
    """Each input of a derived figure: its label, value and filing (form, date, accession)."""
    assert figure.derived_from is not None, f"{figure.label} is not marked derived"
    return tuple(
        (part.label, part.value, part.form, part.filed, part.accession)
        for part in (figure.derived_from.whole, figure.derived_from.earlier)
    )


async def test_apples_fourth_quarter_of_fiscal_2025_is_its_year_less_its_nine_months(
    mcp_client: InMemoryMCP, fake_sec: FakeSecServer
) -> None:
    result = await figures(mcp_client, ticker="AAPL", concept="revenue", fiscal_year=2025, fiscal_period="Q4")

    [q4] = result.figures
    assert (q4.label, q4.value, q4.unit) == ("Q4 FY2025", 102_466_000_000, "USD")
    assert (str(q4.start), str(q4.end), q4.frame) == ("2025-06-29", "2025-09-27", None)
    assert derived_from(q4) == (
        ("FY2025", 416_161_000_000, *APPLE_FY2025_10K),
        ("nine months to Q3 FY2025", 313_695_000_000, *APPLE_Q3_FY2025_10Q),
    )
    assert q4.derived_from is not None and q4.derived_from.formula == "FY2025 - nine months to Q3 FY2025"
    assert q4.derived_from.earlier.filing_url == (
        f"{fake_sec.www_url}/Archives/edgar/data/320193/000032019325000073/0000320193-25-000073-index.htm"
    )
    # No filing reported this quarter: it is cited to the 10-K that completes it, with no version of its own.
    assert (q4.form, q4.filed, q4.accession, q4.versions) == (*APPLE_FY2025_10K, [])
    assert (
        "Q4 FY2025 (2025-06-29 to 2025-09-27; calendar frame not assigned): 102,466,000,000 USD "
        "[us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax], derived, not filed: FY2025 "
        "416,161,000,000 (10-K filed 2025-10-31) less nine months to Q3 FY2025 313,695,000,000 (10-Q filed 2025-08-01)"
    ) in result.summary_text()


async def test_nvidias_fourth_quarter_of_fiscal_2026_is_derived_from_its_10k_and_third_quarter_10q(
    mcp_client: InMemoryMCP,
) -> None:
    result = await figures(mcp_client, ticker="NVDA", concept="revenue", fiscal_year=2026, fiscal_period="Q4")

    [q4] = result.figures
    # $68.1 billion: with the three filed quarters (44,062 + 46,743 + 57,006 million) it makes the year's 215,938.
    assert (q4.label, q4.value, str(q4.start), str(q4.end)) == ("Q4 FY2026", 68_127_000_000, "2025-10-27", "2026-01-25")
    assert derived_from(q4) == (
        ("FY2026", 215_938_000_000, *NVIDIA_FY2026_10K),
        ("nine months to Q3 FY2026", 147_811_000_000, *NVIDIA_Q3_FY2026_10Q),
    )
    quarters = await figures(mcp_client, ticker="NVDA", concept="revenue", frequency="quarterly", limit=5)
    fiscal_2026 = [f.value for f in quarters.figures if f.fiscal_year == 2026]
    assert sum(fiscal_2026) == 215_938_000_000 and len(fiscal_2026) == 4


async def test_a_cash_flow_quarter_filed_only_year_to_date_is_the_difference_of_two_years_to_date(
    mcp_client: InMemoryMCP,
) -> None:
    result = await figures(
        mcp_client, ticker="AAPL", concept="operating_cash_flow", fiscal_year=2025, fiscal_period="Q3"
    )

    [q3] = result.figures
    assert (q3.label, q3.value, str(q3.start), str(q3.end)) == ("Q3 FY2025", 27_867_000_000, "2025-03-30", "2025-06-28")
    assert derived_from(q3) == (
        ("nine months to Q3 FY2025", 81_754_000_000, *APPLE_Q3_FY2025_10Q),
        ("six months to Q2 FY2025", 53_887_000_000, *APPLE_Q2_FY2025_10Q),
    )


async def test_a_calendar_frame_on_a_proxy_statements_copy_finds_the_figure_without_relabelling_it(
    mcp_client: InMemoryMCP,
) -> None:
    # The SEC put NVIDIA's CY2025 frame only on the copy of its net income in the DEF 14A of 2026-05-12,
    # which has no fy/fp; the figure is still its fiscal 2026, as the 10-K reported it.
    by_frame = await figures(mcp_client, ticker="NVDA", concept="net_income", frame="CY2025")

    [year] = by_frame.figures
    assert (year.label, year.value, year.frame) == ("FY2026", 120_067_000_000, "CY2025")
    assert (year.form, year.filed, year.accession) == NVIDIA_FY2026_10K
    assert {v.form for v in year.versions} == {"10-K"}
    by_fiscal_year = await figures(mcp_client, ticker="NVDA", concept="net_income", fiscal_year=2026)
    assert by_fiscal_year.figures == by_frame.figures


async def test_apples_last_four_quarters_include_the_fourth_quarter_its_10k_reports_within_the_year(
    mcp_client: InMemoryMCP,
) -> None:
    result = await figures(mcp_client, ticker="AAPL", concept="revenue", frequency="quarterly", limit=4)

    assert [(f.label, f.value, f.derived_from is not None) for f in result.figures] == [
        ("Q1 FY2026", 143_756_000_000, False),
        ("Q4 FY2025", 102_466_000_000, True),
        ("Q3 FY2025", 94_036_000_000, False),
        ("Q2 FY2025", 95_359_000_000, False),
    ]
    assert str(result.as_of) == "2026-01-30"


@pytest.mark.parametrize("ticker", ["AAPL", "NVDA"])
@pytest.mark.parametrize("line", ["revenue", "net_income", "operating_cash_flow"])
async def test_each_fiscal_years_quarters_filed_or_derived_add_up_to_the_year_as_filed(
    mcp_client: InMemoryMCP, ticker: str, line: str
) -> None:
    quarters = await figures(mcp_client, ticker=ticker, concept=line, frequency="quarterly", limit=20)
    years = await figures(mcp_client, ticker=ticker, concept=line, frequency="annual", limit=6)

    by_year: dict[int, list[ReportedFigure]] = {}
    for quarter in quarters.figures:
        by_year.setdefault(quarter.fiscal_year, []).append(quarter)
    complete = [year for year in years.figures if len(by_year.get(year.fiscal_year, [])) == 4]
    assert len(complete) >= 4
    for year in complete:
        assert sorted(q.fiscal_period for q in by_year[year.fiscal_year]) == ["Q1", "Q2", "Q3", "Q4"]
        # Each filed figure is rounded to the million: NVIDIA's FY2024 net income of 29,760 million has filed
        # quarters of 2,043 + 6,188 + 9,243 beside nine months of 17,475.
        assert abs(sum(q.value for q in by_year[year.fiscal_year]) - year.value) <= 2_000_000, year.label
    assert any(q.derived_from is not None for q in quarters.figures)


async def test_a_balance_is_never_differenced_nor_a_per_share_figure(mcp_client: InMemoryMCP) -> None:
    balances = await figures(mcp_client, ticker="AAPL", concept="total_assets", frequency="quarterly", limit=8)
    eps = await figures(mcp_client, ticker="AAPL", concept="eps_diluted", frequency="quarterly", limit=8)

    assert all(f.start is None and f.derived_from is None for f in balances.figures)
    assert [f.value for f in balances.figures if f.label == "FY2025"] == [359_241_000_000]  # as filed at the year end
    assert all(f.derived_from is None for f in eps.figures)
    # FY2025's 7.46 less 5.62 for nine months is 1.84, not the quarter's: a per-share figure is not derived.
    missing = await mcp_client.call_tool(
        "get_reported_figures", {"ticker": "AAPL", "concept": "eps_diluted", "fiscal_year": 2025, "fiscal_period": "Q4"}
    )
    code, text = error_of(missing)
    assert code == "no_data" and "a per-share figure or a count is not derived as the year less nine months" in text
