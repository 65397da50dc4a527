"""Computed figures on the run, and the note under an answer whose market data figures do not trace, through
the ASGI app: the real pipeline against the fake OpenAI server and the market data server over the fake
yfinance."""

from __future__ import annotations

import pytest

from tests.chat.test_runs import answer_text, ask, wait_finished
from tests.datascraper.conftest import market_data  # noqa: F401  (the fixture)
from tests.datascraper.research_support import gaps, script_analysis, script_gaps, script_synthesis, sub
from tests.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "Compare Apple and Microsoft revenue growth"


def script_revenue_research(fake_openai, research_env, answer: str) -> None:
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(
        fake_openai,
        sub("What was Apple's annual revenue in fiscal 2021-2024?", "numerical", ["AAPL"], "income_statement"),
        sub("What was Microsoft's annual revenue in fiscal 2021-2024?", "numerical", ["MSFT"], "income_statement"),
    )
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, answer)


async def test_the_run_stores_the_facts_with_their_inputs_and_counts_a_quoted_one_as_matched(
    api, fake_openai, market_data, research_env  # noqa: F811
):
    script_revenue_research(fake_openai, research_env, "Apple's revenue grew 2.0% in fiscal 2024 [1].")
    accepted = await ask(api, QUESTION, mode="research")

    run = await wait_finished(api, accepted["run_id"])

    assert run["status"] == "done"
    assert run["signals"]["numbers"] == {"checked": 1, "computed": 1, "unmatched": 0, "unmatched_values": []}
    growth = next(fact for fact in run["facts"] if fact["id"] == "F1")
    assert growth["label"] == (
        "AAPL Total Revenue growth, FY2024 (Oct 2023–Sep 2024, ended 2024-09-28) "
        "vs FY2023 (Oct 2022–Sep 2023, ended 2023-09-30)"
    )
    assert (growth["kind"], growth["unit"]) == ("growth", "percent")
    assert growth["value"] == pytest.approx(2.021994, abs=1e-6)  # (391,035 - 383,285) / 383,285 x 100
    assert [(i["symbol"], i["line"], i["period"], i["value"]) for i in growth["inputs"]] == [
        ("AAPL", "TotalRevenue", "2024-09-28", 391_035e6),
        ("AAPL", "TotalRevenue", "2023-09-30", 383_285e6),
    ]
    source = growth["inputs"][0]["source"]
    assert source["n"] == 1 and source["url"] == "https://finance.yahoo.com/quote/AAPL/financials"
    assert any(fact["label"].startswith("AAPL minus MSFT: Total Revenue growth") for fact in run["facts"])


async def test_an_untraced_figure_is_noted_under_the_streamed_and_stored_answer_and_in_the_signals(
    api, fake_openai, market_data, research_env  # noqa: F811
):
    script_revenue_research(fake_openai, research_env, "Apple's revenue grew 12.3% in fiscal 2024 [1].")
    accepted = await ask(api, QUESTION, mode="research")
    run = await wait_finished(api, accepted["run_id"])

    events = await read_events(api, accepted["events_url"])

    note = "Note: 12.3% [1] could not be traced to the market data cited; check them against the sources."
    assert answer_text(events).endswith("fiscal 2024 [1].\n\n" + note)
    conversation = (await api.get(f"/api/conversations/{accepted['conversation_id']}")).json()
    assert conversation["messages"][-1]["content"] == answer_text(events)
    assert run["signals"]["numbers"]["unmatched_values"] == [{"value": "12.3%", "sources": [1]}]
    assert events[-1].type == "done" and events[-1].data["signals"]["numbers"]["unmatched"] == 1
