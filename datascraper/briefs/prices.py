"""The price line of a brief: the move between two official closes, from Yahoo's daily bars.

A daily bar is an official close once its session's day is over where it trades: only bars of days before
the window's end (read in the bar's own time zone) count, so a brief made while a market is open never
reports its running price as a close. The latest such close is compared with the one before it for a first
brief, and with the last close before `since` for the next ones: consecutive briefs chain their closes,
and a window without a new close (a weekend) has no price line.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from datascraper.briefs.schemas import BriefWindow, Change, ChangeSource
from datascraper.briefs.tool_calls import call_tool
from datascraper.formatting import fmt_pct
from datascraper.market_data.finding_schemas import ToolResult
from datascraper.market_data.schemas import PriceBar, PriceHistory

# Bars asked before the window's start (or before its end, for a short window): enough to find a close
# before it after a long weekend or a week's holiday.
LOOKBACK = timedelta(days=14)


async def price_change(symbol: str, window: BriefWindow) -> tuple[Change, ToolResult] | None:
    """The move between the two official closes the window compares, with the bars it is read from; None
    when there is no new close (or it was reported already)."""
    start = (min(window.since, window.until - LOOKBACK) - LOOKBACK).date()
    asked = {"symbol": symbol, "start": start.isoformat(), "end": window.until.date().isoformat(), "interval": "1d"}
    payload = await call_tool("get_price_history", asked)
    history = PriceHistory.model_validate(payload)
    closes = [bar for bar in history.bars if bar.close is not None and _day(bar) < _day_in(window.until, bar)]
    if len(closes) < 2:
        return None
    latest = closes[-1]
    if window.first:
        base = closes[-2]
    else:
        before = [bar for bar in closes if _day(bar) < _day_in(window.since, bar)]
        base = before[-1] if before else closes[0]
    key = f"price:{symbol}:{_day(latest)}"
    if base is latest or key in window.reported:
        return None
    cut = _cut(history, closes[closes.index(base) : closes.index(latest) + 1])
    assert cut.change_percent is not None
    title = f"Yahoo Finance — {symbol} price history ({_day(base)} to {_day(latest)})"
    result = ToolResult(
        symbol=symbol, tool="get_price_history", data=cut.model_dump(mode="json"), as_of=latest.date,
        url=history.url, title=title,
    )  # fmt: skip
    summary = (
        f"{symbol} closed at {history.price_text(latest.close)} {history.currency_text()} on {_day(latest)} "
        f"(official close), {fmt_pct(cut.change_percent)} from {history.price_text(base.close)} on {_day(base)}."
    )
    change = Change(
        symbol=symbol,
        kind="price",
        summary=summary,
        source=ChangeSource(url=history.url, title=title, publisher="Yahoo Finance", date=_day(latest).isoformat()),
        key=key,
        material=abs(cut.change_percent) >= window.price_move_pct,
    )
    return change, result


def _day(bar: PriceBar) -> date:
    return bar.date.date()


def _day_in(moment: datetime, bar: PriceBar) -> date:
    """`moment`'s day where the bar's session is dated."""
    return moment.astimezone(bar.date.tzinfo).date()


def _cut(history: PriceHistory, bars: list[PriceBar]) -> PriceHistory:
    """The history cut to `bars` (first to last close compared), its change and range measured on them."""
    first, last = bars[0].close, bars[-1].close
    assert first is not None and last is not None
    highs = [bar.high for bar in bars if bar.high is not None]
    lows = [bar.low for bar in bars if bar.low is not None]
    return history.model_copy(
        update={
            "as_of": bars[-1].date,
            "period": None,
            "start": _day(bars[0]),
            "end": _day(bars[-1]),
            "bars": bars,
            "total_bars": len(bars),
            "downsampled": False,
            "first_close": first,
            "last_close": last,
            "change_percent": (last / first - 1) * 100,
            "period_high": max(highs) if highs else None,
            "period_low": min(lows) if lows else None,
            "notes": [],
        }
    )
