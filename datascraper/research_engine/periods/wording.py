"""Periods read from a sub-question's own words, when the analyzer left its period fields unset or wrong.

"Q3 2025", "the last 3 quarters", "TTM", "YTD", "since March", "from March 1 to June 6", "past week",
"hourly"; and fiscal wording ("Q3 FY2025", "fiscal 2024"), read as a `FiscalAsk` for the company's own
calendar to place. `periods.request` merges what is read here with the analyzer's fields and validates
the result.
"""

from __future__ import annotations

import calendar
import math
import re
from datetime import date, timedelta

from datascraper.market_data.finding_schemas import MarketDataRequest
from datascraper.market_data.schemas import HistoryInterval, HistoryPeriod
from datascraper.research_engine.periods.fiscal_calendar import FiscalAsk, FiscalPeriodRef, calendar_period
from datascraper.schemas import MarketDataKind

STATEMENT_DATA: frozenset[MarketDataKind] = frozenset({"income_statement", "balance_sheet", "cash_flow"})
# The data whose periods a company names by its fiscal calendar; its periods are counted ("last 3 quarters").
FISCAL_DATA: frozenset[MarketDataKind] = STATEMENT_DATA | {"earnings"}
_RANGE_MONTHS = {"1mo": 1, "3mo": 3, "6mo": 6, "1y": 12, "2y": 24, "5y": 60, "10y": 120}


# --- dates ----------------------------------------------------------------------------------------------


def range_start(period: HistoryPeriod, today: date) -> date | None:
    """The first day a relative range covers; None for all history."""
    if period == "max":
        return None
    if period == "ytd":
        return date(today.year, 1, 1)
    if period == "1d":
        return today - timedelta(days=1)
    if period == "5d":
        return today - timedelta(days=7)  # five sessions span a calendar week
    return months_before(today, _RANGE_MONTHS[period])


