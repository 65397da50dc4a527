"""Typed market data by reporting period: the financial statement and earnings tools' results, and how each
is cut to the periods a question asks for, with the older periods their growth is measured against.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time

from pydantic import Field

from datascraper.formatting import fmt, fmt_pct, humanize
from datascraper.market_data.schemas import MarketDataResult, StatementFrequency, StatementKind, StrictData

# How many days before a period the one its growth is measured against ends: the previous period, or for a
# quarter also the same quarter a year earlier. "About", since fiscal periods end on different days from year
# to year (52/53-week years move them by a week).
YEAR_EARLIER_DAYS = range(335, 396)
PREVIOUS_PERIOD_DAYS: dict[StatementFrequency, range] = {"quarterly": range(75, 106), "annual": YEAR_EARLIER_DAYS}

# How many statement lines a summary shows; the payload itself keeps everything.
_SUMMARY_STATEMENT_LINES = 15
_KEY_STATEMENT_LINES = (
    "TotalRevenue",
    "GrossProfit",
    "OperatingIncome",
    "EBITDA",
    "NetIncome",
    "DilutedEPS",
    "TotalAssets",
    "TotalLiabilitiesNetMinorityInterest",
    "StockholdersEquity",
    "TotalDebt",
    "CashAndCashEquivalents",
    "OperatingCashFlow",
    "CapitalExpenditure",
    "FreeCashFlow",
)
# The lines the computed facts read (ratios, margins, per-share figures): kept when a statement is cut.
ESSENTIAL_STATEMENT_LINES = (
    *_KEY_STATEMENT_LINES,
    "CostOfRevenue",
    "OperatingExpense",
    "BasicEPS",
    "CurrentAssets",
    "CurrentLiabilities",
    "OrdinarySharesNumber",
    "RepurchaseOfCapitalStock",
    "CashDividendsPaid",
)


class StatementLine(StrictData):
    name: str = Field(description="Yahoo Finance's line item key, e.g. TotalRevenue.")
    values: list[float | None] = Field(description="One value per period, aligned with `periods`.")


class FinancialStatement(MarketDataResult):
    statement: StatementKind
    frequency: StatementFrequency
    periods: list[date] = Field(description="Period end dates, newest first.")
    lines: list[StatementLine]
    asked: int | None = Field(
        default=None,
        description="How many of the newest periods were asked for; the older ones are kept only as the bases "
        "their growth is measured against. None: every period was asked for. Set when the router cuts a "
        "statement to the periods a question asks for.",
    )

    @property
    def asked_periods(self) -> list[date]:
        """The periods asked for: the ones titles, charts and answers are about."""
        return self.periods if self.asked is None else self.periods[: self.asked]

    def covering(self, *, count: int | None, start: date | None, end: date | None) -> FinancialStatement:
        """The periods that end within `start`..`end` (inclusive; None is open), the newest `count` of them,
        and after them the bases their growth needs: the periods ending up to about a year before the oldest
        one asked (the previous period, and for a quarter the same quarter a year earlier), as far as the
        statement goes back. "Revenue growth over the last 3 quarters" is three growth rates, which take
        four quarters at least.

        `asked` counts the periods asked for. Lines without any value in them are dropped; `as_of` becomes
        the newest period kept. No period asked for is an empty statement, which the caller reports as no
        data.
        """
        asked = [
            i
            for i, period_end in enumerate(self.periods)
            if (start is None or period_end >= start) and (end is None or period_end <= end)
        ][:count]
        notes = list(self.notes)
        if count is not None and len(asked) < count:
            # "The last 8 quarters" when Yahoo keeps 5: said, so the answer says it too.
            notes.append(f"{count} periods were asked for; Yahoo Finance has {len(asked)} of them.")
        if len(asked) == len(self.periods):
            return self.model_copy(update={"notes": notes}) if notes != self.notes else self
        kept = _with_growth_bases(asked, self.periods)
        lines = [
            StatementLine(name=line.name, values=[line.values[i] for i in kept])
            for line in self.lines
            if any(line.values[i] is not None for i in asked)
        ]
        periods = [self.periods[i] for i in kept]
        as_of = datetime.combine(periods[0], time.min, UTC) if periods else self.as_of
        return self.model_copy(
            update={"periods": periods, "lines": lines, "as_of": as_of, "asked": len(asked), "notes": notes}
        )

    def summary_lines(self) -> list[str]:
        by_name = {line.name: line for line in self.lines}
        chosen = [by_name[name] for name in _KEY_STATEMENT_LINES if name in by_name]
        if not chosen:
            chosen = self.lines[:_SUMMARY_STATEMENT_LINES]
        header = f"{self.frequency} {self.statement.replace('_', ' ')} statement, periods ending " + ", ".join(
            str(period) for period in self.asked_periods
        )
        bases = self.periods[len(self.asked_periods) :]
        if bases:
            header += "; then, not asked for and given only as growth bases, " + ", ".join(map(str, bases))
        rows = [f"{humanize(line.name)}: " + ", ".join(fmt(value) for value in line.values) for line in chosen]
        return [header, *rows]


class EarningsEvent(StrictData):
    date: datetime
    eps_estimate: float | None = None
    eps_reported: float | None = None
    surprise_percent: float | None = None


class Earnings(MarketDataResult):
    upcoming: list[EarningsEvent] = Field(description="Scheduled reports, soonest first.")
    reported: list[EarningsEvent] = Field(description="Past reports, newest first.")
    asked: int | None = Field(
        default=None,
        description="How many of the newest past reports were asked for; older ones are kept only as the "
        "bases of their year-over-year growth. None: every report was asked for.",
    )

    @property
    def asked_reported(self) -> list[EarningsEvent]:
        """The past reports asked for."""
        return self.reported if self.asked is None else self.reported[: self.asked]

    def covering(self, *, count: int | None, start: date | None, end: date | None) -> Earnings:
        """The reports dated within `start`..`end` (inclusive; None is open), the newest `count` past ones
        (`asked` counts them), then the past reports up to about a year before the oldest of them, the bases
        of their year-over-year growth. Scheduled reports stay unless a range that ends before them is asked
        for."""

        def within(event: EarningsEvent) -> bool:
            day = event.date.date()
            return (start is None or day >= start) and (end is None or day <= end)

        asked = [i for i, event in enumerate(self.reported) if within(event)][:count]
        kept = _with_growth_bases(asked, [event.date.date() for event in self.reported])
        return self.model_copy(
            update={
                "upcoming": [event for event in self.upcoming if within(event)],
                "reported": [self.reported[i] for i in kept],
                "asked": None if len(asked) == len(self.reported) else len(asked),
            }
        )

    def summary_lines(self) -> list[str]:
        lines = [
            f"next report {event.date.date()}: EPS estimate {fmt(event.eps_estimate)}" for event in self.upcoming[:1]
        ]
        asked = len(self.asked_reported)
        lines.extend(
            f"reported {event.date.date()}{'' if i < asked else ' (not asked for; a growth base)'}: "
            f"EPS {fmt(event.eps_reported)} vs estimate {fmt(event.eps_estimate)} "
            f"(surprise {fmt_pct(event.surprise_percent)})"
            for i, event in enumerate(self.reported)
        )
        return lines


def _with_growth_bases(asked: list[int], ends: list[date]) -> list[int]:
    """The indices `asked` of `ends` (newest first), then those of the older ends up to about a year before
    the oldest one asked: what the growth of each period asked is measured against."""
    if not asked:
        return []
    oldest = ends[asked[-1]]
    bases = [j for j in range(asked[-1] + 1, len(ends)) if (oldest - ends[j]).days < YEAR_EARLIER_DAYS.stop]
    return [*asked, *bases]
