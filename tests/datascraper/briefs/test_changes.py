"""What a brief finds, by the data tools alone: the real market data server and filing tools (in memory),
the real yfinance over canned Yahoo replies (anchored at Friday 2025-06-13) and the fake SEC on loopback."""

from __future__ import annotations

import asyncio
import weakref
from datetime import UTC, datetime, timedelta

from datascraper.briefs import detect
from datascraper.briefs.detect import detect_changes
from datascraper.briefs.research import brief_checkpoint, brief_question, within_budget
from datascraper.briefs.schemas import BriefWindow, DetectedChanges
from datascraper.models_config import get_research_config
from datascraper.research_engine.state import ResearchCheckpoint
from tests.datascraper.conftest import filed, sec_server  # noqa: F401 (the fixtures)

FRIDAY_NIGHT = datetime(2025, 6, 13, 22, tzinfo=UTC)
FORM4S = {"0000320193-25-000038", "0000320193-25-000041"}


def window(since: datetime, until: datetime, *, first: bool = False, **fields: object) -> BriefWindow:
    return BriefWindow(since=since, until=until, first=first, **fields)


async def test_a_first_brief_compares_the_latest_official_close_with_the_one_before(filed):  # noqa: F811
    # Friday evening in New York is past the session, but Friday is still the brief's day there: its bar
    # may be the running price, so Thursday's close is the latest official one.
    detected = await detect_changes(["AAPL"], window(FRIDAY_NIGHT - timedelta(days=1), FRIDAY_NIGHT, first=True))

    [price] = [change for change in detected.changes if change.kind == "price"]
    assert "on 2025-06-12 (official close)" in price.summary and "from " in price.summary
    assert "on 2025-06-11" in price.summary and "USD" in price.summary
    assert price.key == "price:AAPL:2025-06-12"
    [evidence] = detected.evidence
    [history] = [result for result in evidence.market if result.tool == "get_price_history"]
    assert [bar["date"][:10] for bar in history.data["bars"]] == ["2025-06-11", "2025-06-12"]


async def test_a_window_without_a_new_close_has_no_price_line(filed):  # noqa: F811
    saturday, sunday = datetime(2025, 6, 14, 12, tzinfo=UTC), datetime(2025, 6, 15, 12, tzinfo=UTC)

    detected = await detect_changes(["AAPL"], window(saturday, sunday))

    assert detected.changes == [] and not detected.material


async def test_a_small_move_is_reported_but_not_material(filed):  # noqa: F811
    sunday = datetime(2025, 6, 15, 12, tzinfo=UTC)

    detected = await detect_changes(["AAPL"], window(sunday - timedelta(days=1), sunday, first=True, price_move_pct=50))

    [price] = detected.changes
    assert price.kind == "price" and not price.material and not detected.material


async def test_filings_are_reported_once_by_accession_with_8k_items_exhibit_headline_and_insider_trades(
    filed,  # noqa: F811
):
    spring = window(datetime(2025, 1, 29, tzinfo=UTC), datetime(2025, 4, 30, tzinfo=UTC))

    detected = await detect_changes(["AAPL"], spring)

    filings = {change.source.accession: change for change in detected.changes if change.kind == "filing"}
    assert set(filings) == {"0000320193-25-000007", "0000320193-25-000008", *FORM4S}
    eight_k = filings["0000320193-25-000007"]
    assert 'exhibit 99: "Apple reports first quarter results"' in eight_k.summary
    assert "item 2.02" in eight_k.summary and eight_k.source.publisher == "SEC EDGAR"
    sale = filings["0000320193-25-000041"]
    assert "Levinson Arthur D (director) disposed of 50,000 Common Stock at 223.85 on 2025-04-02" in sale.summary
    again = await detect_changes(
        ["AAPL"], spring.model_copy(update={"reported": frozenset(c.key for c in detected.changes)})
    )
    assert [change for change in again.changes if change.kind == "filing"] == []


