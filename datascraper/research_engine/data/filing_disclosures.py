"""A company's own disclosures for research: which filing and section a qualitative sub-question's words
name, the section read on past one page, and the paragraphs that bear on the question kept, in order.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any, Literal, get_args

from datascraper.filings.service import MAX_SECTION_CHARS
from datascraper.filings.tools import FilingToolName
from datascraper.market_data.errors import MarketDataError
from datascraper.research_engine.data.filings import (
    FilingFinding,
    FilingToolResult,
    call_filing_tool,
    ticker_symbols,
)
from datascraper.research_engine.data.market_data_client import get_market_data_client
from datascraper.schemas import FilingDataKind

# A section is read to this length, in pages of the tool's largest (`service.MAX_SECTION_CHARS`): a large
# company's risk factors can run well past one page. The answer is given the paragraphs that bear most on the
# question, in their order.
SECTION_READ_CHARS = 120_000
SECTION_KEPT_CHARS = 8_000

SectionName = Literal["risk_factors", "mdna", "legal_proceedings", "market_risk", "business", "segment_note"]
SECTION_NAMES: frozenset[str] = frozenset(get_args(SectionName))
EIGHT_K_ITEM = re.compile(r"^\d\.\d\d$")
# What a question's words say it is about, first match wins; otherwise management's discussion.
_SECTION_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(earnings|press) release|\b8-k\b", re.IGNORECASE), "2.02"),
    (re.compile(r"\brisk", re.IGNORECASE), "risk_factors"),
    (re.compile(r"\blegal|\blawsuit|\blitigation|\bproceeding|\bregulatory (action|investigation)", re.IGNORECASE),
     "legal_proceedings"),
    (re.compile(r"\bsegment", re.IGNORECASE), "segment_note"),
    (re.compile(r"\binterest[- ]rate|\bcurrency|\bforeign exchange|\bhedg|\bmarket risk", re.IGNORECASE),
     "market_risk"),
    (re.compile(r"\bbusiness model|\bcompetition|\bcompetitors|\bemployees|\bproducts and services", re.IGNORECASE),
     "business"),
)  # fmt: skip
_QUARTERLY = re.compile(r"\b10-q\b|\bquarterly report\b|\blatest quarter\b|\bthis quarter\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z][a-z0-9&'-]{3,}")
_STOPWORDS = frozenset(
    "what which when where does have that this with from about their they them said says company company's "
    "filing filings report reported annual quarterly latest most main according disclose disclosed discuss "
    "describe described item section".split()
)


_INSIDER_WORDS = re.compile(
    r"\binsiders?\b|\bform 4\b"
    r"|\b(directors?|officers?|executives?|ceo|cfo)\b.{0,40}\b(sold|bought|sell|buy|sales|purchases)\b",
    re.IGNORECASE,
)
_FILING_WORDS = re.compile(
    r"\b10-k\b|\b10-q\b|\b8-k\b|\bannual report\b|\bquarterly report\b|\brisk factors\b|\bdisclos"
    r"|\bfil(ed|ing|ings) with the sec\b|\bsec filings?\b|\bmanagement's discussion\b|\bmd&a\b",
    re.IGNORECASE,
)


def disclosure_data(question: str) -> FilingDataKind | None:
    """What a question's words ask of a company's filings when the analyzer gave no data hint: insider
    trades, or its filings' text; None when they name neither."""
    if _INSIDER_WORDS.search(question):
        return "insider_transactions"
    if _FILING_WORDS.search(question):
        return "filing_text"
    return None


def section_for(question: str, asked: str | None = None) -> tuple[str, str]:
    """The section (or 8-K item) and form a disclosure question reads: the analyzer's `asked` section when
    it named a known one, else the question's words."""
    section = (asked or "").strip().lower()
    if section not in SECTION_NAMES and not EIGHT_K_ITEM.match(section):
        section = next((name for pattern, name in _SECTION_WORDS if pattern.search(question)), "mdna")
    if EIGHT_K_ITEM.match(section):
        return section, "8-K"
    quarterly = _QUARTERLY.search(question) is not None and section not in ("business",)
    return section, "10-Q" if quarterly else "10-K"


