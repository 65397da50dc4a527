"""What the filing tools ask of the SEC: one method per tool, each returning a typed, citable result.

Every method reads the ticker map first (cached a day), then the submissions file or the company facts
(cached an hour or hours), then, for text and Form 4s, the filed documents (cached for a month: a filed
document never changes). An 8-K item that refers to its exhibit (an earnings release's Exhibit 99.1) also
reads the filing's index page and that exhibit, cached as long.
"""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import date
from typing import Any

from datascraper.cache import TTLCache
from datascraper.filings.client import SecClient
from datascraper.filings.companies import Company, archive_url, find_company, submissions
from datascraper.filings.concepts import resolve_concept
from datascraper.filings.config import FilingsConfig
from datascraper.filings.errors import (
    FilingError,
    FilingInvalidArgument,
    FilingNotFound,
    FilingsUpstreamError,
    FilingTooLarge,
    NoFilingData,
)
from datascraper.filings.facts import Frequency, PeriodQuery, reported_figures
from datascraper.filings.insiders import parse_form4, raw_document
from datascraper.filings.schemas import (
    Filing,
    FilingExhibit,
    FilingItem,
    FilingList,
    FilingSection,
    FiscalPeriod,
    InsiderTransactions,
    ReportedFigures,
)
from datascraper.filings.sections import (
    EIGHT_K_ITEM,
    READ_EXHIBIT_SERIES,
    check_section,
    document_name,
    document_text,
    exhibit_list,
    exhibit_number,
    exhibits_to_read,
    filing_documents,
    find_section,
)

logger = logging.getLogger(__name__)

MAX_FIGURES = 20
MAX_FILINGS = 100
DEFAULT_FILINGS = 20
DEFAULT_SECTION_CHARS = 12_000
MAX_SECTION_CHARS = 40_000
# At most this many exhibits are read after an 8-K item (each is a request when not cached).
MAX_EXHIBITS = 3
DEFAULT_FORM4_FILINGS = 5
MAX_FORM4_FILINGS = 20
# An index page or a Form 4 is parsed as a tree, some ten times its size: refused past this (real ones run
# from a few kB to a few hundred).
MAX_TREE_DOCUMENT_BYTES = 2_000_000
# Forms of foreign private issuers: their annual figures are in the report, rarely in us-gaap XBRL facts.
_FOREIGN_ANNUAL_FORMS = ("20-F", "40-F")

EIGHT_K_ITEMS: dict[str, str] = {
    "1.01": "Entry into a Material Definitive Agreement",
    "1.02": "Termination of a Material Definitive Agreement",
    "1.05": "Material Cybersecurity Incidents",
    "2.01": "Completion of Acquisition or Disposition of Assets",
    "2.02": "Results of Operations and Financial Condition",
    "2.03": "Creation of a Direct Financial Obligation",
    "2.05": "Costs Associated with Exit or Disposal Activities",
    "2.06": "Material Impairments",
    "3.01": "Notice of Delisting or Failure to Satisfy a Continued Listing Rule",
    "3.02": "Unregistered Sales of Equity Securities",
    "4.01": "Changes in Registrant's Certifying Accountant",
    "4.02": "Non-Reliance on Previously Issued Financial Statements",
    "5.01": "Changes in Control of Registrant",
    "5.02": "Departure or Election of Directors or Officers; Compensatory Arrangements",
    "5.03": "Amendments to Articles of Incorporation or Bylaws; Change in Fiscal Year",
    "5.07": "Submission of Matters to a Vote of Security Holders",
    "7.01": "Regulation FD Disclosure",
    "8.01": "Other Events",
    "9.01": "Financial Statements and Exhibits",
}


