"""Market data through the chat API: sources carry their as-of into the event stream and the stored answer,
and `chart` events are stored and replayed like every other event.

The live app runs the real router; the market data client is the in-memory server over the fake yfinance.
"""

from __future__ import annotations

import pytest

from tests.chat.test_runs import ask, wait_finished
from tests.datascraper.conftest import market_data  # noqa: F401 (the fixture)
from tests.datascraper.research_support import script_analysis, script_synthesis, sub
from tests.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)

APPLE_MONTH = sub("How did Apple's share price move over the last month?", "numerical", ["AAPL"], "price_history")
HISTORY_URL = "https://finance.yahoo.com/quote/AAPL/history"


async def stored_sources(api, conversation_id: str) -> list[dict]:
    conversation = (await api.get(f"/api/conversations/{conversation_id}")).json()
    return conversation["messages"][-1]["sources"]


async def test_a_quote_answer_stores_its_source_with_the_quotes_time(api, fake_openai, market_data):  # noqa: F811
    accepted = await ask(api, "What is AAPL trading at?", mode="auto")
    await wait_finished(api, accepted["run_id"])

    events = await read_events(api, accepted["events_url"])

    [source] = next(e for e in events if e.type == "sources").data["sources"]
    assert (source["url"], source["as_of"]) == ("https://finance.yahoo.com/quote/AAPL", "2025-06-13T20:00:00+00:00")
    assert await stored_sources(api, accepted["conversation_id"]) == [source]
    assert "chart" not in {e.type for e in events}


async def test_a_price_history_run_stores_and_replays_its_chart_citing_the_history_source(
    api, fake_openai, market_data, research_env  # noqa: F811
):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, APPLE_MONTH)
    script_synthesis(fake_openai, "Apple closed at 196.45 USD on 2025-06-13 [1].")
    accepted = await ask(api, "How has Apple's stock done over the last month?", mode="research")
    run = await wait_finished(api, accepted["run_id"])
    assert run["status"] == "done"

    events = await read_events(api, accepted["events_url"])  # a late subscriber: everything is replayed

    types = [e.type for e in events]
    assert types.count("chart") == 1 and types.index("chart") < types.index("delta")
    chart = next(e for e in events if e.type == "chart").data
    sources = next(e for e in events if e.type == "sources").data["sources"]
    [history] = [s for s in sources if s["url"] == HISTORY_URL]
    assert history["as_of"] == "2025-06-13"
    assert (chart["id"], chart["kind"], chart["as_of"], chart["source_n"]) == ("c1", "line", "2025-06-13", history["n"])
    [series] = chart["series"]
    assert series["name"] == "AAPL" and len(series["points"]) == 21
    assert series["points"][-1][0] == "2025-06-13" and all(isinstance(y, float) for _, y in series["points"])
    assert await stored_sources(api, accepted["conversation_id"]) == sources


QUARTERLY_COMPARISON = "Compare AAPL and MSFT revenue growth over the last 3 quarters"


async def test_a_quarterly_comparison_stores_a_growth_rate_for_each_quarter_asked_with_the_periods_of_its_inputs(
    api, fake_openai, market_data, research_env  # noqa: F811
):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(
        fake_openai,
        sub("Apple's revenue over the last 3 quarters", "numerical", ["AAPL"], "income_statement",
            frequency="quarterly", periods=3),
        sub("Microsoft's revenue over the last 3 quarters", "numerical", ["MSFT"], "income_statement",
            frequency="quarterly", periods=3),
    )  # fmt: skip
    # 10.67% is the growth of the oldest quarter asked, over a quarter that was not asked for
    script_synthesis(fake_openai, "Apple's revenue grew 10.67% in the quarter to September 2024 [1].")
    accepted = await ask(api, QUARTERLY_COMPARISON, mode="research")
    run = await wait_finished(api, accepted["run_id"])
    assert run["status"] == "done"

    events = await read_events(api, accepted["events_url"])

    apple_growth = [
        (fact["kind"], [(i["period"], i["value"], i["source"]["n"]) for i in fact["inputs"]], fact["value"])
        for fact in run["facts"]
        if fact["kind"] in ("growth", "yoy_growth") and fact["inputs"][0]["symbol"] == "AAPL"
    ]
    assert apple_growth == [
        ("growth", [("2025-03-29", 95_359e6, 1), ("2024-12-28", 124_300e6, 1)], pytest.approx(-23.283186, abs=1e-6)),
        ("yoy_growth", [("2025-03-29", 95_359e6, 1), ("2024-03-30", 90_753e6, 1)], pytest.approx(5.075314, abs=1e-6)),
        ("growth", [("2024-12-28", 124_300e6, 1), ("2024-09-28", 94_930e6, 1)], pytest.approx(30.938586, abs=1e-6)),
        ("growth", [("2024-09-28", 94_930e6, 1), ("2024-06-29", 85_777e6, 1)], pytest.approx(10.670693, abs=1e-6)),
    ]  # (95,359 - 124,300) / 124,300; (95,359 - 90,753) / 90,753; (124,300 - 94,930) / 94,930; (94,930 - 85,777) / 85,777
    assert run["signals"]["numbers"]["unmatched"] == 0 and run["signals"]["numbers"]["computed"] == 1
    [apple, _] = next(e for e in events if e.type == "sources").data["sources"]
    assert (apple["title"], apple["as_of"]) == (
        "Yahoo Finance — AAPL income statement (quarterly), 3 periods ending 2024-09-28 to 2025-03-29, "
        "with 2 earlier for growth; Q4 FY2024 (Jul–Sep 2024) to Q2 FY2025 (Jan–Mar 2025)",
        "2025-03-29",
    )
    apple_chart = next(e.data for e in events if e.type == "chart" and e.data["series"][0]["name"] == "AAPL")
    assert apple_chart["series"][0]["points"] == [
        ["Q4 FY2024 (Jul–Sep 2024)", 94_930e6],
        ["Q1 FY2025 (Oct–Dec 2024)", 124_300e6],
        ["Q2 FY2025 (Jan–Mar 2025)", 95_359e6],
    ]