async def fetch_disclosures(
    tickers: list[str],
    data: FilingDataKind,
    *,
    question: str,
    section: str | None = None,
    timeout_s: float | None = None,
) -> FilingFinding:
    """The filing's own words for `question`: a section's most relevant paragraphs, the company's filings
    (8-K items included), or its insiders' trades, for each ticker."""
    symbols = ticker_symbols(tickers)
    finding = FilingFinding(tickers=symbols)
    if data == "filing_text":
        name, form = section_for(question, section)
        arguments: dict[str, Any] = {"section": name, "form": form, "max_chars": MAX_SECTION_CHARS}
        tool: FilingToolName = "get_filing_section"
    elif data == "insider_transactions":
        arguments, tool = {}, "get_insider_transactions"
    else:
        arguments, tool = {"forms": _forms_named(question), "limit": 10}, "get_filings"
    await asyncio.gather(*(call_filing_tool(finding, tool, symbol, arguments, timeout_s) for symbol in symbols))
    if data == "filing_text":
        finding.results = [
            relevant_paragraphs(await _read_on(item, arguments, timeout_s), question) for item in finding.results
        ]
    return finding


async def _read_on(item: FilingToolResult, arguments: dict[str, Any], timeout_s: float | None) -> FilingToolResult:
    """A long section read on, a page at a time from the same filing, to `SECTION_READ_CHARS` in all (the
    filing's text is cached by the first page, so the SEC is not asked again). A page that fails ends the
    reading with what was read."""
    data = dict(item.data)
    client = get_market_data_client()
    while data["truncated"] and len(data["text"]) < SECTION_READ_CHARS:
        page = {**arguments, "accession": data["accession"], "offset": data["offset"] + len(data["text"])}
        try:
            outcome = await client.call_tool("get_filing_section", {"ticker": item.symbol, **page}, timeout_s=timeout_s)
        except MarketDataError:
            break
        if outcome.is_error or outcome.structured_content is None or not outcome.structured_content["text"]:
            break
        data["text"] += outcome.structured_content["text"]
        data["truncated"] = outcome.structured_content["truncated"]
    return item.model_copy(update={"data": data})


def _forms_named(question: str) -> list[str] | None:
    forms = [form for form in ("10-K", "10-Q", "8-K", "DEF 14A", "13F") if form.lower() in question.lower()]
    if re.search(r"\bproxy\b", question, re.IGNORECASE):
        forms.append("DEF 14A")
    return forms or None


def relevant_paragraphs(item: FilingToolResult, question: str) -> FilingToolResult:
    """A long section cut to its paragraphs that share most words with the question, in document order,
    each gap marked; a short one whole."""
    text: str = item.data["text"]
    if len(text) <= SECTION_KEPT_CHARS:
        return item
    words = {word for word in _WORD.findall(question.lower()) if word not in _STOPWORDS}
    paragraphs = [p for p in text.split("\n") if p.strip()]
    scored = sorted(
        range(len(paragraphs)),
        key=lambda i: (-sum(1 for word in words if word in paragraphs[i].lower()), i),
    )
    kept: set[int] = {0}  # the section's opening says what it covers
    size = len(paragraphs[0])
    for i in scored:
        if size + len(paragraphs[i]) > SECTION_KEPT_CHARS:
            continue
        kept.add(i)
        size += len(paragraphs[i]) + 1
    parts: list[str] = []
    for i in sorted(kept):
        if parts and i - 1 not in kept:
            parts.append("[…]")
        parts.append(paragraphs[i])
    data = {**item.data, "text": "\n".join(parts), "truncated": True}
    data["excerpt_of"] = f"paragraphs of the section that bear on the question, {size:,} of {len(text):,} characters"
    return item.model_copy(update={"data": data})