class FilingsService:
    """The filing tools' logic over one `SecClient`."""

    def __init__(self, client: SecClient) -> None:
        self.client = client

    @classmethod
    def from_env(cls, *, cache: TTLCache | None = None) -> FilingsService:
        return cls(SecClient(FilingsConfig.from_env(), cache=cache))

    # reported figures

    async def reported_figures(
        self,
        ticker: str,
        concept: str,
        *,
        fiscal_year: int | None = None,
        fiscal_period: FiscalPeriod | None = None,
        frame: str | None = None,
        frequency: Frequency = "annual",
        limit: int = 4,
    ) -> ReportedFigures:
        concepts = resolve_concept(concept)
        company = await find_company(self.client, ticker)
        path = f"/api/xbrl/companyfacts/CIK{company.cik10}.json"
        try:
            payload = await self.client.data_json(path, ttl_s=self.client.config.facts_ttl_s)
        except FilingNotFound:
            raise await self._no_facts(company) from None
        if not isinstance(payload, dict):
            raise FilingsUpstreamError("The SEC's XBRL company facts are not in the expected shape.")
        query = PeriodQuery(
            fiscal_year=fiscal_year,
            fiscal_period=fiscal_period,
            frame=frame.upper() if frame else None,
            frequency=frequency,
            limit=max(1, min(limit, MAX_FIGURES)),
        )
        try:
            figures, used = reported_figures(
                payload, concepts, query, lambda accn: archive_url(self.client, company, accn)
            )
        except NoFilingData as exc:
            raise NoFilingData(f"{company.name} ({company.ticker}): {exc.message}") from None
        return ReportedFigures(
            ticker=company.ticker,
            cik=company.cik10,
            company=str(payload.get("entityName") or company.name),
            as_of=max(f.newest_filed for f in figures),
            url=f"{self.client.config.data_url}{path}",
            concept_asked=concept,
            concepts_used=used,
            figures=figures,
        )

    async def _no_facts(self, company: Company) -> NoFilingData:
        forms = {row.form for row in _recent(await submissions(self.client, company), company, self.client)}
        foreign = sorted(forms.intersection(_FOREIGN_ANNUAL_FORMS))
        if foreign:
            return NoFilingData(
                f"The SEC holds no XBRL figures for {company.name} ({company.ticker}), a foreign private issuer "
                f"filing {foreign[0]}: read its annual report instead."
            )
        return NoFilingData(f"The SEC holds no XBRL figures for {company.name} ({company.ticker}).")

    # filings

    async def filings(self, ticker: str, forms: list[str] | None = None, *, limit: int = DEFAULT_FILINGS) -> FilingList:
        company = await find_company(self.client, ticker)
        wanted = [form.strip().upper() for form in forms or [] if form.strip()]
        listed = [
            f
            for f in _recent(await submissions(self.client, company), company, self.client)
            if _is_form(f.form, wanted)
        ]
        listed = listed[: max(1, min(limit, MAX_FILINGS))]
        return FilingList(
            ticker=company.ticker,
            cik=company.cik10,
            company=company.name,
            as_of=listed[0].filed if listed else None,
            url=self.client.www_url(f"/cgi-bin/browse-edgar?action=getcompany&CIK={company.cik10}"),
            forms=wanted,
            filings=listed,
        )

    # a section's text

    async def filing_section(
        self,
        ticker: str,
        section: str,
        *,
        form: str | None = None,
        accession: str | None = None,
        offset: int = 0,
        max_chars: int = DEFAULT_SECTION_CHARS,
    ) -> FilingSection:
        section = section.strip().lower()
        form = (form or ("8-K" if EIGHT_K_ITEM.match(section) else "10-K")).strip().upper()
        check_section(section, form)
        if offset < 0:
            raise FilingInvalidArgument("The offset cannot be negative.")
        company = await find_company(self.client, ticker)
        filing = self._pick(
            _recent(await submissions(self.client, company), company, self.client), form, section, accession
        )
        text = await self.client.document(filing.url, ttl_s=self.client.config.document_ttl_s, transform=document_text)
        found = find_section(text, section)
        whole, note = found.text, None
        exhibits: list[FilingExhibit] = []
        if EIGHT_K_ITEM.match(section):
            whole, exhibits, note = await self._with_exhibits(company, filing, section, found.text, text)
        size = max(500, min(max_chars, MAX_SECTION_CHARS))
        return FilingSection(
            ticker=company.ticker,
            cik=company.cik10,
            company=company.name,
            as_of=filing.filed,
            url=filing.url,
            form=filing.form,
            filed=filing.filed,
            report_date=filing.report_date,
            accession=filing.accession,
            section=section,
            heading=found.heading,
            text=whole[offset : offset + size],
            offset=offset,
            total_chars=len(whole),
            truncated=offset + size < len(whole),
            exhibits=exhibits,
            exhibit_note=note,
        )

    async def _with_exhibits(
        self, company: Company, filing: Filing, item: str, item_text: str, document: str
    ) -> tuple[str, list[FilingExhibit], str | None]:
        """The item's text followed by the text of each exhibit it refers to, each after a line naming it
        with its URL; the exhibits; and why one is missing. Finding or reading an exhibit never fails the
        call: the item's text is still the answer."""
        numbers, any_99 = exhibits_to_read(item, item_text)
        if not numbers and not any_99:
            return item_text, [], None
        asked = " and ".join(f"Exhibit {n}" for n in numbers) or "The exhibit"
        try:
            documents = await self._exhibit_documents(company, filing)
        except FilingError as exc:
            return item_text, [], f"{asked} is not included: the filing's index page could not be read ({exc.code})."
        if numbers:
            picked = [n for n in numbers if n in documents]
        else:
            picked = [n for n in documents if n.split(".")[0] in READ_EXHIBIT_SERIES]
        notes = [
            f"The filing's index lists no document for Exhibit {n}, so it is not included."
            for n in numbers
            if n not in documents
        ]
        if not numbers and not picked:
            notes.append("The filing's index lists no exhibit 99 document, so none is included.")
        picked = picked[:MAX_EXHIBITS]
        urls = [archive_url(self.client, company, filing.accession, documents[n]["name"]) for n in picked]
        texts = await asyncio.gather(*(self._exhibit_text(url) for url in urls))
        listed_in_8k = exhibit_list(document)
        whole = item_text
        exhibits: list[FilingExhibit] = []
        for number, url, read in zip(picked, urls, texts, strict=True):
            if isinstance(read, FilingError) or not read:
                why = f"could not be read ({read.code})" if isinstance(read, FilingError) else "has no text"
                notes.append(f"Exhibit {number} {why}, so it is not included.")
                continue
            row = documents[number]
            description = listed_in_8k.get(number) or _informative(row["description"], number)
            named = f", {description.rstrip('.')}" if description else ""
            line = f"[Exhibit {number}{named}: {url}]"
            starts_at = len(whole) + 2
            whole = f"{whole}\n\n{line}\n{read}"
            exhibits.append(
                FilingExhibit(
                    number=number,
                    type=row["type"],
                    description=description,
                    url=url,
                    starts_at=starts_at,
                    total_chars=len(read),
                )
            )
        return whole, exhibits, " ".join(notes) or None

    async def _exhibit_documents(self, company: Company, filing: Filing) -> dict[str, dict[str, str]]:
        """The exhibits the filing's index page lists, by exhibit number (the first row of each), with the
        name of the document in the filing's folder; a `FilingError` when the page cannot be read."""
        listed = await self.client.document(
            filing.index_url,
            ttl_s=self.client.config.document_ttl_s,
            transform=filing_documents,
            max_bytes=MAX_TREE_DOCUMENT_BYTES,
        )
        folder = f"/Archives/edgar/data/{company.cik}/{filing.accession.replace('-', '')}/"
        documents: dict[str, dict[str, str]] = {}
        for row in listed:
            number, name = exhibit_number(row["type"]), document_name(row["href"], folder)
            if number is not None and name is not None:
                documents.setdefault(number, {**row, "name": name})
        return documents

    async def _exhibit_text(self, url: str) -> str | FilingError:
        try:
            return await self.client.document(url, ttl_s=self.client.config.document_ttl_s, transform=document_text)
        except FilingError as exc:
            return exc

    @staticmethod
    def _pick(filings: list[Filing], form: str, section: str, accession: str | None) -> Filing:
        if accession is not None:
            for filing in filings:
                if filing.accession == accession.strip():
                    return filing
            raise FilingNotFound(f"The company's recent filings have no accession number {accession[:25]}.")
        for filing in filings:
            if _is_form(filing.form, [form]) and (
                not EIGHT_K_ITEM.match(section) or any(item.number == section for item in filing.items)
            ):
                return filing
        what = f"an 8-K with item {section}" if EIGHT_K_ITEM.match(section) else f"a {form}"
        raise NoFilingData(f"The company's recent filings include no {what}.")

    # insider transactions

    async def insider_transactions(self, ticker: str, *, filings: int = DEFAULT_FORM4_FILINGS) -> InsiderTransactions:
        company = await find_company(self.client, ticker)
        form4s = [f for f in _recent(await submissions(self.client, company), company, self.client) if f.form == "4"]
        form4s = form4s[: max(1, min(filings, MAX_FORM4_FILINGS))]
        results = await asyncio.gather(*(self._form4(company, filing) for filing in form4s))
        read = [transactions for transactions in results if transactions is not None]
        return InsiderTransactions(
            ticker=company.ticker,
            cik=company.cik10,
            company=company.name,
            as_of=form4s[0].filed if form4s else None,
            url=self.client.www_url(f"/cgi-bin/browse-edgar?action=getcompany&CIK={company.cik10}&type=4"),
            filings_read=len(read),
            transactions=[t for transactions in read for t in transactions],
        )

    async def _form4(self, company: Company, filing: Filing) -> list[Any] | None:
        url = archive_url(self.client, company, filing.accession, raw_document(filing.primary_document))
        try:
            return await self.client.document(
                url,
                ttl_s=self.client.config.document_ttl_s,
                max_bytes=MAX_TREE_DOCUMENT_BYTES,
                transform=lambda xml: [
                    t.model_dump(mode="json")
                    for t in parse_form4(xml, filed=filing.filed, accession=filing.accession, url=url)
                ],
            )
        except FilingNotFound:
            return None  # listed but not served: the others still answer
        except FilingTooLarge:
            logger.warning("A Form 4 past %d bytes was not read: %s", MAX_TREE_DOCUMENT_BYTES, url)
            return None  # the others still answer; filings_read says how many did


