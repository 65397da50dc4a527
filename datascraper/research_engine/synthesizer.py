"""Where the answer is written: one numbered source list, the findings citing it, one streamed model call.

Each web finding numbers its own sources from 1; before synthesis they are merged with the market data
pages into one list, deduplicated by URL, and each finding's `[n]` markers are renumbered into it. The
model then cites that list, and `CitationGuard` checks every marker as the text streams: a marker naming
no source is dropped before it reaches the user, and counted. Figures computed in code from the market
data (`facts`) follow the findings, citing the same numbers (a filing's, where the filing bears an input
out), then the contradictions between findings the gap detector left unresolved and those between Yahoo
and the filings (`cross_check`), for the answer to present rather than settle silently. Figures as filed
with the SEC come first in a finding, each citing its filing. The source list
shows each web source's publisher and publication day where known.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from datetime import date

from datascraper import prompts
from datascraper.errors import ResearchError
from datascraper.filings.schemas import (
    FilingList,
    FilingSection,
    InsiderTransactions,
    ReportedFigure,
    ReportedFigures,
)
from datascraper.formatting import fmt, plain_number
from datascraper.market_data.finding_schemas import MarketDataFinding, ToolResult
from datascraper.market_data.schemas import MarketDataResult
from datascraper.models_config import ResearchConfig
from datascraper.research_engine.cross_check import cite_filings, filing_contradictions
from datascraper.research_engine.data.filings import FilingFinding, cited_lines, figure_sources, filing_sources
from datascraper.research_engine.facts import compute_facts, shown
from datascraper.research_engine.periods.as_of import as_of_text
from datascraper.research_engine.state import Finding
from datascraper.schemas import ChatTurn, DeltaEvent, Fact, Source, SourceKind, UsageLedger, is_filing_data
from datascraper.sources import clean_url
from datascraper.stream_rewriter import INCOMPLETE, StreamRewriter
from datascraper.trace_schemas import Contradiction
from datascraper.web_search import WebSearchStream

# The verbatim payload of one market data result in the prompt; statements and a month of bars fit.
MARKET_DATA_PAYLOAD_CHARS = 8_000
# A filing's passage in the prompt: the research adapter keeps the paragraphs that bear on the question.
FILING_TEXT_CHARS = 10_000
_MARKER = re.compile(r"\[(\d+)\]")


# --- one source list ------------------------------------------------------------------------------------


class SourceBook:
    """The run's numbered sources in order of first use: a web page once per URL (tracking parameters
    ignored); a tool's result once per URL and title, since one Yahoo page serves a company's annual and
    quarterly statements alike."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str], Source] = {}

    def add(self, title: str, url: str, kind: SourceKind, as_of: str | None = None) -> int:
        return self._register(Source(n=0, title=title, url=url, kind=kind, as_of=as_of))

    def _register(self, cited: Source) -> int:
        """The number of `cited`'s page, registering a copy of it (publisher and date kept) if new."""
        url = clean_url(cited.url)
        key = (url, "" if cited.kind == "web" else cited.title)
        source = self._by_key.get(key)
        if source is None:
            source = self._by_key[key] = cited.model_copy(update={"n": len(self._by_key) + 1, "url": url})
        return source.n

    def add_source(self, source: Source) -> int:
        """A source as it is (a filing's form, period and filing date kept)."""
        return self._register(source)

    def add_market_data(self, result: ToolResult, data: MarketDataResult) -> int:
        """A tool result (`data`, its typed payload) as a source, as of the time its figures describe."""
        return self.add(result.title, result.url, "market_data", as_of_text(data))

    def renumber(self, text: str, sources: Sequence[Source]) -> str:
        """`text` citing `sources` by their own numbers, rewritten to cite this book."""
        numbers = {source.n: self._register(source) for source in sources}
        return _MARKER.sub(lambda m: f"[{numbers[int(m[1])]}]" if int(m[1]) in numbers else "", text)

    @property
    def sources(self) -> list[Source]:
        return list(self._by_key.values())


