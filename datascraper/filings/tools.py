"""The filing tools, registered on our MCP server beside the Yahoo tools.

The same server rather than a second one started the same way: research reaches market data through one
long-lived MCP session (start, health watch, restart, back-off), and a second server would need a second
session, a second child process per app process and a second health watch, for four tools whose own work is
a few HTTP requests. One server also shares one cache (the app's, Redis when configured)
across both sources. The tools' failures follow the server's rule: an `isError` result `<code>: <sentence>`.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from datascraper.filings.facts import Frequency
from datascraper.filings.schemas import FilingList, FilingSection, FiscalPeriod, InsiderTransactions, ReportedFigures
from datascraper.filings.service import (
    DEFAULT_FILINGS,
    DEFAULT_FORM4_FILINGS,
    DEFAULT_SECTION_CHARS,
    MAX_FIGURES,
    MAX_FILINGS,
    MAX_FORM4_FILINGS,
    MAX_SECTION_CHARS,
    FilingsService,
)

FilingToolName = Literal["get_reported_figures", "get_filings", "get_filing_section", "get_insider_transactions"]
FILING_TOOL_NAMES: frozenset[str] = frozenset(get_args(FilingToolName))
INSTRUCTIONS = (
    "SEC EDGAR filings (US-listed companies): figures as reported in 10-K/10-Q XBRL with fiscal labels, "
    "filing lists, a filing section's text, and Form 4 insider trades; each result cites its filing."
)

Ticker = Annotated[str, Field(description="A US ticker as the SEC lists it, e.g. AAPL, NVDA, BRK-B.")]
_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=True)


class FilingTools:
    """The tools as methods: each one's signature is its input schema, its docstring its description."""

    def __init__(self, filings: FilingsService) -> None:
        self.filings = filings

    async def get_reported_figures(
        self,
        ticker: Ticker,
        concept: Annotated[
            str,
            Field(
                description="A line (revenue, net_income, operating_income, eps_diluted, total_assets, "
                "operating_cash_flow, ...; Yahoo's TotalRevenue etc. too) or an XBRL concept (Revenues, "
                "us-gaap:NetIncomeLoss)."
            ),
        ],
        fiscal_year: Annotated[int | None, Field(description="The company's fiscal year, e.g. 2025.")] = None,
        fiscal_period: Annotated[
            FiscalPeriod | None, Field(description="FY or Q1-Q4 of fiscal_year; FY when only the year is given.")
        ] = None,
        frame: Annotated[
            str | None,
            Field(
                description="A calendar frame instead: CY2024 (a year), CY2024Q3 (a quarter), CY2024Q4I (a balance)."
            ),
        ] = None,
        frequency: Annotated[
            Frequency, Field(description="Without a year or frame: the newest annual or quarterly periods.")
        ] = "annual",
        limit: Annotated[int, Field(description=f"Periods wanted without a year or frame; at most {MAX_FIGURES}.")] = 4,
    ) -> ReportedFigures:
        """Figures as the company reported them to the SEC (XBRL), with fiscal label (fy/fp) and calendar
        frame, period dates, form, filing date, accession number and filing URL; a restated period keeps
        every filing's value, the latest filed first. A quarter filed only within the year or year to date
        (a fourth quarter; a cash-flow quarter) is derived as the difference of two filed figures and
        marked `derived_from`, with both and their filings."""
        return await self.filings.reported_figures(
            ticker,
            concept,
            fiscal_year=fiscal_year,
            fiscal_period=fiscal_period,
            frame=frame,
            frequency=frequency,
            limit=limit,
        )

    async def get_filings(
        self,
        ticker: Ticker,
        forms: Annotated[
            list[str] | None,
            Field(description="Forms wanted, e.g. ['10-K', '10-Q', '8-K', '4', 'DEF 14A']; none: all."),
        ] = None,
        limit: Annotated[int, Field(description=f"Filings wanted; at most {MAX_FILINGS}.")] = DEFAULT_FILINGS,
    ) -> FilingList:
        """The company's recent SEC filings, newest first: form, filing and report dates, accession number,
        document and index links, and an 8-K's item numbers."""
        return await self.filings.filings(ticker, forms, limit=limit)

    async def get_filing_section(
        self,
        ticker: Ticker,
        section: Annotated[
            str,
            Field(
                description="risk_factors, mdna, legal_proceedings, market_risk, business, segment_note, "
                "or an 8-K item number such as 2.02."
            ),
        ],
        form: Annotated[str | None, Field(description="10-K (default) or 10-Q; 8-K for an item number.")] = None,
        accession: Annotated[
            str | None, Field(description="A specific filing; default: the latest of the form.")
        ] = None,
        offset: Annotated[int, Field(description="Characters of the section to skip (to read on).")] = 0,
        max_chars: Annotated[
            int, Field(description=f"Characters wanted; at most {MAX_SECTION_CHARS}.")
        ] = DEFAULT_SECTION_CHARS,
    ) -> FilingSection:
        """A section of the company's latest 10-K or 10-Q, or an 8-K item, as clean text with the filing it
        is from and its document URL."""
        return await self.filings.filing_section(
            ticker, section, form=form, accession=accession, offset=offset, max_chars=max_chars
        )

    async def get_insider_transactions(
        self,
        ticker: Ticker,
        filings_wanted: Annotated[
            int, Field(description=f"Recent Form 4 filings to read; at most {MAX_FORM4_FILINGS}.")
        ] = DEFAULT_FORM4_FILINGS,
    ) -> InsiderTransactions:
        """Insider trades from the company's recent Form 4 filings: who, role, date, shares, price,
        acquired or disposed, and holdings after."""
        return await self.filings.insider_transactions(ticker, filings=filings_wanted)


def register_filing_tools(server: MCPServer, filings: FilingsService) -> None:
    """Add the four filing tools to `server`."""
    tools = FilingTools(filings)
    for name in get_args(FilingToolName):
        server.tool(annotations=_READ_ONLY)(getattr(tools, name))