def months_before(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 - months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def quarter_dates(n: int, year: int) -> tuple[date, date]:
    first_month = 3 * (n - 1) + 1
    last_month = first_month + 2
    return date(year, first_month, 1), date(year, last_month, calendar.monthrange(year, last_month)[1])


# --- the wording fallback -------------------------------------------------------------------------------

_NUMBER_WORDS = {
    "a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_NUMBER = r"(?:\d{1,3}|" + "|".join(_NUMBER_WORDS) + r")"
_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_YEAR = r"(?:19|20)\d{2}"
_FISCAL = r"(?:fy|fiscal(?:\s+year)?)"
# A day as people write it: 2025-03-14, March 14 2025, March 14, March 2025, March, 2025.
_DAY = rf"(?:\d{{4}}-\d{{2}}-\d{{2}}|{_MONTH}(?:\s+\d{{1,2}}(?!\d)(?:st|nd|rd|th)?)?(?:,?\s+{_YEAR})?|{_YEAR})"
_ORDINAL_QUARTER = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}

_TTM = re.compile(r"\b(?:ttm|ltm|trailing[- ](?:twelve|12)[- ]months?|last (?:twelve|12) months)\b")
# Calendar quarters: "Q3 2025", "the third quarter of 2025", "Q3" alone. Fiscal wording is read (and taken
# out of the text) before these, so "Q3 FY2025" never reaches them.
_NAMED_QUARTERS = (
    re.compile(r"\bq([1-4])(?:\s+of)?\s*'?(\d{4}|\d{2})?\b"),
    re.compile(rf"\b(first|second|third|fourth|1st|2nd|3rd|4th) quarter(?:\s+of)?(?:\s+({_YEAR}))?\b"),
)
_CALENDAR_YEARS = re.compile(
    rf"\b(?:(?:in|during|for|of|over)\s+(?:calendar\s+(?:years?\s+)?|cy\s*)?|calendar\s+(?:years?\s+)?|cy\s*)({_YEAR})"
    rf"(?:\s*(?:-|–|to|through|and)\s*(?:cy\s*)?({_YEAR}))?\b"
)
# "the quarter ending September 2025", "the year ended 2024-12-31": periods by the calendar day they end.
_ENDING = re.compile(rf"\b(quarter|year|period)s?\s+end(?:ing|ed)\s+(?:in\s+|on\s+)?({_DAY})\b")

# Fiscal wording, read first: each pattern names a quarter `n` (Q3, third) and a fiscal `year` (2025, 25).
_FISCAL_YEAR = r"'?(?P<year>\d{4}|\d{2})"
_ORDINAL = r"(?P<n>first|second|third|fourth|1st|2nd|3rd|4th)"
_FISCAL_QUARTERS = (
    re.compile(rf"\bq(?P<n>[1-4])\s+(?:of\s+)?{_FISCAL}\s*{_FISCAL_YEAR}\b"),  # Q3 FY2025, Q3 of fiscal 2025
    re.compile(rf"\b{_FISCAL}\s*{_FISCAL_YEAR}\s+q(?P<n>[1-4])\b"),  # FY2025 Q3, fiscal 2025 Q3
    re.compile(rf"\b{_FISCAL}\s*{_FISCAL_YEAR}(?:'s)?\s+{_ORDINAL}\s+quarter\b"),  # fiscal 2025's third quarter
    re.compile(rf"\bfiscal\s+q(?P<n>[1-4])\s+(?:of\s+)?{_FISCAL_YEAR}\b"),  # fiscal Q3 2025
    # the fiscal third quarter of 2025, the third fiscal quarter of (fiscal) 2025
    re.compile(rf"\bfiscal\s+{_ORDINAL}\s+quarter\s+(?:of\s+)?(?:{_FISCAL}\s*)?{_FISCAL_YEAR}\b"),
    re.compile(rf"\b{_ORDINAL}\s+fiscal\s+quarter\s+(?:of\s+)?(?:{_FISCAL}\s*)?{_FISCAL_YEAR}\b"),
    re.compile(rf"\b{_ORDINAL}\s+quarter\s+(?:of\s+)?{_FISCAL}\s*{_FISCAL_YEAR}\b"),  # third quarter of FY2025
)
_FISCAL_YEARS = re.compile(
    r"\b(?:fy|fiscal(?:\s+years?)?)\s*'?(\d{4}|\d{2})(?:\s*(?:-|–|to|through|and)\s*(?:fy\s*)?'?(\d{4}|\d{2}))?\b"
)
_LAST = re.compile(
    rf"\b(?:last|past|previous|prior|recent|trailing|latest|most recent)\s+(?:({_NUMBER})\s+)?(?:fiscal\s+)?"
    r"(quarter|year|month|week|trading day|day|session)s?\b"
)
_YTD = re.compile(r"\b(?:ytd|year[- ]to[- ]date|so far this year|this year)\b")
_SINCE = re.compile(rf"\bsince\s+(?:the\s+(?:start|beginning)\s+of\s+)?({_DAY})\b")
_BETWEEN = re.compile(rf"\b(?:from|between)\s+({_DAY})\s+(?:to|and|until|till|through)\s+({_DAY})\b")
_IN_MONTH = re.compile(rf"\b(?:in|during)\s+({_MONTH}(?:\s+{_YEAR})?)\b")
_QUARTERLY_WORDS = re.compile(r"\b(?:quarterly|quarter[- ]over[- ]quarter|qoq|sequential(?:ly)?|quarters?)\b")
_ANNUAL_WORDS = re.compile(r"\b(?:annual(?:ly)?|yearly|year[- ]over[- ]year|yoy|fiscal years?|full[- ]year|fy)\b")
_INTERVAL_WORDS: tuple[tuple[re.Pattern[str], HistoryInterval], ...] = (
    (re.compile(r"\b(?:intraday|hourly)\b"), "1h"),
    (re.compile(r"\bweekly\b"), "1wk"),
    (re.compile(r"\bmonthly\b"), "1mo"),
    (re.compile(r"\bdaily\b"), "1d"),
)
_NEWS_COUNT = re.compile(
    rf"\b({_NUMBER})\s+(?:latest\s+|recent\s+)?(?:news\s+)?(?:headlines|articles|stories|news items)\b"
)
_HISTORY_RANGE_FOR_MONTHS: dict[int, HistoryPeriod] = {1: "1mo", 3: "3mo", 6: "6mo", 12: "1y", 60: "5y"}


def read_fiscal_wording(text: str) -> FiscalAsk | None:
    """The fiscal periods `text` names ("Q3 FY2025", "FY2025 Q3", "fiscal third quarter of 2025", "fiscal
    2024", "FY2022-FY2024"), or None when it names none. Several named quarters are the span from the first
    to the last; quarters, when named, are what is asked rather than the years beside them."""
    words = " ".join(text.lower().split())
    quarters, years = _fiscal_matches(words)
    refs = quarters or years
    if not refs:
        return None
    return FiscalAsk(first=min(refs, key=FiscalPeriodRef.ordinal), last=max(refs, key=FiscalPeriodRef.ordinal))


def _fiscal_matches(words: str) -> tuple[list[FiscalPeriodRef], list[FiscalPeriodRef]]:
    """The fiscal quarters, then the fiscal years, that `words` name."""
    quarters = [
        FiscalPeriodRef(year=_year(match["year"]), quarter=_ORDINAL_QUARTER.get(match["n"]) or int(match["n"]))
        for pattern in _FISCAL_QUARTERS
        for match in pattern.finditer(words)
    ]
    years = [
        FiscalPeriodRef(year=_year(year))
        for match in _FISCAL_YEARS.finditer(_without_fiscal_quarters(words))
        for year in (match[1], match[2])
        if year
    ]
    return quarters, years


def _without_fiscal_quarters(words: str) -> str:
    for pattern in _FISCAL_QUARTERS:
        words = pattern.sub(" ", words)
    return words


def read_wording(text: str, *, data: MarketDataKind, today: date) -> MarketDataRequest:
    """The periods the words of a question name for `data`, as asked (not yet validated): the fallback for
    the fields the analyzer left unset. Relative words read by kind: "last 3 quarters" counts three
    statements (the newest reported, however late) but spans nine months of prices; "last twelve months"
    is `ttm` for a statement and `1y` of prices.

    Fiscal periods ("Q3 FY2025", "fiscal 2024") give statements and earnings only their frequency here:
    their months depend on the company's calendar (`fiscal_ask`, `resolve_fiscal`). For other data they are
    read as calendar months. Calendar wording ("Q3 2025", "calendar 2024", "the quarter ending September
    2025") is read as calendar dates."""
    words = " ".join(text.lower().split())
    counted = data in FISCAL_DATA
    fields: dict[str, object] = {}

    def fill(**values: object) -> None:
        for name, value in values.items():
            if value is not None:
                fields.setdefault(name, value)

    if _TTM.search(words):
        fill(**({"frequency": "ttm"} if counted else {"period": "1y"}))
    if (fiscal := read_fiscal_wording(words)) is not None:
        fill(**_fiscal_fields(fiscal, counted=counted))
        words = _FISCAL_YEARS.sub(" ", _without_fiscal_quarters(words))
    quarters = [_namedquarter_dates(match, today) for pattern in _NAMED_QUARTERS for match in pattern.finditer(words)]
    if quarters:  # several named quarters: the span from the first to the last
        fill(frequency="quarterly", start=min(q[0] for q in quarters), end=max(q[1] for q in quarters))
    if match := _ENDING.search(words):
        fill(
            frequency={"quarter": "quarterly", "year": "annual"}.get(match[1]),
            start=_parse_day(match[2], today, end=False),
            end=_parse_day(match[2], today, end=True),
        )
    for match in _LAST.finditer(words):
        fill(**_last_units(_count(match[1]), match[2], today, counted=counted))
    if _YTD.search(words):
        fill(period="ytd")
    if match := _BETWEEN.search(words):
        fill(start=_parse_day(match[1], today, end=False), end=_parse_day(match[2], today, end=True))
    if match := _SINCE.search(words):
        fill(start=_parse_day(match[1], today, end=False))
    if match := _CALENDAR_YEARS.search(words):
        fill(start=date(int(match[1]), 1, 1), end=date(int(match[2] or match[1]), 12, 31))
    if match := _IN_MONTH.search(words):
        fill(start=_parse_day(match[1], today, end=False), end=_parse_day(match[1], today, end=True))
    if _QUARTERLY_WORDS.search(words):
        fill(frequency="quarterly")
    elif _ANNUAL_WORDS.search(words):
        fill(frequency="annual")
    fill(interval=next((interval for pattern, interval in _INTERVAL_WORDS if pattern.search(words)), None))
    if match := _NEWS_COUNT.search(words):
        fill(limit=_count(match[1]))
    if "period" in fields and ("start" in fields or "end" in fields):
        # "this year since March": the dates are the more precise reading.
        del fields["period"]
    return MarketDataRequest.model_validate(fields)


def _fiscal_fields(fiscal: FiscalAsk, *, counted: bool) -> dict[str, object]:
    """What fiscal wording says before the company's calendar is known: for statements and earnings
    (`counted`) only whether quarters are asked, their months being placed later; for other data the
    calendar months, from the first month of the first period to the last day of the last."""
    if counted:
        return {"frequency": "quarterly" if fiscal.frequency == "quarterly" else None}
    first, last = calendar_period(fiscal.first), calendar_period(fiscal.last)
    closing = last.last_month
    return {"start": first.first_month, "end": closing.replace(day=calendar.monthrange(closing.year, closing.month)[1])}


def _last_units(count: int, unit: str, today: date, *, counted: bool) -> dict[str, object]:
    """`last <count> <unit>s`: a count of statements or reports when `counted`, else a price range."""
    if counted and unit in ("quarter", "year"):
        return {"frequency": "quarterly" if unit == "quarter" else "annual", "periods": count}
    months = {"quarter": 3, "year": 12, "month": 1}.get(unit)
    if months is not None:
        period = _HISTORY_RANGE_FOR_MONTHS.get(months * count)
        return {"period": period} if period else {"start": months_before(today, months * count)}
    days = 7 * count if unit == "week" else count
    if unit in ("trading day", "session"):
        days = math.ceil(count * 7 / 5)  # five sessions a calendar week
    return {"period": "5d"} if days <= 7 else {"start": today - timedelta(days=days)}


def _namedquarter_dates(match: re.Match[str], today: date) -> tuple[date, date]:
    n = _ORDINAL_QUARTER[match[1]] if match[1] in _ORDINAL_QUARTER else int(match[1])
    year = match[2]
    if year is not None:
        return quarter_dates(n, _year(year))
    # "Q3" alone: the latest third quarter that has ended.
    first, last = quarter_dates(n, today.year)
    return (first, last) if last <= today else quarter_dates(n, today.year - 1)


def _parse_day(text: str, today: date, *, end: bool) -> date:
    """A day as written; a month or a year alone is its first day, or with `end` its last. A month without
    a year is the latest such month that has begun by today."""
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        try:
            return date.fromisoformat(text)
        except ValueError:
            return today
    if re.fullmatch(_YEAR, text):
        return date(int(text), 12, 31) if end else date(int(text), 1, 1)
    parts = re.match(rf"({_MONTH})(?:\s+(\d{{1,2}})(?!\d)(?:st|nd|rd|th)?)?(?:,?\s+({_YEAR}))?", text)
    assert parts is not None  # `text` matched _DAY
    month = _MONTHS[parts[1][:3]]
    year = int(parts[3]) if parts[3] else (today.year if month <= today.month else today.year - 1)
    last_day = calendar.monthrange(year, month)[1]
    if parts[2]:
        return date(year, month, min(int(parts[2]), last_day))
    return date(year, month, last_day if end else 1)


def _count(text: str | None) -> int:
    if text is None:
        return 1
    return int(text) if text.isdigit() else _NUMBER_WORDS[text]


def _year(text: str) -> int:
    return int(text) if len(text) == 4 else 2000 + int(text)
