"""A named section of a filing's primary document, as clean text.

Filings are HTML (inline XBRL since 2019), laid out with tables and styled divs rather than semantic
headings, so the document is first flattened to lines of text, then a section is found by its heading
("Item 1A. Risk Factors", on one line or split over two; "Note 13 – Segment Information") and runs to the
first heading of what follows it (`_ITEM_ENDS`, `_NOTE_ENDS`). The table of contents names every Item too;
its entries are a line long, so of the places a heading appears the one opening the longest span is the
section itself. A page's running head or footer left at a section's end (the next page's) is cut.

lxml rather than trafilatura: trafilatura keeps an article's main text and drops what looks like boilerplate,
which in a 10-K includes tables and short paragraphs of the very sections asked for.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import lxml.html
from lxml import etree

from datascraper.filings.errors import FilingInvalidArgument, FilingsUpstreamError, NoFilingData

# Sections by name: the heading's title, and the forms whose Items carry it.
SECTION_TITLES: dict[str, str] = {
    "business": r"business",
    "risk_factors": r"risk\s+factors",
    "legal_proceedings": r"legal\s+proceedings",
    "mdna": r"management.{0,3}s\s+discussion\s+and\s+analysis\b.*",
    "market_risk": r"quantitative\s+and\s+qualitative\s+disclosures?\s+about\s+market\s+risk",
}
SECTION_FORMS: dict[str, tuple[str, ...]] = {
    "business": ("10-K",),
    "risk_factors": ("10-K", "10-Q"),
    "legal_proceedings": ("10-K", "10-Q"),
    "mdna": ("10-K", "10-Q"),
    "market_risk": ("10-K", "10-Q"),
    "segment_note": ("10-K", "10-Q"),
}
EIGHT_K_ITEM = re.compile(r"^\d\.\d\d$")

_BLOCK_TAGS = frozenset(
    (
        "p",
        "div",
        "br",
        "tr",
        "li",
        "ul",
        "ol",
        "table",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "blockquote",
        "pre",
        "hr",
        "dt",
        "dd",
        "title",
    )
)
_OPENING_BLOCK_TAGS = _BLOCK_TAGS - {"br", "hr"}
_UNSEEN_TAGS = frozenset(("script", "style", "head"))
_BATCH = 4096
_HIDDEN = re.compile(r"display\s*:\s*none", re.IGNORECASE)
_SPACES = re.compile(r"[ \t\u00a0\u2002\u2003\u2009\u200b]+")
_MAX_HEADING_CHARS = 160
_PART_PREFIX = r"(?:part\s+[iv]+\s*[,.\-\u2013\u2014]?\s*)?"
_ITEM_PREFIX = _PART_PREFIX + r"item\s+\d{1,2}[a-c]?\s*[.:\-\u2013\u2014]?\s*"
_ITEM_ONLY = re.compile(rf"^{_ITEM_PREFIX}$", re.IGNORECASE)
_ANY_ITEM = re.compile(rf"^{_PART_PREFIX}item\s+\d{{1,2}}(?:\.\d\d|[a-c])?\b", re.IGNORECASE)
_SIGNATURES = re.compile(r"^signatures?\s*$", re.IGNORECASE)
_PART = re.compile(r"^part\s+[iv]+\b[.:\s\-\u2013\u2014]*(?:[a-z ]+)?$", re.IGNORECASE)  # "PART II. OTHER INFORMATION"
_NOTE = re.compile(r"^note\s+\d{1,2}\b", re.IGNORECASE)
_AUDITOR_REPORT = re.compile(
    r"^reports?\s+of\s+independent\s+(?:registered\s+public\s+accounting\s+firm|auditors?)", re.IGNORECASE
)
_MANAGEMENT_REPORT = re.compile(r"^management.{0,3}s\s+(?:annual\s+)?report\s+on\s+internal\s+control", re.IGNORECASE)
_SCHEDULE = re.compile(r"^schedule\s+[iv]{1,4}\b", re.IGNORECASE)  # "Schedule II – Valuation and Qualifying Accounts"
_EXHIBIT_INDEX = re.compile(r"^(?:exhibit\s+index|index\s+to\s+exhibits)\b", re.IGNORECASE)
# The signatures' first sentence, for a document whose signature page has no "SIGNATURES" line.
_SIGNED = re.compile(
    r"^pursuant\s+to\s+the\s+requirements\s+of\b.{0,200}\bduly\s+caused\s+this\s+report\s+to\s+be\s+signed",
    re.IGNORECASE,
)

# Where a section ends: the first heading of what can follow it and cannot be part of it. Any section ends
# at the next Item, a new Part or the signatures. The last note of the financial statements is followed by
# no Note or Item heading but by the auditor's report (Apple), a financial statement schedule then the
# exhibit index (NVIDIA), or the signatures. The Items we serve (1, 1A, 3, 7 and 7A, and a 10-Q's) never
# hold an auditor's report or an exhibit index, so those end them too; Item 8, which holds the report
# (before the statements at some filers, after the notes at others), is not served. An 8-K's item 9.01
# holds its exhibit index.
_EIGHT_K_ENDS = (_ANY_ITEM, _PART, _SIGNATURES)
_ITEM_ENDS = (*_EIGHT_K_ENDS, _AUDITOR_REPORT, _EXHIBIT_INDEX)
_NOTE_ENDS = (_NOTE, *_ITEM_ENDS, _MANAGEMENT_REPORT, _SCHEDULE)

# A page's running head or footer: a line that recurs page after page, its page number aside ("Apple Inc. |
# 2025 Form 10-K | 48", "NVIDIA Corporation and Subsidiaries", "Table of Contents"); a line ending in a
# period (a sentence, "None.") never is one.
_RUNNING_LINE_MIN = 5
_PAGE_NUMBER_DIGITS = 3


@dataclass(frozen=True)
class Section:
    heading: str
    text: str


def document_text(html: bytes) -> str:
    """The document's visible text, one block (paragraph, table row, heading) a line.

    Read as a stream of parser events, with no tree built: a tree of a dense 30 MB inline-XBRL document
    (millions of elements) took over 500 MB, the events take a few times the text.

    Raises:
        FilingsUpstreamError: the bytes hold no HTML element.
    """
    text = _VisibleText()
    etree.fromstring(html, etree.HTMLParser(target=text))
    if not text.started:
        raise FilingsUpstreamError("The filing's document could not be read as HTML.")
    lines = (_SPACES.sub(" ", line).strip() for line in text.joined().splitlines())
    return "\n".join(line for line in lines if line)


class _VisibleText:
    """A parser target collecting the text a reader sees: nothing of script, style, head or an element
    hidden by `display: none` (inline XBRL's header of contexts and units), a line break around each block
    element, a space after each table cell."""

    def __init__(self) -> None:
        self.started = False
        self._hidden_depth = 0
        self._parts: list[str] = []
        self._chunks: list[str] = []

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.started = True
        if self._hidden_depth or tag in _UNSEEN_TAGS or _HIDDEN.search(attrib.get("style", "")):
            self._hidden_depth += 1
        elif tag in _OPENING_BLOCK_TAGS:
            self._add("\n")

    def end(self, tag: str) -> None:
        if self._hidden_depth:
            self._hidden_depth -= 1
        elif tag in _BLOCK_TAGS:
            self._add("\n")
        elif tag in ("td", "th"):
            self._add(" ")

    def data(self, data: str) -> None:
        if not self._hidden_depth:
            self._add(data)

    def close(self) -> None:
        pass

    def joined(self) -> str:
        return "".join([*self._chunks, *self._parts])

    def _add(self, part: str) -> None:
        # Millions of small strings would cost more than their text: joined in batches as they come.
        self._parts.append(part)
        if len(self._parts) >= _BATCH:
            self._chunks.append("".join(self._parts))
            self._parts.clear()


def check_section(section: str, form: str) -> None:
    """Raises FilingInvalidArgument unless `section` is one we find in `form` (an 8-K item: `2.02`)."""
    if form.startswith("8-K"):
        if not EIGHT_K_ITEM.match(section):
            raise FilingInvalidArgument("An 8-K section is an item number such as 2.02 or 5.02.")
        return
    forms = SECTION_FORMS.get(section)
    if forms is None:
        names = ", ".join(SECTION_FORMS)
        raise FilingInvalidArgument(f"Unknown section {section[:40]!r}: one of {names}, or an 8-K item such as 2.02.")
    if not any(form.startswith(f) for f in forms):
        raise FilingInvalidArgument(f"A {form} has no {section} section; it is in a {' or '.join(forms)}.")


def find_section(text: str, section: str) -> Section:
    """The section's heading and body text.

    Raises:
        NoFilingData: the document has no such heading (a 10-K incorporating it by reference, say).
    """
    if section == "segment_note":
        return find_note(text, "segment")
    lines = text.split("\n")
    if EIGHT_K_ITEM.match(section):
        starts = _headings(lines, re.compile(r"^item\s+" + re.escape(section) + r"\b", re.IGNORECASE))
        return _longest(lines, starts, _EIGHT_K_ENDS, section)
    title = SECTION_TITLES[section]
    starts = _item_headings(lines, re.compile(rf"^(?:{_ITEM_PREFIX})?{title}\s*\.?$", re.IGNORECASE))
    return _longest(lines, starts, _ITEM_ENDS, section)


def find_note(text: str, title: str) -> Section:
    """The note of the financial statements whose heading names `title` after "Note <n>", in any case:
    "segment" finds "Note 13 – Segment Information and Geographic Data".

    Raises:
        NoFilingData: no note's heading names it.
    """
    lines = text.split("\n")
    words = r"\s+".join(re.escape(word) for word in title.split())
    starts = _headings(lines, re.compile(rf"^note\s+\d{{1,2}}\b.*?\b{words}", re.IGNORECASE))
    return _longest(lines, starts, _NOTE_ENDS, f"{title} note")


def _longest(
    lines: list[str], starts: Iterable[tuple[int, int]], ends: tuple[re.Pattern[str], ...], name: str
) -> Section:
    """Of the places a heading appears, the one opening the longest body: the section, not its entry in
    the table of contents or a cross-reference."""
    furniture = _page_furniture(lines)
    best: Section | None = None
    for index, width in starts:
        stop = _next_heading(lines, index + width, ends)
        while stop > index + width and _is_furniture(lines[stop - 1], furniture):
            stop -= 1
        body = "\n".join(lines[index + width : stop]).strip()
        if best is None or len(body) > len(best.text):
            best = Section(heading=" ".join(lines[index : index + width]), text=body)
    if best is None or not best.text:
        raise NoFilingData(f"The filing's document has no {name.replace('_', ' ')} section heading.")
    return best


def _headings(lines: list[str], pattern: re.Pattern[str]) -> Iterable[tuple[int, int]]:
    for index, line in enumerate(lines):
        if len(line) <= _MAX_HEADING_CHARS and pattern.match(line):
            yield index, 1


def _item_headings(lines: list[str], pattern: re.Pattern[str]) -> Iterable[tuple[int, int]]:
    """Headings with their Item number on the same line, or on the line before (a separate cell or div)."""
    for index, line in enumerate(lines):
        if len(line) > _MAX_HEADING_CHARS or not pattern.match(line):
            continue
        if _ANY_ITEM.match(line):
            yield index, 1
        elif index > 0 and _ITEM_ONLY.match(lines[index - 1]):
            yield index - 1, 2


def _next_heading(lines: list[str], start: int, ends: tuple[re.Pattern[str], ...]) -> int:
    for index in range(start, len(lines)):
        line = lines[index]
        if _SIGNED.match(line):
            return index
        if len(line) <= _MAX_HEADING_CHARS and any(pattern.match(line) for pattern in ends):
            return index
    return len(lines)


def _page_furniture(lines: list[str]) -> set[str]:
    """The document's running heads and footers, by `_furniture_key`."""
    counts = Counter(_furniture_key(line) for line in lines if _may_be_furniture(line))
    return {key for key, count in counts.items() if count >= _RUNNING_LINE_MIN}


def _is_furniture(line: str, furniture: set[str]) -> bool:
    return _may_be_furniture(line) and _furniture_key(line) in furniture


def _may_be_furniture(line: str) -> bool:
    return len(line) <= _MAX_HEADING_CHARS and not line.endswith(".")


def _furniture_key(line: str) -> str:
    """The line without its page number ("Apple Inc. | 2025 Form 10-K | 48" gives "apple inc. | 2025 form
    10-k"; a bare "48" gives ""), in any case."""
    head, _, last = line.rpartition(" ")
    if last.isdigit() and len(last) <= _PAGE_NUMBER_DIGITS:
        line = head.rstrip(" |")
    return line.casefold()


# --- an 8-K item's exhibits --------------------------------------------------------------------------------
#
# An 8-K item often says no more than "a copy of the press release is attached hereto as Exhibit 99.1": the
# figures are in the exhibit, a document of its own in the same filing. The item names the exhibit by its
# number; the filing's index page (`<accession>-index.htm`) names every document by its type (EX-99.1), in
# its "Document Format Files" table: `<table class="tableFile" summary="Document Format Files">`, a header
# row of `<th>` (Seq, Description, Document, Type, Size), then one `<tr>` of `<td scope="row">` cells a
# document, its link in the Document cell (`/ix?doc=/Archives/...` for an inline XBRL primary document,
# `/Archives/edgar/data/<cik>/<accession>/<name>` otherwise). XBRL files follow in a "Data Files" table.

# Exhibits the tools read after an item: the 99 series (press releases, presentations, letters), not the
# agreements of the 10 series nor the XBRL of 101 and 104, which can run to hundreds of pages.
READ_EXHIBIT_SERIES = ("99",)
# Items whose exhibit is their substance: read their 99-series exhibit even when the item names none.
ITEMS_WITH_EXHIBIT = ("2.02", "7.01", "8.01")
_EXHIBIT_NUMBER = r"\d{1,3}(?:\.\d{1,3})?"
_EXHIBIT_REFERENCE = re.compile(
    rf"\bexhibits?\s+(?:nos?\.?\s*)?({_EXHIBIT_NUMBER}(?:\s*(?:,|and|&)\s*(?:exhibit\s+)?{_EXHIBIT_NUMBER})*)",
    re.IGNORECASE,
)
_EXHIBIT_TYPE = re.compile(r"^EX-(\d{1,3}(?:\.\d{1,3})?)[A-Z]?$", re.IGNORECASE)
_INLINE_VIEWER = re.compile(r"^/?ix(?:\.xhtml)?\?doc=", re.IGNORECASE)
_EXHIBIT_ROW = re.compile(rf"^(?:exhibit\s+)?({_EXHIBIT_NUMBER})\s*[.:\-\u2013\u2014]?\s+(\S.*)$", re.IGNORECASE)
_MAX_EXHIBIT_ROW_CHARS = 300
_INDEX_COLUMNS = {"seq": 0, "description": 1, "document": 2, "type": 3}


def exhibits_named(text: str) -> list[str]:
    """The exhibit numbers an item's text names, in order: "as Exhibits 99.1 and 99.2" gives 99.1, 99.2."""
    numbers: list[str] = []
    for match in _EXHIBIT_REFERENCE.finditer(text):
        numbers.extend(re.findall(_EXHIBIT_NUMBER, match.group(1)))
    return list(dict.fromkeys(numbers))


def exhibits_to_read(item: str, text: str) -> tuple[list[str], bool]:
    """The exhibit numbers worth reading after an 8-K item's text, and whether any 99-series exhibit of the
    filing will do (an earnings or Regulation FD item that mentions an exhibit without its number)."""
    named = [n for n in exhibits_named(text) if n.split(".")[0] in READ_EXHIBIT_SERIES]
    if named:
        return named, False
    return [], item in ITEMS_WITH_EXHIBIT and re.search(r"\bexhibit", text, re.IGNORECASE) is not None


def filing_documents(html: bytes) -> list[dict[str, str]]:
    """The documents a filing's index page lists in its "Document Format Files" table, each as
    {seq, description, type, href}, `href` as the page links it. JSON-able, for the cache.

    Raises:
        FilingsUpstreamError: the page is not HTML or has no document table.
    """
    try:
        root = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError) as exc:
        raise FilingsUpstreamError("The filing's index page could not be read as HTML.") from exc
    tables = [t for t in root.iter("table") if "tablefile" in (t.get("class") or "").lower().split()]
    documents = [t for t in tables if (t.get("summary") or "").strip().lower() == "document format files"]
    if not documents and not tables:
        raise FilingsUpstreamError("The filing's index page lists no documents.")
    rows: list[dict[str, str]] = []
    for table in documents or tables:
        columns = dict(_INDEX_COLUMNS)
        for row in table.iter("tr"):
            headers = [_cell_text(th).lower() for th in row.findall("th")]
            if headers:
                columns.update({name: headers.index(name) for name in _INDEX_COLUMNS if name in headers})
                continue
            cells = row.findall("td")
            if len(cells) <= max(columns.values()):
                continue
            links = cells[columns["document"]].xpath(".//a/@href")
            if not links:
                continue
            rows.append(
                {
                    "seq": _cell_text(cells[columns["seq"]]),
                    "description": _cell_text(cells[columns["description"]]),
                    "type": _cell_text(cells[columns["type"]]).upper(),
                    "href": str(links[0]).strip(),
                }
            )
    return rows