def _informative(description: str, number: str) -> str | None:
    """The index page's description of an exhibit, unless it only repeats its type ("EX-99.1", "EXHIBIT 99.1")."""
    plain = re.sub(r"[^0-9a-z.]", "", description.lower())
    return None if plain in ("", number, f"ex{number}", f"exhibit{number}") else description


def _is_form(form: str, wanted: list[str]) -> bool:
    """`form` is one of `wanted`, its amendments (10-K/A for 10-K) included; no `wanted`: every form."""
    return not wanted or any(form == w or form == f"{w}/A" for w in wanted)


def _recent(payload: dict[str, Any], company: Company, client: SecClient) -> list[Filing]:
    """The submissions file's recent filings (its last thousand, or its last year), newest first."""
    try:
        recent = payload["filings"]["recent"]
        rows = zip(
            recent["accessionNumber"],
            recent["filingDate"],
            recent["reportDate"],
            recent["form"],
            recent["primaryDocument"],
            recent.get("primaryDocDescription") or [None] * len(recent["form"]),
            recent.get("items") or [""] * len(recent["form"]),
            strict=True,
        )
        filings = [
            Filing(
                form=form,
                filed=date.fromisoformat(filed),
                report_date=date.fromisoformat(reported) if reported else None,
                accession=accession,
                primary_document=document,
                description=description or None,
                items=[
                    FilingItem(number=number, title=EIGHT_K_ITEMS.get(number, "Other item"))
                    for number in (items or "").split(",")
                    if number.strip()
                ],
                url=archive_url(client, company, accession, document),
                index_url=archive_url(client, company, accession),
            )
            for accession, filed, reported, form, document, description, items in rows
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise FilingsUpstreamError("The SEC's submissions file is not in the expected shape.") from exc
    return sorted(filings, key=lambda f: (f.filed, f.accession), reverse=True)
