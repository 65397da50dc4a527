"""A price history from yfinance's frame of bars: cut to a prompt's size, in the currency's main unit, and
with the stock splits that make Yahoo's closes differ from the prices as traded.

Yahoo's `close` (yfinance's `Close` with `auto_adjust=False`) is split-adjusted: after AAPL's 4:1 split of
2020-08-31, its close of 2020-01-02 reads 75.09, though it traded at 300.35. Its `adjclose` is adjusted for
dividends too. A bar before a split keeps Yahoo's close and gains `traded_close`, the close times the
ratios of the splits since. Yahoo's reply names the splits within the range asked (its `events`); the ones
after it take a second request, from the day after the range to today, made only for a range that ended
before today (`YahooFinanceAdapter._splits_after`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime
from fractions import Fraction

import numpy as np
import pandas as pd

from datascraper.market_data.schemas import PriceBar, PriceHistory, StockSplit
from datascraper.market_data.values import SUB_UNITS, integer, main_unit, moment, num, sub_unit_note

# Output caps keep a tool result small enough for a prompt.
MAX_HISTORY_BARS = 250
_PRICE_COLUMNS = ("Open", "High", "Low", "Close", "Adj Close")


@dataclass(frozen=True)
class HistoryAsked:
    """What a price history was asked for, and where it is shown."""

    symbol: str
    period: str | None
    start: date | None
    end: date | None
    interval: str
    url: str


def splits_in(frame: pd.DataFrame) -> list[StockSplit]:
    """The stock splits of yfinance's `Stock Splits` column (a bar's split ratio, 0 on the others)."""
    if "Stock Splits" not in frame:
        return []
    ratios = ((ts, num(value)) for ts, value in frame["Stock Splits"].items())
    return [
        StockSplit(day=moment(ts).date(), ratio=_ratio(factor), factor=factor)
        for ts, factor in ratios
        if factor is not None and factor > 0
    ]


def _ratio(factor: float) -> str:
    """4.0 as "4:1", 1.5 as "3:2", a reverse split's 0.1 as "1:10"."""
    ratio = Fraction(factor).limit_denominator(1000)
    return f"{ratio.numerator}:{ratio.denominator}"


def price_history(
    asked: HistoryAsked,
    frame: pd.DataFrame,
    *,
    quoted: str | None,
    splits: list[StockSplit],
    notes: list[str],
    retrieved_at: datetime,
) -> PriceHistory:
    """The result for `frame` (yfinance's bars, not empty), quoted in currency `quoted` (GBp, USD, ...),
    with the `splits` from its first bar on."""
    total = len(frame)
    notes = list(notes)
    currency, divisor = main_unit(quoted)
    sub_unit = SUB_UNITS.get(quoted or "")
    if divisor > 1:
        frame = frame.assign(**{column: frame[column] / divisor for column in _PRICE_COLUMNS if column in frame})
    picked = frame
    if total > MAX_HISTORY_BARS:
        rows = np.unique(np.linspace(0, total - 1, MAX_HISTORY_BARS).round().astype(int))
        picked = frame.iloc[rows]
        notes.append(
            f"Down-sampled from {total} to {len(picked)} bars, evenly spaced with the first and last kept; "
            "the change, high and low use every bar."
        )
    bars = _bars(picked, splits)
    closes = [value for value in map(num, frame["Close"]) if value is not None]
    first_close, last_close = (closes[0], closes[-1]) if closes else (None, None)
    if sub_unit is not None:
        notes.append(sub_unit_note(asked.symbol, sub_unit, last_close))
    splits_note = _splits_note(asked.symbol, splits, bars)
    if splits_note:
        notes.append(splits_note)
    return PriceHistory(
        symbol=asked.symbol,
        currency=currency,
        as_of=bars[-1].date,
        retrieved_at=retrieved_at,
        url=asked.url,
        notes=notes,
        sub_unit=sub_unit,
        period=None if asked.start or asked.end else asked.period,
        start=asked.start,
        end=asked.end,
        interval=asked.interval,
        bars=bars,
        total_bars=total,
        downsampled=len(bars) < total,
        first_close=first_close,
        last_close=last_close,
        change_percent=num((last_close / first_close - 1) * 100) if first_close and last_close else None,
        period_high=num(frame["High"].max()),
        period_low=num(frame["Low"].min()),
        splits=splits,
    )


def _bars(frame: pd.DataFrame, splits: list[StockSplit]) -> list[PriceBar]:
    adjusted = frame["Adj Close"] if "Adj Close" in frame else [None] * len(frame)
    bars = []
    for ts, o, h, lo, c, a, v in zip(
        frame.index, frame["Open"], frame["High"], frame["Low"], frame["Close"], adjusted, frame["Volume"], strict=True
    ):
        day = moment(ts)
        factor = math.prod(split.factor for split in splits if split.day > day.date())
        close = num(c)
        traded = close * factor if close is not None and factor != 1 else None
        bars.append(
            PriceBar(
                date=day,
                open=num(o),
                high=num(h),
                low=num(lo),
                close=close,
                adj_close=num(a),
                traded_close=num(traded),
                volume=integer(v),
            )
        )
    return bars


def _splits_note(symbol: str, splits: list[StockSplit], bars: list[PriceBar]) -> str | None:
    """What the splits do to the closes, when some bar comes before one."""
    if not bars or not any(bar.traded_close is not None for bar in bars):
        return None
    last = bars[-1].date.date()
    named = ", ".join(
        f"{split.ratio} on {split.day}{' (after this range)' if split.day > last else ''}" for split in splits
    )
    return (
        f"{symbol}'s prices are split-adjusted, as Yahoo Finance gives them: it split {named}, and each price before "
        "a split is divided by its ratio. A bar before a split gives the close as traded that day as traded_close "
        "(the close times the ratios since)."
    )
