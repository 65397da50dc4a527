"""What the filing tools return: typed, each with its as-of date and the SEC page to cite.

`as_of` is the filing date of the newest filing a result draws on: figures and text are as reported then.
URLs are on the configured SEC host (`SEC_WWW_URL`), so a test against the fake SEC cites the fake.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from datascraper.formatting import plain_number

FiscalPeriod = Literal["FY", "Q1", "Q2", "Q3", "Q4"]
AcquiredDisposed = Literal["A", "D"]


class FilingResult(BaseModel):
    """What every filing tool result carries: the company and where the data came from."""

    model_config = ConfigDict(allow_inf_nan=False)

    ticker: str
    cik: str = Field(description="The SEC's Central Index Key, 10 digits.")
    company: str
    as_of: date | None = Field(description="Filing date of the newest filing this result draws on.")
    url: str = Field(description="The SEC page or API document this result came from.")

    def summary_text(self) -> str:
        raise NotImplementedError


# --- reported figures (XBRL company facts) ------------------------------------------------------------


class FigureVersion(BaseModel):
    """One filing's report of a period's figure. A period reported again in later filings (as a
    comparative, or restated) has several versions."""

    model_config = ConfigDict(allow_inf_nan=False)

    value: float
    form: str
    filed: date
    accession: str
    filing_url: str
    filing_period: str = Field(description="The filing's own fiscal period, e.g. FY2024 for a 10-K; Q1 FY2025.")


class FigureInput(BaseModel):
    """A filed figure that a derived one is computed from, as its latest filing reported it."""

    model_config = ConfigDict(allow_inf_nan=False)

    label: str = Field(description="Its fiscal label: FY2025, nine months to Q3 FY2025, Q1 FY2025.")
    value: float
    start: date
    end: date
    form: str
    filed: date
    accession: str
    filing_url: str
    filing_period: str = Field(description="The fiscal period of the filing it comes from.")
    restated: bool = Field(description="True when filings report different values for its period.")

    def cited(self) -> str:
        """ "FY2025 416,161,000,000 (10-K filed 2025-10-31)"."""
        restated = ", as restated" if self.restated else ""
        return f"{self.label} {plain_number(self.value)} ({self.form} filed {self.filed}{restated})"


class Derivation(BaseModel):
    """How a quarter no filing reported as such comes from two figures that were: the year, or the year to
    date, less its earlier months (Q4 = FY - nine months; Q3 = nine months - six; Q2 = six months - Q1)."""

    formula: str = Field(description="E.g. 'FY2025 - nine months to Q3 FY2025'.")
    whole: FigureInput = Field(description="The fiscal year, or the year to date, that ends with the quarter.")
    earlier: FigureInput = Field(description="The same year's months before the quarter.")

    def text(self) -> str:
        """ "FY2025 416,161,000,000 (10-K filed 2025-10-31) less nine months to Q3 FY2025 ... (10-Q filed ...)"."""
        return f"{self.whole.cited()} less {self.earlier.cited()}"


class ReportedFigure(BaseModel):
    """A figure as the company reported it, from its latest filing for the period, every version kept; or a
    quarter derived from two filed figures (`derived_from`), when the filings report it only within a year
    or a year to date."""

    model_config = ConfigDict(allow_inf_nan=False)

    concept: str = Field(description="The XBRL concept used, e.g. us-gaap:Revenues.")
    value: float
    unit: str = Field(description="XBRL unit, e.g. USD, USD/shares, shares.")
    fiscal_year: int = Field(description="The company's fiscal year of the period (the filing's fy).")
    fiscal_period: FiscalPeriod
    label: str = Field(description="The fiscal label, e.g. FY2024 or Q3 FY2025.")
    start: date | None = Field(description="First day of the period; None for a balance (an instant).")
    end: date
    frame: str | None = Field(description="The SEC's calendar frame for the period, e.g. CY2024Q3, CY2023.")
    form: str
    filed: date
    accession: str
    filing_url: str
    filing_period: str = Field(
        description="The fiscal period of the filing it comes from (a comparative's filing reports a later period)."
    )
    restated: bool = Field(description="True when filings report different values for this period.")
    versions: list[FigureVersion] = Field(description="Every filing that reported this period, newest first.")
    derived_from: Derivation | None = Field(
        default=None,
        description=(
            "Set when no filing reported this quarter as such and it is computed from two figures that were "
            "(`form`, `filed`, `accession` and `filing_url` are then those of the whole period's filing, and "
            "`versions` is empty); None for a filed figure."
        ),
    )

    @property
    def span(self) -> str:
        """ "2023-10-01 to 2024-09-28", or "at 2024-09-28" for a balance."""
        return f"{self.start} to {self.end}" if self.start else f"at {self.end}"

    @property
    def newest_filed(self) -> date:
        """The filing date of the newest filing the figure draws on (a derived one draws on two)."""
        return self.filed if self.derived_from is None else max(self.filed, self.derived_from.earlier.filed)

    def earlier_value(self) -> FigureVersion | None:
        """The newest earlier filing that reported another value for this period (a restatement)."""
        return next((v for v in self.versions[1:] if v.value != self.value), None)


class ReportedFigures(FilingResult):
    concept_asked: str
    concepts_used: list[str]
    figures: list[ReportedFigure] = Field(description="Newest period first.")

    def summary_text(self) -> str:
        lines = [f"{self.company} ({self.ticker}), {self.concept_asked} as reported to the SEC:"]
        for figure in self.figures:
            earlier = figure.earlier_value()
            restated = (
                f"; restated: {plain_number(earlier.value)} in the {earlier.form} filed {earlier.filed}"
                if earlier
                else ""
            )
            if figure.derived_from is not None:
                origin = f"derived, not filed: {figure.derived_from.text()}"
            else:
                origin = f"{figure.form} filed {figure.filed}, accession {figure.accession}{restated}"
            lines.append(
                f"{figure.label} ({figure.span}; calendar {figure.frame or 'frame not assigned'}): "
                f"{plain_number(figure.value)} {figure.unit} [{figure.concept}], {origin}"
            )
        return "\n".join(lines)


# --- filings -------------------------------------------------------------------------------------------


class FilingItem(BaseModel):
    """An item of an 8-K (e.g. 2.02 Results of Operations and Financial Condition)."""

    number: str
    title: str


class Filing(BaseModel):
    form: str
    filed: date
    report_date: date | None = Field(description="The period the filing reports on, when it has one.")
    accession: str
    primary_document: str
    description: str | None = None
    items: list[FilingItem] = Field(default_factory=list, description="8-K items; empty for other forms.")
    url: str = Field(description="The filing's primary document.")
    index_url: str = Field(description="The filing's index page on EDGAR.")


class FilingList(FilingResult):
    forms: list[str] = Field(description="The forms asked for; empty: every form.")
    filings: list[Filing] = Field(description="Newest first.")

    def summary_text(self) -> str:
        lines = [f"{self.company} ({self.ticker}) filings with the SEC, newest first:"]
        for filing in self.filings:
            items = f", items {', '.join(f'{i.number} {i.title}' for i in filing.items)}" if filing.items else ""
            if filing.report_date is None:
                period = ""
            elif filing.form.startswith("8-K"):
                period = f" on an event of {filing.report_date}"
            else:
                period = f" for the period ending {filing.report_date}"
            lines.append(f"{filing.form} filed {filing.filed}{period}{items}: {filing.url}")
        return "\n".join(lines)


# --- a section's text ---------------------------------------------------------------------------------


class FilingExhibit(BaseModel):
    """An exhibit of an 8-K read after the item that names it (the earnings release of item 2.02, say)."""

    number: str = Field(description="The exhibit's number, e.g. 99.1.")
    type: str = Field(description="Its document type on the filing's index page, e.g. EX-99.1.")
    description: str | None = Field(description="What the filing says it is, e.g. 'Press release issued ...'.")
    url: str = Field(description="The exhibit's own document, to cite for what it says.")
    starts_at: int = Field(description="Where its heading line starts in the whole text (an offset to ask for).")
    total_chars: int = Field(description="Length of the exhibit's text.")


class FilingSection(FilingResult):
    form: str
    filed: date
    report_date: date | None
    accession: str
    section: str = Field(description="What was asked: risk_factors, mdna, legal_proceedings, ... or an 8-K item.")
    heading: str = Field(description="The heading found in the document, e.g. 'Item 1A. Risk Factors'.")
    text: str
    offset: int = Field(description="Characters of the whole text skipped before `text`.")
    total_chars: int = Field(description="Length of the whole text: the section's, then any exhibits'.")
    truncated: bool = Field(description="True when the text goes on past `text`: ask again with a later offset.")
    exhibits: list[FilingExhibit] = Field(
        default_factory=list,
        description=(
            "Exhibits of an 8-K appended to the item's text, each after a line '[Exhibit 99.1 ...: <url>]' "
            "(the item's own text comes first; `url` stays the 8-K's document)."
        ),
    )
    exhibit_note: str | None = Field(
        default=None, description="Why an exhibit the 8-K item refers to is not in the text, when one is not."
    )

    def summary_text(self) -> str:
        more = (
            f" [continues: {self.total_chars - self.offset - len(self.text):,} more characters]"
            if self.truncated
            else ""
        )
        notes = "".join(
            f"\n[Exhibit {e.number} ({e.url}) starts at character {e.starts_at:,}: ask with that offset]"
            for e in self.exhibits
            if e.starts_at >= self.offset + len(self.text)
        )
        if self.exhibit_note:
            notes += f"\n[{self.exhibit_note}]"
        return (
            f"{self.company} ({self.ticker}), {self.form} filed {self.filed}, {self.heading} ({self.url}):\n"
            f"{self.text}{more}{notes}"
        )


# --- insider transactions (Form 4) --------------------------------------------------------------------


class InsiderTransaction(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)

    owner: str
    role: str = Field(description="Director, officer (with title), 10% owner, or other, as the filing states.")
    transaction_date: date
    security: str
    derivative: bool = Field(description="An option, unit or other derivative (the Form 4's derivative table).")
    code: str = Field(description="Form 4 transaction code: P purchase, S sale, A grant, M option exercise, ...")
    code_meaning: str
    shares: float
    price: float | None = Field(description="Per share; None when the filing gives none (a grant, a gift).")
    acquired_disposed: AcquiredDisposed
    owned_after: float | None
    ownership: Literal["direct", "indirect"]
    filed: date
    accession: str
    url: str = Field(description="The Form 4 XML this transaction was read from.")


class InsiderTransactions(FilingResult):
    filings_read: int
    transactions: list[InsiderTransaction] = Field(description="Newest filing first, in filing order within one.")

    def summary_text(self) -> str:
        lines = [f"{self.company} ({self.ticker}) insider transactions from {self.filings_read} Form 4 filings:"]
        for t in self.transactions:
            price = f" at {t.price:,.2f}" if t.price is not None else ""
            verb = "acquired" if t.acquired_disposed == "A" else "disposed of"
            lines.append(
                f"{t.transaction_date}: {t.owner}, {t.role}, {verb} {plain_number(t.shares)} "
                f"{t.security if t.derivative else 'shares'}{price} "
                f"({t.code}: {t.code_meaning}); {plain_number(t.owned_after) if t.owned_after is not None else '?'} "
                f"held after; Form 4 filed {t.filed}"
            )
        return "\n".join(lines)
