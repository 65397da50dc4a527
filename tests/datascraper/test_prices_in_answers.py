"""What an answer is given of a price (issue 27): a close before a later split as traded that day, beside
Yahoo's split-adjusted one; a London price in pence beside pounds. The runs go through the real pipeline, the
real OpenAI SDK against the fake Responses server, and the real MCP client and yfinance against the fake
Yahoo, whose AAPL split 4:1 on 2020-08-31.
"""

from __future__ import annotations

import pandas as pd
import pytest

from datascraper import prompts
from tests.datascraper.research_support import (
    answer_text,
    is_synthesis,
    of_type,
    requests_of,
    run,
    script_analysis,
    script_synthesis,
    sub,
    summary_of,
)
from tests.fakes.yahoo_listings import listing

APPLE_ON_JAN_2 = sub(
    "What did Apple's stock close at on 2020-01-02?",
    "numerical",
    ["AAPL"],
    "price_history",
    start="2020-01-02",
    end="2020-01-02",
)
VODAFONE_WEEK = sub(
    "How did Vodafone's shares trade from 2025-06-09 to 2025-06-12?",
    "numerical",
    ["VOD.L"],
    "price_history",
    start="2025-06-09",
    end="2025-06-12",
)


def price(symbol: str, day: str, *, traded: bool = False) -> float:
    days = pd.DatetimeIndex([pd.Timestamp(day)])
    found = listing(symbol).traded_closes(days) if traded else listing(symbol).closes(days)
    return float(found[0])


async def test_a_close_before_a_later_split_reaches_the_answer_as_traded_with_the_split_named(
    fake_openai, market_data, research_env
):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    traded, adjusted = price("AAPL", "2020-01-02", traded=True), price("AAPL", "2020-01-02")
    script_analysis(fake_openai, APPLE_ON_JAN_2)
    script_synthesis(
        fake_openai,
        f"Apple closed at {traded:.2f} USD on 2020-01-02 [1], which is {adjusted:.2f} USD adjusted for the 4:1 split "
        "of 2020-08-31 [1].",
    )

    events = await run("What did Apple close at on 2020-01-02?")

    [synthesis] = requests_of(fake_openai, is_synthesis)
    assert f"2020-01-02: close {adjusted:,.2f} split-adjusted, {traded:,.2f} as traded (before the 4:1 split of " in (
        synthesis.input_text
    )
    assert "give its traded_close, the price as traded that day" in synthesis.instructions
    assert "give its traded_close" in prompts.SYNTHESIS_INSTRUCTIONS
    # both prices trace to the data returned: no note under the answer
    assert summary_of(events).signals["numbers"]["unmatched"] == 0
    assert "Note:" not in answer_text(events)
    [chart] = of_type(events, "chart")
    assert chart.title == "AAPL closing price (split-adjusted)"


async def test_a_london_price_history_reaches_the_answer_and_its_chart_in_pence_beside_pounds(
    fake_openai, market_data, research_env
):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    close = price("VOD.L", "2025-06-12") / 100  # the fake's closes are in pence, as Yahoo's
    script_analysis(fake_openai, VODAFONE_WEEK)
    script_synthesis(fake_openai, f"Vodafone closed at {close * 100:.2f}p (£{close:.4f}) on 2025-06-12 [1].")

    events = await run("How did Vodafone's shares trade from 2025-06-09 to 2025-06-12?")

    [synthesis] = requests_of(fake_openai, is_synthesis)
    assert f"2025-06-12: close {close * 100:,.2f}p (£{close:,.4f});" in synthesis.input_text
    assert "currency GBP; prices quoted in pence (GBp))" in synthesis.input_text
    assert "the exchange's unit first: 72.50p (£0.7250)" in synthesis.instructions
    # the pence and the pounds both trace
    assert summary_of(events).signals["numbers"]["unmatched"] == 0
    assert "Note:" not in answer_text(events)
    [chart] = of_type(events, "chart")
    assert chart.unit == "GBP" and chart.sub_unit is not None and chart.sub_unit.code == "GBp"
    assert chart.series[0].points[-1][1] == pytest.approx(close, abs=1e-6)  # the points stay in pounds
    [fact] = summary_of(events).facts
    assert f"{close * 100:,.2f}p (£{close:,.4f})) / " in fact.formula


async def test_a_london_quote_on_the_fast_path_answers_in_pence_beside_pounds(fake_openai, market_data):
    events = await run("What is the VOD.L stock price?")

    answer = answer_text(events)
    assert answer.startswith("VOD.L last traded at 72.50p (£0.7250), ")
    assert summary_of(events).signals["numbers"]["unmatched"] == 0
    assert "Note:" not in answer
