"""Cron schedules in a time zone: which instants a watchlist's schedule fires at, and how close they come.

A schedule is a 5-field cron expression read as wall-clock time in an IANA zone (`30 7 * * 1-5` in
Europe/Paris is 07:30 in Paris on weekdays, winter and summer). Around a change of the clocks a wall-clock
time is read as Python reads it (fold 0): a time the clocks skip (02:30 on the March night in Paris) comes
as many minutes after the jump as it was after 02:00, that is 03:30 (one firing if the schedule also
fires then); a time the clocks pass twice (02:30 on the October night) fires the first time only. Every
firing is a UTC instant, so the scheduler never needs to know the zone.

The smallest gap between two firings is found without walking a year minute by minute: away from the
clocks' changes a schedule's gaps are those of its times of day and of its days, and around each change
in the coming year (found in the zone's rules) the firings themselves are walked and measured.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter

CRON_FIELDS = 5
MAX_CRON_CHARS = 100
HORIZON = timedelta(days=400)  # more than a year: every day pattern and every change of the clocks
# A wall-clock time the clocks skip is read later by the jump (an hour almost everywhere): firings are
# held this long before being given out, so that they come in order.
_REORDER = timedelta(days=1)
_MINUTE_VALUES, _HOUR_VALUES = range(60), range(24)


class InvalidSchedule(ValueError):
    """Not a 5-field cron expression we can fire."""


class InvalidTimezone(ValueError):
    """Not an IANA time zone this machine knows."""


@dataclass(frozen=True)
class TooClose:
    """Two consecutive firings closer than the minimum interval (local times), and the seconds between them."""

    first: datetime
    second: datetime
    gap_s: int


def zone_named(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidTimezone(f"unknown time zone {name!r}; use an IANA name such as 'Europe/Paris'") from None


@dataclass(frozen=True)
class Schedule:
    cron: str
    zone: ZoneInfo

    @classmethod
    def parse(cls, cron: str, timezone: str) -> Schedule:
        """The schedule, its fields single-spaced; InvalidSchedule or InvalidTimezone otherwise."""
        fields = cron.split()
        if len(fields) != CRON_FIELDS:
            raise InvalidSchedule(
                f"a cron expression has exactly 5 fields (minute hour day month weekday); got {cron!r}"
            )
        # Hashed (H) and random (R) fields would fire at times that differ from one reading to the next.
        if any(part[:1].lower() in ("h", "r") for field in fields for part in field.split(",")):
            raise InvalidSchedule(f"hashed (H) and random (R) fields are not supported; got {cron!r}")
        normalized = " ".join(fields)
        if len(normalized) > MAX_CRON_CHARS:
            raise InvalidSchedule(f"a cron expression of at most {MAX_CRON_CHARS} characters")
        if not croniter.is_valid(normalized, strict=True):
            raise InvalidSchedule(f"{cron!r} is not a valid cron expression")
        schedule = cls(normalized, zone_named(timezone))
        try:
            next(schedule.firings(datetime.now(UTC)))
        except CroniterError:
            raise InvalidSchedule(f"{cron!r} never fires") from None
        return schedule

    def next_after(self, moment: datetime) -> datetime:
        """The first firing strictly after `moment` (aware), in UTC."""
        return next(self.firings(moment))

    def firings(self, after: datetime) -> Iterator[datetime]:
        """The firings strictly after `after` (aware), in order, as UTC instants, endlessly."""
        walls = croniter(self.cron, after.astimezone(self.zone).replace(tzinfo=None) - _REORDER)
        pending: list[datetime] = []
        last = after.astimezone(UTC)
        while True:
            wall: datetime = walls.get_next(datetime)
            instant = wall.replace(tzinfo=self.zone).astimezone(UTC)
            heapq.heappush(pending, instant)
            while pending and pending[0] <= instant - _REORDER:
                ready = heapq.heappop(pending)
                if ready > last:
                    last = ready
                    yield ready

    def closest_firings(self, minimum: timedelta, start: datetime) -> TooClose | None:
        """Two consecutive firings within a year of `start` closer than `minimum`, if any (the closest
        pair away from the clocks' changes, or the first such pair around one)."""
        if minimum <= timedelta(0):
            return None
        too_close = self._closest_wall_clock_pair(start)
        if too_close is not None and too_close.gap_s < minimum.total_seconds():
            return too_close
        for change in clock_changes(self.zone, start, start + HORIZON):
            previous: datetime | None = None
            for instant in self.firings(change - minimum - _REORDER):
                if previous is not None and instant - previous < minimum:
                    gap_s = round((instant - previous).total_seconds())
                    return TooClose(previous.astimezone(self.zone), instant.astimezone(self.zone), gap_s)
                if instant > change + minimum + _REORDER:
                    break
                previous = instant
        return None

    def _closest_wall_clock_pair(self, start: datetime) -> TooClose | None:
        """The closest two consecutive firings as the wall clock counts (no change of the clocks): within
        a day (its times of day), or from a day's last time to the next firing day's first."""
        minutes, hours = croniter.expand(self.cron)[0][:2]
        times = sorted(
            timedelta(hours=hour, minutes=minute)
            for hour in (_HOUR_VALUES if hours == ["*"] else hours)
            for minute in (_MINUTE_VALUES if minutes == ["*"] else minutes)
        )
        days = self._firing_days(start)
        if not days:
            return None
        pairs = [(days[0] + a, days[0] + b) for a, b in pairwise(times)]
        if len(days) > 1:
            day, next_day = min(pairwise(days), key=lambda pair: pair[1] - pair[0])
            pairs.append((day + times[-1], next_day + times[0]))
        if not pairs:
            return None
        first, second = min(pairs, key=lambda pair: pair[1] - pair[0])  # naive: as the wall clock counts
        gap_s = round((second - first).total_seconds())
        return TooClose(first.replace(tzinfo=self.zone), second.replace(tzinfo=self.zone), gap_s)

    def _firing_days(self, start: datetime) -> list[datetime]:
        """The days the schedule fires on in the coming horizon (midnights, naive)."""
        day_fields = " ".join(self.cron.split()[2:])
        walls = croniter(f"0 0 {day_fields}", start.astimezone(self.zone).replace(tzinfo=None))
        end = start.astimezone(self.zone).replace(tzinfo=None) + HORIZON
        days: list[datetime] = []
        while not days or days[-1] <= end:
            days.append(walls.get_next(datetime))
        return days


def clock_changes(zone: ZoneInfo, start: datetime, end: datetime) -> list[datetime]:
    """The instants (to the hour) at which `zone`'s offset from UTC changes between `start` and `end`."""
    changes = []
    moment = start.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    offset = moment.astimezone(zone).utcoffset()
    while moment < end:
        moment += timedelta(hours=1)
        current = moment.astimezone(zone).utcoffset()
        if current != offset:
            changes.append(moment)
            offset = current
    return changes
