"""Yahoo's values made safe for a typed result: finite numbers, trimmed text, aware moments, news entries,
and prices in a currency's main unit (London quotes in pence, Johannesburg in cents, Tel Aviv in agorot).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from datascraper.market_data.schemas import NewsItem
from datascraper.schemas import SubUnit

logger = logging.getLogger(__name__)

# Quote currencies that are hundredths of the main one: London in pence, Johannesburg in cents, Tel Aviv in
# agorot. Prices are given in the main unit, so that a market cap or a comparison never comes out 100x, and
# carry the sub-unit, so that a reader is shown both: 72.50p (£0.7250).
PENCE = SubUnit(code="GBp", name="pence", suffix="p", main="GBP", main_symbol="£")
RAND_CENTS = SubUnit(code="ZAc", name="cents", suffix="c", main="ZAR", main_symbol="R")
AGOROT = SubUnit(code="ILA", name="agorot", suffix=" agorot", main="ILS", main_symbol="₪")
SUB_UNITS = {"GBp": PENCE, "GBX": PENCE, "ZAc": RAND_CENTS, "ZAC": RAND_CENTS, "ILA": AGOROT}


def num(value: Any) -> float | None:
    """A finite float, or None: NaN, inf, None and non-numbers never reach a result."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def integer(value: Any) -> int | None:
    number = num(value)
    return int(number) if number is not None else None


def text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    return text or None


def main_unit(currency: str | None) -> tuple[str | None, float]:
    """The main currency of a quote currency and the divisor into it: GBp is (GBP, 100), USD is (USD, 1)."""
    unit = SUB_UNITS.get(currency or "")
    return (unit.main, float(unit.per_main)) if unit is not None else (currency, 1.0)


def sub_unit_note(symbol: str, unit: SubUnit, example: float | None) -> str:
    """What a result converted from a sub-unit says about it."""
    shown = f", e.g. {unit.shown(example)}" if example is not None else ""
    return (
        f"Yahoo Finance quotes {symbol} in {unit.name} ({unit.code}); prices here are in {unit.main} "
        f"({unit.per_main} {unit.name} to 1 {unit.main}), written with the {unit.name} first{shown}."
    )


def scaled(value: Any, divisor: float) -> float | None:
    number = num(value)
    return number / divisor if number is not None else None


def currency_or_none(symbol: str, lookup: Callable[[], Any]) -> str | None:
    """The currency from its own upstream call, or None when that call fails: the figures already fetched
    are worth more than the currency label, so a failed lookup must not fail them."""
    try:
        return text(lookup())
    except Exception as exc:
        logger.warning("Yahoo Finance currency lookup for %s failed: %r", symbol, exc)
        return None


def moment(value: Any) -> datetime:
    """A pandas or Python timestamp as an aware datetime; Yahoo's naive dates are UTC."""
    moment: datetime = pd.Timestamp(value).to_pydatetime()
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def news_item(article: Mapping[str, Any]) -> NewsItem | None:
    """One yfinance news entry (`{"id", "content": {...}}`) as a NewsItem; None when it has no title."""
    content = article.get("content") or {}
    title = text(content.get("title"))
    if title is None:
        return None
    link = (content.get("canonicalUrl") or {}).get("url") or (content.get("clickThroughUrl") or {}).get("url")
    published = text(content.get("pubDate"))
    return NewsItem(
        title=title,
        publisher=text((content.get("provider") or {}).get("displayName")),
        published_at=moment(published) if published else None,
        url=text(link),
        summary=text(content.get("summary")),
    )
