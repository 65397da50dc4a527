"""Briefs as the brief service leaves them when done, stored directly: a watchlist with the given channels
and one finished brief of it, with an answer and its sources."""

from __future__ import annotations

from datetime import UTC, datetime

from chat.models import Brief, Watchlist

ANSWER = "Apple filed an 8-K on results [1]; NVDA closed 2.1% higher at 181.20 USD [2]."
SOURCES = [
    {
        "n": 1,
        "title": "Apple Inc. 8-K, filed 2026-11-26",
        "url": "https://www.sec.gov/Archives/edgar/data/320193/a.htm",
        "kind": "filing",
    },
    {"n": 2, "title": "NVDA quote", "url": "https://finance.yahoo.com/quote/NVDA", "kind": "market_data"},
]


async def finished_brief(channels: list[dict], *, name: str = "Morning tech") -> Brief:
    watchlist = await Watchlist.objects.acreate(
        session_key="delivery-tests",
        name=name,
        symbols=["AAPL", "NVDA"],
        schedule="30 7 * * 1-5",
        timezone="Europe/Paris",
        channels=channels,
    )
    return await Brief.objects.acreate(
        watchlist=watchlist,
        status=Brief.Status.DONE,
        scheduled_for=datetime(2026, 11, 27, 6, 30, tzinfo=UTC),
        since=datetime(2026, 11, 26, 6, 30, tzinfo=UTC),
        until=datetime(2026, 11, 27, 6, 30, tzinfo=UTC),
        changes=[
            {
                "symbol": "AAPL",
                "kind": "filing",
                "summary": "8-K, Item 2.02",
                "source": {
                    "url": SOURCES[0]["url"],
                    "title": SOURCES[0]["title"],
                    "publisher": "SEC EDGAR",
                    "date": "2026-11-26",
                    "form": "8-K",
                    "accession": "0000320193-26-000101",
                },
                "key": "filing:0000320193-26-000101",
            }
        ],
        answer=ANSWER,
        sources=SOURCES,
    )
