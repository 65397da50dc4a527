"""Whether a source says what a claim says: the decision rule of citation verification.

A web page supports a claim when
- every figure of the claim worth checking (`datascraper.figures`: not a year, not a small plain count)
  appears in the page's main text as the same kind (a percentage or an amount) and equal once rounded
  to the precision the claim writes it with: "$3.2B" is found as "3.2 billion" or "$3,200 million",
  "12%" as "12.0 percent", "1,234.5" as "1234.5";
- and at least `MIN_TERM_SHARE` of the claim's key terms appear in it: words of three letters or more
  that are not function words, compared by their first six letters once a plural "s" is dropped, so
  "revenues" finds "revenue" and "increased" finds "increase".
A claim with neither figures nor key terms cannot be checked, and is unsupported.

A market-data source supports a claim when every figure of the claim is within one unit of its last
digit of a value that source's tool returned or of a figure computed from it (the number check's
tolerance, `quality_logger.check_numbers`); a claim without figures is held to the key-term rule against
the words of the tool output (names, sectors, grades).

The rule is deliberately simple: figures and words anywhere in the page count, not only in one passage.
`evidence` is the passage where most of them meet.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import trafilatura

from datascraper.figures import Figure, figures_in, near
from datascraper.schemas import Fact, FactInput, Source

MIN_TERM_SHARE = 0.5
EVIDENCE_CHARS = 240
_STEM_CHARS = 6
_MAX_ANCHORS = 200  # places of a page considered for the evidence passage

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_SPACE = re.compile(r"\s+")
_FUNCTION_WORDS = frozenset(
    """
    a about above according across after again against all almost along already also although always
    among an and another any are around as at be because been before being below between both but by
    can could did do does down during each either else even ever every few for from further had has
    have having he her here hers him his how however if in into is it its itself just last less like
    made make many may more most much must near nearly new next no nor not now of off on once one only
    or other our out over own per rather reported reports roughly said same says she should since so
    some such than that the their them then there these they this those though through thus to too
    under until up upon very was were what when where whether which while who whom whose why will with
    within would year years yet approximately compared versus percent percentage points billion
    million thousand trillion
    """.split()
)

Status = Literal["supported", "unsupported"]


@dataclass(frozen=True)
class Judgement:
    status: Status
    evidence: str | None = None


def _bare(word: str) -> str:
    return word.lower().replace("’", "'").removesuffix("'s")


def stem(word: str) -> str:
    """A word as terms are compared: lower case, no possessive or plural "s", at most six letters."""
    word = _bare(word)
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:_STEM_CHARS]


def key_terms(claim: str) -> set[str]:
    """The stems of the claim's words that carry its meaning."""
    return {stem(word) for word in _WORD.findall(claim) if len(word) >= 3 and _bare(word) not in _FUNCTION_WORDS}


@dataclass
class SourceText:
    """A source's text, indexed for the checks: its figures, and its words with their places."""

    text: str
    figures: list[Figure] = field(init=False)
    positions: list[int] = field(init=False)  # where each word starts, in order
    word_stems: list[str] = field(init=False)
    stems: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        self.figures = list(figures_in(self.text))
        words = [(match.start(), stem(match[0])) for match in _WORD.finditer(self.text)]
        self.positions = [position for position, _ in words]
        self.word_stems = [word_stem for _, word_stem in words]
        self.stems = frozenset(self.word_stems)

    def passage(self, anchors: Sequence[int], terms: set[str]) -> str:
        """The `EVIDENCE_CHARS` around the anchor (a place in the text) with the most of `terms` near it."""
        half = EVIDENCE_CHARS // 2

        def terms_near(anchor: int) -> int:
            first = bisect.bisect_left(self.positions, anchor - half)
            last = bisect.bisect_right(self.positions, anchor + half)
            return len(terms.intersection(self.word_stems[first:last]))

        best = max(anchors[:_MAX_ANCHORS], key=terms_near)
        start, end = max(0, best - half), min(len(self.text), best + half)
        # Whole words only: a cut word at either end is left out.
        while 0 < start < end and not self.text[start - 1].isspace():
            start += 1
        while start < end < len(self.text) and not self.text[end].isspace():
            end -= 1
        passage = _SPACE.sub(" ", self.text[start:end]).strip()
        return ("…" if start > 0 else "") + passage + ("…" if end < len(self.text) else "")