def render_findings(findings: Sequence[Finding], book: SourceBook, facts: Sequence[Fact] = ()) -> str:
    """The findings in plan order, then the figures computed from their market data, citing `book`;
    registers their sources as it goes."""
    blocks = [_render_finding(finding, book) for finding in _in_plan_order(findings)]
    if facts:
        blocks.append(render_facts(facts, book))
    return "\n\n".join(blocks)


def facts_of(findings: Sequence[Finding]) -> list[Fact]:
    """The figures computed from the market data the findings answered with, in plan order."""
    answered = [f for f in _in_plan_order(findings) if f.status == "answered"]
    calendars = {symbol: calendar for f in answered for symbol, calendar in f.fiscal_calendars.items()}
    facts = compute_facts([market for f in answered for market in _statements_of(f)], calendars)
    cite_filings(facts, answered)
    return facts


def _statements_of(finding: Finding) -> list[MarketDataFinding]:
    """A finding's market data, and its filed figures for the tickers Yahoo had no statement for."""
    found = [finding.market_data] if finding.market_data is not None else []
    data = finding.step.data
    if finding.filings is not None and data is not None and not is_filing_data(data):
        covered = {result.symbol for market in found for result in market.results}
        filed = finding.filings.statements(data, skip=covered)
        if filed:
            tickers = [result.symbol for result in filed]
            found.append(MarketDataFinding(tickers=tickers, data=data, question=finding.step.question, results=filed))
    return found


def render_facts(facts: Sequence[Fact], book: SourceBook) -> str:
    """Each fact with the sources of its inputs, which it numbers (`FactSource.n`) as `book` does: the
    sources of the findings rendered before, so the same numbers."""
    lines = []
    for fact in facts:
        numbers: list[int | None] = []
        derived = []
        for item in fact.inputs:
            item.source.n = book.add(item.source.title, item.source.url, "market_data")
            numbers.append(item.source.n)
            if item.derived is not None:
                earlier = item.derived.earlier_source
                earlier.n = book.add(earlier.title, earlier.url, "market_data")
                numbers.append(earlier.n)
                derived.append(
                    prompts.FACT_DERIVED_INPUT.format(line=item.line, period=item.period, formula=item.derived.formula)
                )
        cites = "".join(f"[{n}]" for n in dict.fromkeys(numbers))
        if fact.value is None:
            line = prompts.FACT_NOT_MEANINGFUL.format(id=fact.id, label=fact.label, note=fact.note, cites=cites)
        else:
            line = prompts.FACT_LINE.format(
                id=fact.id, label=fact.label, value=shown(fact), formula=fact.formula, cites=cites
            )
        lines.append(line + "".join(derived))
    return prompts.FACTS_FOR_SYNTHESIS.format(facts="\n".join(lines))


