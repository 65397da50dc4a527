"""A company's fiscal calendar, read from the period ends of its statements, and the fiscal periods it names.

Companies name periods by their own fiscal year, which is named by the calendar year it ENDS in: NVIDIA's
FY2025 ended 2025-01-26, Apple's FY2024 ended 2024-09-28, Microsoft's FY2025 ended 2025-06-30. Quarter n of
fiscal year Y is the n-th quarter after the end of fiscal year Y-1, so NVIDIA's Q3 FY2025 is August to
October 2024, and Apple's Q1 FY2025 ended 2024-12-28.

Many fiscal years are 52 or 53 weeks long and end on a weekday near a month end, sometimes a few days into
the next month (a year ending on the Saturday nearest December 31 may end on January 1). So a period end is
read as the month it nominally closes: the month of the day a week before it. A period of a fiscal calendar
is matched by the same rule in reverse, within a window from the 8th of its closing month to a week after
that month's end.

Nothing here guesses: with fewer than two fiscal year ends that agree on their month, there is no calendar
(`infer_calendar` returns None) and callers read the period as calendar months, and say so.
"""

from __future__ import annotations

import calendar
from collections.abc import Sequence
from datetime import date, timedelta
from typing import Literal

from pydantic import BaseModel, Field

# A period ending up to this long after a month end closes that month (52/53-week years).
PERIOD_END_SLACK = timedelta(days=7)
_MONTH_ABBREVIATIONS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


class FiscalPeriodRef(BaseModel):
    """A fiscal period as a question names it: fiscal year `year` ("FY2025", "fiscal 2025"), or its quarter
    `quarter` ("Q3 FY2025"). The months it covers depend on the company's calendar."""

    year: int
    quarter: int | None = Field(default=None, ge=1, le=4)

    @property
    def name(self) -> str:
        """The period as companies write it: "Q3 FY2025", "FY2024"."""
        return f"FY{self.year}" if self.quarter is None else f"Q{self.quarter} FY{self.year}"

    def ordinal(self) -> int:
        """A number that orders periods: a year after its quarters."""
        return self.year * 5 + (self.quarter or 5)


class FiscalAsk(BaseModel):
    """The fiscal periods a sub-question asks for: from `first` to `last` (one period when they are equal),
    all quarters or all years."""

    first: FiscalPeriodRef
    last: FiscalPeriodRef

    @property
    def frequency(self) -> Literal["quarterly", "annual"]:
        return "annual" if self.first.quarter is None else "quarterly"

    @property
    def name(self) -> str:
        if self.first == self.last:
            return self.first.name
        return f"{self.first.name} to {self.last.name}"


class FiscalPeriod(BaseModel):
    """A fiscal period placed on the calendar: the months it covers, and its name as both."""

    ref: FiscalPeriodRef
    first_month: date = Field(description="The first day of the first month the period covers.")
    last_month: date = Field(description="The first day of the month the period closes.")

    @property
    def months(self) -> str:
        """ "Aug–Oct 2024", "Nov 2024–Jan 2025", "Oct 2023–Sep 2024"."""
        first = _MONTH_ABBREVIATIONS[self.first_month.month - 1]
        last = _MONTH_ABBREVIATIONS[self.last_month.month - 1]
        if self.first_month.year == self.last_month.year:
            return f"{first}–{last} {self.last_month.year}"
        return f"{first} {self.first_month.year}–{last} {self.last_month.year}"

    @property
    def label(self) -> str:
        """The fiscal name with the calendar months: "Q3 FY2025 (Aug–Oct 2024)"."""
        return f"{self.ref.name} ({self.months})"

    @property
    def window(self) -> tuple[date, date]:
        """The days a period end of this period falls on (inclusive), 52/53-week years allowed for."""
        closing = self.last_month
        return closing + PERIOD_END_SLACK, _month_end(closing) + PERIOD_END_SLACK


class FiscalCalendar(BaseModel):
    """When a company's fiscal year ends, as its statements show it."""

    year_end_month: int = Field(ge=1, le=12, description="The month its fiscal years close (1: January).")
    year_ends: list[date] = Field(default_factory=list, description="The fiscal year ends it was read from.")

    @property
    def is_calendar_year(self) -> bool:
        return self.year_end_month == 12

    def period(self, ref: FiscalPeriodRef) -> FiscalPeriod:
        """`ref` on the calendar: quarter n of FY Y closes 3n months after FY Y-1 closed."""
        year_closes = _month_index(ref.year, self.year_end_month)
        closes = year_closes if ref.quarter is None else year_closes - 12 + 3 * ref.quarter
        length = 12 if ref.quarter is None else 3
        return FiscalPeriod(ref=ref, first_month=_month_start(closes - length + 1), last_month=_month_start(closes))

    def period_ending(self, period_end: date, *, quarterly: bool) -> FiscalPeriod | None:
        """The fiscal quarter (or year) a statement period ending on `period_end` is; None when the day
        does not close a quarter (or the year) of this calendar."""
        closes = _closing_month(period_end)
        after_year_end = (closes - _month_index(0, self.year_end_month)) % 12
        if quarterly:
            if after_year_end % 3:
                return None
            quarter = 4 if after_year_end == 0 else after_year_end // 3
            year_closes = closes + (12 - 3 * quarter)
            ref = FiscalPeriodRef(year=year_closes // 12, quarter=quarter)
        else:
            if after_year_end:
                return None
            ref = FiscalPeriodRef(year=closes // 12)
        return self.period(ref)

    def describe(self) -> str:
        """ "fiscal year ends in January (FY2025 ended 2025-01-26)"."""
        month = calendar.month_name[self.year_end_month]
        if not self.year_ends:
            return f"fiscal year ends in {month}"
        newest = max(self.year_ends)
        year = _closing_month(newest) // 12
        return f"fiscal year ends in {month} (FY{year} ended {newest.isoformat()})"


def infer_calendar(annual_ends: Sequence[date], quarterly_ends: Sequence[date] = ()) -> FiscalCalendar | None:
    """The calendar that annual period ends show: the month the two newest fiscal years closed, when they
    agree and the quarterly period ends (if any) close quarters of it. None when the dates do not say:
    fewer than two year ends, or ends that disagree (a company that changed its fiscal year)."""
    ends = sorted(set(annual_ends), reverse=True)
    if len(ends) < 2:
        return None
    months = {_closing_month(end) % 12 for end in ends[:2]}
    if len(months) != 1:
        return None
    year_end_month = months.pop() + 1
    if any((_closing_month(end) % 12 + 1 - year_end_month) % 3 for end in quarterly_ends):
        return None
    return FiscalCalendar(year_end_month=year_end_month, year_ends=ends)


def calendar_period(ref: FiscalPeriodRef) -> FiscalPeriod:
    """`ref` read as calendar months, for a company whose calendar is not known: "Q3 FY2025" as July to
    September 2025, "FY2024" as 2024."""
    return FiscalCalendar(year_end_month=12).period(ref)


def _closing_month(period_end: date) -> int:
    """The month a period ending on `period_end` closes, as a month index (year * 12 + month - 1)."""
    day = period_end - PERIOD_END_SLACK
    return _month_index(day.year, day.month)


def _month_index(year: int, month: int) -> int:
    return year * 12 + month - 1


def _month_start(index: int) -> date:
    year, month = divmod(index, 12)
    return date(year, month + 1, 1)


def _month_end(first_day: date) -> date:
    return first_day.replace(day=calendar.monthrange(first_day.year, first_day.month)[1])
