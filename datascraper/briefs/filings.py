"""New SEC filings in a brief's window: 8-Ks with their items and the headline of their exhibit 99, 10-Qs
and 10-Ks, and Form 4 insider trades (who, what, shares, price), each reported once, by accession.

The SEC dates a filing by day, so a filing of `since`'s day falls in two windows: its accession, among the
keys of earlier briefs, keeps it out of the second.
"""

from __future__ import annotations

from datascraper.briefs.schemas import BriefWindow, Change, ChangeSource
from datascraper.briefs.tool_calls import CheckFailed, call_tool
from datascraper.filings.schemas import Filing, FilingList, FilingSection, InsiderTransaction, InsiderTransactions
from datascraper.filings.sections import ITEMS_WITH_EXHIBIT
from datascraper.filings.service import MAX_FORM4_FILINGS
from datascraper.formatting import fmt
from datascraper.research_engine.data.filings import FilingToolResult, filing_sources
from datascraper.schemas import Source

WATCHED_FORMS = ["8-K", "10-Q", "10-K", "4"]
LISTED = 40  # the newest filings of those forms looked at: a busy day of Form 4s fits
HEADLINE_CHARS = 600  # read of the exhibit's start, for its headline
_ACTIONS = {"A": "acquired", "D": "disposed of"}


class FilingChanges:
    """What the filing checks found for one symbol, and the tool results it is read from."""

    def __init__(self) -> None:
        self.changes: list[Change] = []
        self.evidence: list[FilingToolResult] = []


async def new_filings(symbol: str, window: BriefWindow) -> tuple[FilingChanges, list[Filing]]:
    """The filings of the window not reported before (Form 4s among them, reported by `insider_trades`)."""
    found = FilingChanges()
    data = await call_tool("get_filings", {"ticker": symbol, "forms": WATCHED_FORMS, "limit": LISTED})
    listed = FilingList.model_validate(data)
    new = [f for f in listed.filings if window.covers_day(f.filed) and _key(f.accession) not in window.reported]
    if not new:
        return found, []
    cut = listed.model_copy(update={"filings": new})
    found.evidence.append(FilingToolResult(symbol=symbol, tool="get_filings", data=cut.model_dump(mode="json")))
    for filing, source in zip(new, filing_sources(cut), strict=True):
        if filing.form == "4":
            continue
        headline = await _exhibit_headline(symbol, filing, found) if filing.form == "8-K" else None
        found.changes.append(_filing_change(symbol, listed.company, filing, source, headline))
    return found, [filing for filing in new if filing.form == "4"]


async def insider_trades(symbol: str, form4s: list[Filing], found: FilingChanges) -> None:
    """One change per new Form 4, naming its trades."""
    data = await call_tool(
        "get_insider_transactions", {"ticker": symbol, "filings_wanted": min(len(form4s) + 2, MAX_FORM4_FILINGS)}
    )
    read = InsiderTransactions.model_validate(data)
    wanted = {filing.accession for filing in form4s}
    trades = [trade for trade in read.transactions if trade.accession in wanted]
    sources: dict[str, Source] = {}
    if trades:
        cut = read.model_copy(update={"transactions": trades})
        found.evidence.append(
            FilingToolResult(symbol=symbol, tool="get_insider_transactions", data=cut.model_dump(mode="json"))
        )
        for trade, trade_source in zip(trades, filing_sources(cut), strict=True):
            sources.setdefault(trade.accession, trade_source)
    for filing in form4s:
        own = [trade for trade in trades if trade.accession == filing.accession]
        summary = f"Form 4 filed {filing.filed}: " + (
            "; ".join(_trade_text(trade) for trade in own) if own else "its trades could not be read."
        )
        found.changes.append(_change(symbol, summary, filing, sources.get(filing.accession)))


def _filing_change(symbol: str, company: str, filing: Filing, source: Source, headline: str | None) -> Change:
    if filing.form == "8-K":
        items = "; ".join(f"item {item.number} {item.title}" for item in filing.items) or "no items listed"
        summary = f"{company} filed an 8-K on {filing.filed} ({items})"
        summary += f'; exhibit 99: "{headline}".' if headline else "."
    else:
        period = f" for the period ending {filing.report_date}" if filing.report_date else ""
        summary = f"{company} filed its {filing.form}{period} on {filing.filed}."
    return _change(symbol, summary, filing, source)


def _change(symbol: str, summary: str, filing: Filing, source: Source | None) -> Change:
    return Change(
        symbol=symbol,
        kind="filing",
        summary=summary,
        source=ChangeSource(
            url=source.url if source is not None else filing.url,
            title=source.title if source is not None else f"SEC EDGAR — {symbol} {filing.form}, filed {filing.filed}",
            publisher="SEC EDGAR",
            date=filing.filed.isoformat(),
            form=filing.form,
            accession=filing.accession,
        ),
        key=_key(filing.accession),
    )


def _key(accession: str) -> str:
    return f"filing:{accession}"


def _trade_text(trade: InsiderTransaction) -> str:
    price = f" at {fmt(trade.price)}" if trade.price else ""  # a grant or a unit's conversion has none (or 0)
    return (
        f"{trade.owner} ({trade.role}) {_ACTIONS[trade.acquired_disposed]} {trade.shares:,.0f} {trade.security}"
        f"{price} on {trade.transaction_date} ({trade.code_meaning}, {trade.ownership})"
    )


async def _exhibit_headline(symbol: str, filing: Filing, found: FilingChanges) -> str | None:
    """The first line of the exhibit 99 an 8-K's earnings or disclosure item carries (its press release's
    headline), or None when it has none or it cannot be read: the 8-K is reported without it."""
    item = next((item.number for item in filing.items if item.number in ITEMS_WITH_EXHIBIT), None)
    if item is None:
        return None
    asked = {"ticker": symbol, "section": item, "form": "8-K", "accession": filing.accession, "max_chars": 200}
    try:
        section = FilingSection.model_validate(await call_tool("get_filing_section", asked))
        exhibit = next((e for e in section.exhibits if e.number.startswith("99")), None)
        if exhibit is None:
            return None
        asked |= {"offset": exhibit.starts_at, "max_chars": HEADLINE_CHARS}
        start = FilingSection.model_validate(await call_tool("get_filing_section", asked))
    except CheckFailed:
        return None
    lines = [line.strip() for line in start.text.splitlines() if line.strip() and not line.startswith("[Exhibit")]
    headline = next((line for line in lines if len(line.split()) >= 4), None)
    if headline is None:
        return exhibit.description
    found.evidence.append(
        FilingToolResult(symbol=symbol, tool="get_filing_section", data=start.model_dump(mode="json"))
    )
    return headline