def read_page(html: bytes) -> SourceText:
    """The page's main text (trafilatura), indexed; all of its text when no main text stands out.

    CPU work of tens to hundreds of milliseconds on a large page: callers run it in a thread."""
    text = trafilatura.extract(html, include_comments=False, include_tables=True, favor_recall=True)
    if not text:
        text = trafilatura.html2txt(html)
    return SourceText(text or "")


def judge_page(claim: str, page: SourceText) -> Judgement:
    """The decision rule for a web page (module docstring)."""
    figures = [figure for figure in figures_in(claim) if figure.checkable]
    terms = key_terms(claim)
    if not figures and not terms:
        return Judgement("unsupported")
    anchors: list[int] = []
    for figure in figures:
        found = [match.start for match in page.figures if figure.matches(match)]
        if not found:
            return Judgement("unsupported")
        anchors.extend(found)
    matched = terms & page.stems
    if len(matched) < MIN_TERM_SHARE * len(terms):
        return Judgement("unsupported")
    if not anchors:
        anchors = [position for position, word in zip(page.positions, page.word_stems, strict=True) if word in matched]
    return Judgement("supported", page.passage(anchors, matched))


# --- market data ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MarketEvidence:
    """What one market-data source returned: each number with a label saying where it is, the figures
    computed from it, and its words."""

    values: list[tuple[float, str]]
    computed: list[tuple[float, str]]
    words: SourceText

    @classmethod
    def of(cls, source: Source, payloads: Sequence[dict], facts: Sequence[Fact]) -> MarketEvidence:
        """The evidence of `source`: its tool results' `payloads` and the `facts` citing it."""
        values: list[tuple[float, str]] = []
        strings: list[str] = [source.title]
        for payload in payloads:
            symbol = payload.get("symbol", "")
            for label, value in _leaves(payload):
                if isinstance(value, str):
                    strings.append(value)
                else:
                    values.append((float(value), f"{symbol} {label}".strip() + f" = {_plain(value)}"))
        return cls(values=values, computed=_computed(source, facts), words=SourceText("\n".join(strings)))

    @classmethod
    def of_values(cls, source: Source, values: Sequence[tuple[float, str]], facts: Sequence[Fact]) -> MarketEvidence:
        """The evidence of a source whose figures are given labelled (a filing's reported values)."""
        words = SourceText("\n".join([source.title, *(label for _, label in values)]))
        return cls(values=list(values), computed=_computed(source, facts), words=words)


def _computed(source: Source, facts: Sequence[Fact]) -> list[tuple[float, str]]:
    """The figures computed from `source`'s values, labelled."""
    return [
        (fact.value, f"{fact.id} {fact.label} = {_plain(fact.value)} {fact.unit}")
        for fact in facts
        if fact.value is not None and any(source.n in _cited_by(item) for item in fact.inputs)
    ]


def _cited_by(item: FactInput) -> set[int | None]:
    """The sources an input cites: its own, and the second filing of a quarter derived from two."""
    return {item.source.n, item.derived.earlier_source.n if item.derived is not None else item.source.n}


def judge_market_data(claim: str, evidence: MarketEvidence) -> Judgement:
    """The decision rule for a market-data source (module docstring)."""
    figures = [figure for figure in figures_in(claim) if figure.checkable]
    if not figures:
        return judge_page(claim, evidence.words)
    labels: list[str] = []
    for figure in figures:
        label = next((label for value, label in [*evidence.values, *evidence.computed] if near(figure, (value,))), None)
        if label is None:
            return Judgement("unsupported")
        labels.append(label)
    return Judgement("supported", "; ".join(dict.fromkeys(labels))[:EVIDENCE_CHARS])


def _leaves(value: Any, label: str = "") -> Iterator[tuple[str, float | str]]:
    """Every number and string of a payload with where it is: `TotalRevenue 2024-09-30` for a statement
    line (its values lined up with the statement's periods), `bars[2025-06-13].close`, `price`."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float | str):
        yield label, value
    elif isinstance(value, dict):
        periods = value.get("periods") if isinstance(value.get("periods"), list) else None
        for key, item in value.items():
            if key == "lines" and periods is not None and isinstance(item, list):
                for line in item:
                    for period, number in zip(periods, line.get("values") or [], strict=False):
                        if isinstance(number, int | float) and not isinstance(number, bool):
                            yield f"{line.get('name', '')} {period}", number
            else:
                yield from _leaves(item, f"{label}.{key}" if label else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            key = (item.get("date") or item.get("name") or item.get("period") or i) if isinstance(item, dict) else i
            yield from _leaves(item, f"{label}[{key}]")


def _plain(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{round(value, 6):,}"