def _in_plan_order(findings: Sequence[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda finding: int(finding.step.id.removeprefix("q")))


def _render_finding(finding: Finding, book: SourceBook) -> str:
    if finding.status == "deferred":
        body = prompts.FINDING_DEFERRED
    elif finding.status == "failed":
        body = prompts.FINDING_NOT_ANSWERED.format(reason=_failure_reason(finding))
    elif finding.market_data is not None or finding.filings is not None:
        # Figures as filed first: they are the primary source of a reported figure.
        parts = [
            render_filings(finding.filings, book) if finding.filings is not None else "",
            _render_market_data(finding.market_data, book) if finding.market_data is not None else "",
        ]
        body = "\n".join(part for part in parts if part)
    else:
        body = book.renumber(finding.text, finding.sources)
    return prompts.FINDING_FOR_SYNTHESIS.format(
        id=finding.step.id, type=finding.step.type, question=finding.step.question, body=body
    )


def _failure_reason(finding: Finding) -> str:
    if finding.error == "sub_question_timeout":
        return "the research for it took too long"
    if finding.error == "deadline_exceeded":
        return "the research ran out of time before it was done"
    return f"the research for it failed ({finding.error or 'unknown error'})"


def _render_market_data(market: MarketDataFinding, book: SourceBook) -> str:
    blocks = []
    for result in market.results:
        typed = result.result()
        payload = json.dumps(result.data, separators=(",", ":"), default=str)
        if len(payload) > MARKET_DATA_PAYLOAD_CHARS:
            payload = payload[:MARKET_DATA_PAYLOAD_CHARS] + " […]"
        blocks.append(
            prompts.MARKET_DATA_RESULT.format(
                n=book.add_market_data(result, typed),
                title=result.title,
                as_of=as_of_text(typed),
                currency=typed.currency_text(),
                summary=typed.summary_text(),
                payload=payload,
            )
        )
    blocks.extend(
        f"{error.symbol or 'request'}: not available ({error.code}: {error.message})" for error in market.errors
    )
    return "\n".join(blocks)


def render_filings(filings: FilingFinding, book: SourceBook) -> str:
    """What the filings returned, each figure, passage, filing or trade citing its filing in `book`."""
    blocks = []
    for item in filings.results:
        result = item.result()
        if isinstance(result, ReportedFigures):
            blocks.append(_render_figures(result, book))
        elif isinstance(result, FilingSection):
            n = book.add_source(filing_sources(result)[0])
            shown = result.text if len(result.text) <= FILING_TEXT_CHARS else result.text[:FILING_TEXT_CHARS] + " […]"
            blocks.append(
                prompts.FILING_SECTION_RESULT.format(
                    n=n,
                    company=result.company,
                    form=result.form,
                    filed=result.filed,
                    heading=result.heading,
                    text=shown,
                )
            )
        elif isinstance(result, FilingList | InsiderTransactions):  # a line for each, citing its filing
            heading, cited = cited_lines(result)
            blocks.append("\n".join([heading, *(f"{line} [{book.add_source(source)}]" for line, source in cited)]))
    blocks.extend(
        f"SEC filings, {error.symbol or 'request'}: not available ({error.code}: {error.message})"
        for error in filings.errors
    )
    return "\n".join(blocks)


def _render_figures(result: ReportedFigures, book: SourceBook) -> str:
    lines = [
        prompts.FILED_FIGURES_HEADING.format(company=result.company, ticker=result.ticker, line=result.concept_asked)
    ]
    for figure in result.figures:
        numbers = [book.add_source(source) for source in figure_sources(result.company, figure)]
        lines.append(_figure_line(figure, numbers))
    return "\n".join(lines)


def _figure_line(figure: ReportedFigure, numbers: list[int]) -> str:
    """A filed figure's line citing its filing, or a derived quarter's citing both filings it comes from."""
    common = {
        "label": figure.label,
        "period": figure.span,
        "value": plain_number(figure.value),
        "shown": fmt(figure.value),
        "unit": figure.unit,
        "concept": figure.concept,
    }
    derivation = figure.derived_from
    if derivation is not None:
        return prompts.FILED_FIGURE_DERIVED_LINE.format(
            **common, whole=derivation.whole.cited(), n=numbers[0], earlier=derivation.earlier.cited(), m=numbers[1]
        )
    earlier = figure.earlier_value()
    restated = ""
    if earlier is not None:
        restated = f"; restated: the {earlier.form} filed {earlier.filed} reported {plain_number(earlier.value)}"
    return prompts.FILED_FIGURE_LINE.format(
        **common,
        frame=figure.frame or "none",
        form=figure.form,
        filed=figure.filed,
        n=numbers[0],
        restated=restated,
    )


def render_source_list(sources: Sequence[Source]) -> str:
    return "\n".join(f"[{s.n}] {s.title} — {s.url} ({_source_kind(s)})" for s in sources)


def _source_kind(source: Source) -> str:
    details = [source.kind.replace("_", " ")]
    if source.domain_type is not None:
        details.append(source.domain_type.replace("_", " "))
    if source.published is not None:
        details.append(f"published {source.published.isoformat()}")
    if source.as_of:
        details.append(f"as of {source.as_of}")
    return ", ".join(details)


def render_contradictions(contradictions: Sequence[Contradiction]) -> str:
    """The unresolved contradictions for the prompt, or nothing when there are none."""
    if not contradictions:
        return ""
    lines = [
        prompts.CONTRADICTION_LINE.format(
            finding_a=c.finding_a, claim_a=c.claim_a, finding_b=c.finding_b, claim_b=c.claim_b, severity=c.severity
        )
        for c in contradictions
    ]
    return prompts.CONTRADICTIONS_FOR_SYNTHESIS.format(contradictions="\n".join(lines))


# --- the citation check, while streaming ------------------------------------------------------------------

_GROUP = re.compile(r"\[\s*(\d{1,4}(?:\s*,\s*\d{1,4})*)\s*\]")
_PARTIAL_GROUP = re.compile(r"\[[\d,\s]*")


class CitationGuard(StreamRewriter):
    """Passes streamed text through, checking each `[n]` or `[n, m]` marker against the source numbers.

    A marker that resolves is kept (a group is written as `[n][m]`); one that does not is dropped and
    counted. Only text that could still be a marker is held back, at most a few characters.
    """

    opener = "["
    max_held = 40

    def __init__(self, valid: set[int]) -> None:
        super().__init__()
        self.valid = valid
        self.resolved = 0
        self.dropped = 0

    def scan(self, text: str) -> tuple[str, int] | str | None:
        group = _GROUP.match(text)
        if group is not None:
            return self._check(group[1]), group.end()
        if _PARTIAL_GROUP.fullmatch(text) is not None:
            return INCOMPLETE
        return None

    def _check(self, group: str) -> str:
        kept = []
        for number in (int(part) for part in group.split(",")):
            if number in self.valid:
                self.resolved += 1
                kept.append(f"[{number}]")
            else:
                self.dropped += 1
        return "".join(kept)


# --- the streamed answer ----------------------------------------------------------------------------------


class Synthesis:
    """The final answer from `findings`, iterated as `DeltaEvent`s; `sources` and `facts` (the figures
    computed from the market data, which the answer may cite) are known before it starts. Unresolved
    `contradictions` between findings are listed for the model to present, not to settle silently.

    On failure part way the held-back text is yielded first, then the named error is raised, so the
    caller can store the partial answer with its sources.
    """

    def __init__(
        self,
        question: str,
        findings: Sequence[Finding],
        *,
        history: Sequence[ChatTurn],
        today: date,
        timezone: str | None,
        config: ResearchConfig,
        ledger: UsageLedger,
        contradictions: Sequence[Contradiction] = (),
    ) -> None:
        self._book = SourceBook()
        self.facts = facts_of(findings)
        # Yahoo's figures that the filings contradict are listed with the gap detector's.
        contradictions = [*contradictions, *filing_contradictions(findings)]
        findings_text = render_findings(findings, self._book, self.facts)
        self.sources = self._book.sources
        self.prompt = prompts.SYNTHESIS_INPUT.format(
            time_context=prompts.time_context(today, timezone),
            question=question,
            findings=findings_text,
            contradictions=render_contradictions(contradictions),
            sources=render_source_list(self.sources) or "(none: no finding produced a source)",
        )
        self.guard = CitationGuard(valid={source.n for source in self.sources})
        self._stream = WebSearchStream(
            self.prompt,
            history=history,
            instructions=prompts.SYNTHESIS_INSTRUCTIONS,
            model=config.research_model,
            ledger=ledger,
            # Links the model writes itself become numbers past the list, which the guard drops.
            source_offset=len(self.sources),
            today=today,
            web_search=False,
        )
        self._text: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self._text)

    async def __aiter__(self) -> AsyncGenerator[DeltaEvent, None]:
        try:
            async with aclosing(self._stream.__aiter__()) as deltas:
                async for delta in deltas:
                    shown = self.guard.feed(delta.text)
                    if shown:
                        yield self._show(shown)
        except ResearchError:
            held = self.guard.flush()
            if held:
                yield self._show(held)
            raise
        held = self.guard.flush()
        if held:
            yield self._show(held)

    def _show(self, text: str) -> DeltaEvent:
        self._text.append(text)
        return DeltaEvent(text=text)