async def test_ratings_changed_news_published_and_an_earnings_date_ahead_come_from_their_windows(filed):  # noqa: F811
    # The fake's rating history: one every nine days back from 2025-06-13, maintained ones included.
    detected = await detect_changes(
        ["AAPL"], window(datetime(2025, 5, 20, tzinfo=UTC), datetime(2025, 6, 1, tzinfo=UTC))
    )

    ratings = [change.summary for change in detected.changes if change.kind == "analyst"]
    assert ratings == ["Loop Capital downgraded AAPL on 2025-05-26: Buy to Hold."]  # Jefferies' is 05-17
    news = [change for change in detected.changes if change.kind == "news"]
    assert news and all(datetime(2025, 5, 20, tzinfo=UTC) < datetime.fromisoformat(c.source.date) for c in news)
    assert news[0].source.url.startswith("https://finance.yahoo.com/news/") and news[0].source.publisher
    july = window(datetime(2025, 7, 19, tzinfo=UTC), datetime(2025, 7, 20, tzinfo=UTC))
    [earnings] = [change for change in (await detect_changes(["AAPL"], july)).changes if change.kind == "earnings"]
    assert (
        earnings.summary.startswith("AAPL reports earnings on 2025-07-31")
        and earnings.key == "earnings:AAPL:2025-07-31"
    )
    reported = july.model_copy(update={"reported": frozenset({earnings.key})})
    assert [c for c in (await detect_changes(["AAPL"], reported)).changes if c.kind == "earnings"] == []


async def test_a_symbol_that_cannot_be_checked_is_recorded_and_the_others_still_count(filed):  # noqa: F811
    detected = await detect_changes(
        ["NOSUCH", "AAPL"], window(FRIDAY_NIGHT - timedelta(days=1), FRIDAY_NIGHT, first=True)
    )

    assert {item.check for item in detected.unchecked if item.symbol == "NOSUCH"} >= {"prices", "filings", "news"}
    assert any(change.symbol == "AAPL" for change in detected.changes)
    question = brief_question("Tech", ["NOSUCH", "AAPL"], window(FRIDAY_NIGHT, FRIDAY_NIGHT), detected)
    assert "Not checked (say so): NOSUCH prices (no_data:" in question


async def test_the_runs_findings_are_the_results_the_changes_were_read_from_within_the_token_budget(filed):  # noqa: F811
    detected = await detect_changes(
        ["AAPL"], window(datetime(2025, 5, 20, tzinfo=UTC), datetime(2025, 6, 13, 22, tzinfo=UTC))
    )

    saved = ResearchCheckpoint.model_validate(
        brief_checkpoint(detected, today=FRIDAY_NIGHT.date(), config=get_research_config())
    )
    [finding] = saved.findings
    assert finding.status == "answered" and finding.market_data is not None
    assert {result.tool for result in finding.market_data.results} >= {"get_price_history", "get_news"}
    assert saved.next_steps == [] and saved.trace[0].confidence.score > 0
    fitted, left_out = within_budget(detected, 1500)
    assert left_out and {change.kind for change in left_out} <= {"news", "analyst"}
    assert all(change.kind not in {c.kind for c in left_out} for change in fitted.changes)


async def test_the_briefs_of_a_process_share_one_limit_on_symbols_checked_at_once(monkeypatch):
    # A morning of many watchlists queues its checks at this limit, before any call's timeout starts: two
    # briefs checking at once never have more symbols in flight than the process allows.
    in_flight, most = 0, 0

    async def checked(symbol: str, window: BriefWindow) -> DetectedChanges:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return DetectedChanges()

    monkeypatch.setattr(detect, "SYMBOLS_AT_ONCE", 3)
    monkeypatch.setattr(detect, "_limiters", weakref.WeakKeyDictionary())
    monkeypatch.setattr(detect, "_symbol_changes", checked)
    brief_window = window(FRIDAY_NIGHT - timedelta(days=1), FRIDAY_NIGHT)

    await asyncio.gather(*(detect.detect_changes(["A", "B", "C", "D", "E"], brief_window) for _ in range(4)))

    assert most == 3
