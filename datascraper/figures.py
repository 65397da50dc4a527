"""Figures as an answer or a page writes them ("$391.04 billion", "12%", "1,234.5"), read as numbers.

Two checks compare figures: the number check (`quality_logger.check_numbers`: market data) and citation
verification (`datascraper.citations`: pages and market data). They must read "$3.2B" and "3.2 billion"
alike, so the reading lives here once.

The reading, in full:
- Markers [n], ISO dates, times (14:30) and numeric tickers (7203.T, 0700.HK) are ignored.
- A magnitude word or suffix (thousand/K, million/M, billion/B/bn, trillion/T/tn) scales the number;
  "%" and "percent" make it a percentage, kept in percent (12% is 12).
- Values are absolute: "down 1.23" is 1.23.
- `unit` is one unit of the last digit written, scaled: "$3.2B" is 3.2e9 with a unit of 1e8.
- Worth checking (`checkable`): not a year (1900-2100 without decimals, currency or magnitude) and not a
  plain integer below 1,000 with no currency, percent, decimals or magnitude ("3 analysts", "Q3").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

# Markers, ISO dates and times, and numeric tickers with their exchange suffix (7203.T, 0700.HK, 005930.KS).
_IGNORED = re.compile(
    r"\[\d+\]|\b\d{4}-\d{2}-\d{2}(?:T[\d:.+-]*Z?)?|\b\d{1,2}:\d{2}(?::\d{2})?\b|\b\d{3,6}\.[A-Z]{1,2}\b"
)
_NUMBER = re.compile(
    r"(?<![\w.])(?P<currency>[$€£¥])?\s?(?P<number>\d{1,3}(?:,\d{3})+|\d+)(?P<decimals>\.\d+)?"
    r"\s?(?P<scale>%|percent\b|trillion\b|billion\b|million\b|thousand\b|bn\b|tn\b|[TBMK]\b)?",
    re.IGNORECASE,
)
_SCALES = {
    "trillion": 1e12,
    "tn": 1e12,
    "t": 1e12,
    "billion": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "million": 1e6,
    "m": 1e6,
    "thousand": 1e3,
    "k": 1e3,
}


@dataclass(frozen=True)
class Figure:
    """One figure of a text: as written, its absolute value (scaled; percentages in percent), one unit of
    its last digit, and where it stands in the text."""

    written: str
    value: float
    unit: float
    percent: bool
    checkable: bool
    start: int
    end: int

    def matches(self, other: Figure) -> bool:
        """Whether `other` (a page's figure) says this figure: the same kind (a percentage or an amount)
        and equal once rounded to the precision this one is written with (within half a unit)."""
        return self.percent == other.percent and abs(other.value - self.value) <= self.unit / 2 * (1 + 1e-9)


def figures_in(text: str) -> Iterator[Figure]:
    """Every figure of `text`, in order; positions are those of `text` itself."""
    blanked = _IGNORED.sub(lambda match: " " * len(match[0]), text)
    for match in _NUMBER.finditer(blanked):
        digits = match["number"].replace(",", "")
        decimals = match["decimals"] or ""
        scale_word = (match["scale"] or "").lower()
        percent = scale_word in ("%", "percent")
        scale = 1.0 if percent else _SCALES.get(scale_word, 1.0)
        value = float(digits + decimals)
        plain = not (match["currency"] or decimals or scale_word or "," in match["number"])
        year = not decimals and not match["currency"] and not scale_word and 1900 <= value <= 2100
        unit = 10.0 ** -(len(decimals) - 1 if decimals else 0)
        yield Figure(
            written=match.group(0).strip(),
            value=value * scale,
            unit=unit * scale,
            percent=percent,
            checkable=not (plain and value < 1000) and not year,
            start=match.start(),
            end=match.end(),
        )


def near(figure: Figure, candidates: Iterable[float]) -> bool:
    """Whether a candidate value (of market data, or computed) is within one unit of `figure`'s last digit,
    compared by absolute value: deliberately loose, so a figure rounded twice still matches."""
    return any(abs(abs(candidate) - figure.value) <= figure.unit for candidate in candidates)
