"""Yahoo's dated events in a brief's window: an earnings date coming within the next days (once per date),
analyst rating changes (upgrades, downgrades, initiations) and news (headline, publisher, link)."""

from __future__ import annotations

from datetime import timedelta

from datascraper.briefs.schemas import BriefWindow, Change, ChangeSource
from datascraper.briefs.tool_calls import call_tool
from datascraper.formatting import fmt
from datascraper.market_data.finding_schemas import ToolResult
from datascraper.market_data.schemas import AnalystRatings, News
from datascraper.market_data.statement_schemas import Earnings

NEWS_ITEMS = 20  # the news tool's cap: a day's stories about one company
# A rating maintained or reiterated is not a change.
_ACTIONS = {"up": "upgraded", "down": "downgraded", "init": "initiated"}


async def earnings_date(symbol: str, window: BriefWindow) -> tuple[Change, ToolResult] | None:
    """The next earnings date when it falls within `window.earnings_days` of its end, once per date."""
    data = await call_tool("get_earnings", {"symbol": symbol})
    earnings = Earnings.model_validate(data)
    horizon = window.until + timedelta(days=window.earnings_days)
    ahead = [event for event in earnings.upcoming if window.until.date() <= event.date.date() <= horizon.date()]
    if not ahead:
        return None
    event = ahead[0]
    key = f"earnings:{symbol}:{event.date.date()}"
    if key in window.reported:
        return None
    cut = earnings.model_copy(update={"upcoming": [event], "reported": earnings.reported[:1]})
    title = f"Yahoo Finance — {symbol} earnings"
    estimate = f"; EPS estimate {fmt(event.eps_estimate)}" if event.eps_estimate is not None else ""
    change = Change(
        symbol=symbol,
        kind="earnings",
        summary=f"{symbol} reports earnings on {event.date.date()}{estimate}.",
        source=ChangeSource(url=earnings.url, title=title, publisher="Yahoo Finance", date=str(event.date.date())),
        key=key,
    )
    return change, _result(symbol, "get_earnings", cut.model_dump(mode="json"), earnings.url, title)


async def rating_changes(symbol: str, window: BriefWindow) -> tuple[list[Change], ToolResult | None]:
    """The upgrades, downgrades and initiations dated within the window, each once."""
    data = await call_tool("get_analyst_ratings", {"symbol": symbol})
    ratings = AnalystRatings.model_validate(data)
    title = f"Yahoo Finance — {symbol} analyst ratings"
    changes = []
    kept = []
    for rating in ratings.recent_changes:
        key = f"analyst:{symbol}:{rating.firm}:{rating.date.date()}:{rating.to_grade}"
        action = _ACTIONS.get(rating.action or "")
        if action is None or not window.covers(rating.date) or key in window.reported:
            continue
        grades = f"{rating.from_grade} to {rating.to_grade}" if rating.from_grade else f"{rating.to_grade}"
        source = ChangeSource(url=ratings.url, title=title, publisher=rating.firm, date=rating.date.date().isoformat())
        summary = f"{rating.firm} {action} {symbol} on {rating.date.date()}: {grades}."
        changes.append(Change(symbol=symbol, kind="analyst", summary=summary, source=source, key=key))
        kept.append(rating)
    if not kept:
        return [], None
    cut = ratings.model_copy(update={"recent_changes": kept})
    return changes, _result(symbol, "get_analyst_ratings", cut.model_dump(mode="json"), ratings.url, title)


async def news(symbol: str, window: BriefWindow) -> tuple[list[Change], ToolResult | None]:
    """The stories published within the window, each once (by its link)."""
    data = await call_tool("get_news", {"symbol": symbol, "limit": NEWS_ITEMS})
    stories = News.model_validate(data)
    kept = [
        item
        for item in stories.items
        if item.published_at is not None and item.url and window.covers(item.published_at)
        and f"news:{item.url}" not in window.reported
    ]  # fmt: skip
    if not kept:
        return [], None
    changes = [
        Change(
            symbol=symbol,
            kind="news",
            summary=f"{item.publisher or 'Yahoo Finance'}: {item.title}",
            source=ChangeSource(
                url=item.url or stories.url,
                title=item.title,
                publisher=item.publisher or "Yahoo Finance",
                date=item.published_at.isoformat() if item.published_at else None,
            ),
            key=f"news:{item.url}",
        )
        for item in kept
    ]
    cut = stories.model_copy(update={"items": kept})
    return changes, _result(
        symbol, "get_news", cut.model_dump(mode="json"), stories.url, f"Yahoo Finance — {symbol} news"
    )


def _result(symbol: str, tool: str, data: dict, url: str, title: str) -> ToolResult:
    return ToolResult(symbol=symbol, tool=tool, data=data, as_of=data.get("as_of"), url=url, title=title)  # type: ignore[arg-type]