def exhibit_list(text: str) -> dict[str, str]:
    """The exhibits an 8-K lists under Item 9.01, by number: its table's rows ("99.1 Press release issued by
    Apple Inc. on January 30, 2025.") are lines of the document's text."""
    found: dict[str, str] = {}
    for line in text.split("\n"):
        match = _EXHIBIT_ROW.match(line)
        if match and len(line) <= _MAX_EXHIBIT_ROW_CHARS:
            found.setdefault(match.group(1), match.group(2).strip())
    return found


def exhibit_number(document_type: str) -> str | None:
    """ "EX-99.1" gives "99.1"; a primary document's type (8-K), GRAPHIC or XML gives None."""
    match = _EXHIBIT_TYPE.match(document_type.strip())
    return match.group(1) if match else None


def document_name(href: str, folder: str) -> str | None:
    """The file name a link of the index page points to, when it is a document of the filing itself
    (`folder`: `/Archives/edgar/data/<cik>/<accession without dashes>/`); None for any other link."""
    path = _INLINE_VIEWER.sub("", href.strip(), count=1).split("?", 1)[0].split("#", 1)[0]
    path = re.sub(r"^https?://[^/]+", "", path)
    if path.startswith("/"):
        if not path.startswith(folder):
            return None
        path = path[len(folder) :]
    if not path or "/" in path or path.startswith(".") or not re.search(r"\.(?:htm|html|txt)$", path, re.I):
        return None
    return path


def _cell_text(cell: etree._Element) -> str:
    return _SPACES.sub(" ", cell.text_content()).strip()
