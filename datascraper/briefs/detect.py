"""Every check of a brief for every symbol, concurrently and each bounded: what changed, the tool results it
was read from, and what could not be checked (a symbol's failure never sinks the others, nor the brief)."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from datascraper.briefs import events, filings, prices
from datascraper.briefs.schemas import BriefWindow, Change, DetectedChanges, SymbolEvidence, Unchecked
from datascraper.briefs.tool_calls import CheckFailed
from datascraper.market_data.finding_schemas import ToolResult

# Symbols checked at once in a process, across all of its briefs: each takes about six calls, and Yahoo and
# the SEC limit how fast they are asked. A morning of many watchlists queues its checks here, before any
# call's own timeout starts, rather than at the data tools, where a call still waiting would time out.
SYMBOLS_AT_ONCE = 8
_limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()
# All of one symbol's checks (a call is bounded on its own; a busy day of 8-Ks makes several in a row).
SYMBOL_TIMEOUT_S = 60.0
_ORDER = {"price": 0, "filing": 1, "earnings": 2, "analyst": 3, "news": 4}
_CHECKS = ["prices", "filings", "insider trades", "earnings", "analyst ratings", "news", "all checks"]


async def detect_changes(symbols: Sequence[str], window: BriefWindow) -> DetectedChanges:
    """What changed for each symbol in `window`, in the symbols' order, each kind of change in turn."""
    limiter = _process_limiter()

    async def one(symbol: str) -> DetectedChanges:
        async with limiter:
            try:
                return await asyncio.wait_for(_symbol_changes(symbol, window), SYMBOL_TIMEOUT_S)
            except TimeoutError:
                reason = f"timeout: its checks took more than {SYMBOL_TIMEOUT_S:g} s"
                return DetectedChanges(unchecked=[Unchecked(symbol=symbol, check="all checks", reason=reason)])

    detected = DetectedChanges()
    for found in await asyncio.gather(*(one(symbol) for symbol in symbols)):
        detected.changes.extend(found.changes)
        detected.unchecked.extend(found.unchecked)
        detected.evidence.extend(found.evidence)
    return detected


def _process_limiter() -> asyncio.Semaphore:
    """The process's limit on symbols checked at once (one per event loop: a semaphore belongs to its loop)."""
    loop = asyncio.get_running_loop()
    limiter = _limiters.get(loop)
    if limiter is None:
        limiter = _limiters[loop] = asyncio.Semaphore(SYMBOLS_AT_ONCE)
    return limiter


async def _symbol_changes(symbol: str, window: BriefWindow) -> DetectedChanges:
    found = DetectedChanges()
    evidence = SymbolEvidence(symbol=symbol)

    async def check(what: str, run: Callable[[], Awaitable[Any]]) -> Any:
        try:
            return await run()
        except CheckFailed as exc:
            found.unchecked.append(Unchecked(symbol=symbol, check=what, reason=exc.reason))
            return None

    priced, rated, reported, stories, listed = await asyncio.gather(
        check("prices", lambda: prices.price_change(symbol, window)),
        check("analyst ratings", lambda: events.rating_changes(symbol, window)),
        check("earnings", lambda: events.earnings_date(symbol, window)),
        check("news", lambda: events.news(symbol, window)),
        check("filings", lambda: filings.new_filings(symbol, window)),
    )
    for single in (priced, reported):
        if single is not None:
            _add(found, evidence, [single[0]], single[1])
    for many in (rated, stories):
        if many is not None:
            _add(found, evidence, many[0], many[1])
    if listed is not None:
        filed, form4s = listed
        if form4s:
            await check("insider trades", lambda: filings.insider_trades(symbol, form4s, filed))
        found.changes.extend(filed.changes)
        evidence.filings.extend(filed.evidence)
    found.changes.sort(key=lambda change: _ORDER[change.kind])
    found.unchecked.sort(key=lambda item: _CHECKS.index(item.check))
    if evidence.market or evidence.filings:
        found.evidence.append(evidence)
    return found


def _add(found: DetectedChanges, evidence: SymbolEvidence, changes: list[Change], result: ToolResult | None) -> None:
    found.changes.extend(changes)
    if result is not None:
        evidence.market.append(result)
