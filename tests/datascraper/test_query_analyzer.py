"""The query analyzer: the local fast path recognises only plain one-ticker quote questions; the planner
model gets the time context and the conversation, and its plan is capped."""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from datascraper.errors import StructuredOutputInvalid
from datascraper.models_config import get_research_config
from datascraper.query_analyzer import FastPathMatch, analyze_query, match_fast_path
from datascraper.schemas import ChatTurn, UsageLedger
from tests.datascraper.research_support import is_analysis, of_type, requests_of, run, script_analysis, sub
from tests.fakes.openai_server import JsonReply


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is AAPL trading at?", FastPathMatch("AAPL", "price")),
        ("AAPL price", FastPathMatch("AAPL", "price")),
        ("$nvda price", FastPathMatch("NVDA", "price")),
        ("What's the price of BRK-B?", FastPathMatch("BRK-B", "price")),
        ("What is Apple's stock price?", FastPathMatch("AAPL", "price", "Apple")),
        ("Apple (AAPL) share price", FastPathMatch("AAPL", "price", "Apple")),
        ("How much is MSFT up today?", FastPathMatch("MSFT", "change")),
        ("Is Nvidia down today?", FastPathMatch("NVDA", "change", "Nvidia")),
        ("What's Tesla's market cap?", FastPathMatch("TSLA", "market_cap", "Tesla")),
        ("What is the market cap of Microsoft?", FastPathMatch("MSFT", "market_cap", "Microsoft")),
        ("Where is NVDA trading right now?", FastPathMatch("NVDA", "price")),
        ("TSLA quote", FastPathMatch("TSLA", "price")),
        ("Is Apple stock up today?", FastPathMatch("AAPL", "change", "Apple")),
        # Listings abroad keep their exchange suffix, numeric tickers included.
        ("What is the VOD.L stock price?", FastPathMatch("VOD.L", "price")),
        ("What is the 7203.T stock price?", FastPathMatch("7203.T", "price")),
        ("Is 0700.HK up today?", FastPathMatch("0700.HK", "change")),
    ],
)
def test_plain_one_ticker_quote_questions_take_the_fast_path(question, expected):
    assert match_fast_path(question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "How did Apple's last quarter go?",  # not a quote
        "What was AAPL's closing price yesterday?",  # a past price
        "AAPL price on 2024-01-02",  # a date
        "Compare AAPL and MSFT prices",  # two tickers
        "What is AAPL's price and market cap?",  # two facts
        "Why is TSLA down today?",  # a reason
        "What is the AAPL price target?",  # an analyst figure
        "What is the price of gold?",  # no ticker
        "What's its price?",  # refers to the conversation
        "What is Rivian's stock price?",  # a company outside the small map
        "Should I buy AAPL at this price?",  # advice
        "What is the price of AAPL compared with its 52-week high and the average analyst target?",  # long
        "What is the price of the Apple Vision Pro?",  # a product
        "What is the price of Meta Quest?",  # a product
        "Apple price",  # a company named without "stock": maybe a product
        "What price did Apple IPO at?",  # the past
        "Apple price on Monday?",  # another day
        "How much has Apple moved this quarter?",  # another period
        "Did Apple change its CEO today?",  # not a price move
        "Is Tesla overvalued at its current price?",  # an opinion
        "Is Tesla a good trade right now?",  # advice
        "What's the trading volume of Apple?",  # another figure
        "What is Microsoft's share price in GBP?",  # another currency
        "Is DOW up today?",  # the index, not Dow Inc.
        "What is the price of BTC?",  # crypto, not a stock
        "What is the WTI crude price?",  # a commodity
        "aapl price",  # lower case: not typed as a ticker
    ],
)
def test_anything_uncertain_goes_to_the_model(question):
    assert match_fast_path(question) is None


async def test_the_analyzer_prompt_carries_today_the_users_time_zone_and_the_conversation(fake_openai):
    script_analysis(fake_openai, needs_decomposition=False)
    before = datetime.now(ZoneInfo("Asia/Tokyo")).date()

    await run(
        "And what about last quarter?",
        history=[ChatTurn(role="user", content="How is Sony doing?"), ChatTurn(role="assistant", content="Well.")],
        timezone="Asia/Tokyo",
    )

    after = datetime.now(ZoneInfo("Asia/Tokyo")).date()
    [analysis] = requests_of(fake_openai, is_analysis)
    assert analysis.model == "gpt-5.4-mini"
    prompt = analysis.input_text
    assert before.isoformat() in prompt or after.isoformat() in prompt
    assert "in the user's time zone Asia/Tokyo" in prompt
    assert "Resolve relative periods (\"last quarter\"" in prompt
    assert "user: How is Sony doing?" in prompt and "assistant: Well." in prompt
    assert prompt.rstrip().endswith("Question: And what about last quarter?")


async def test_an_unknown_time_zone_is_left_out_and_the_server_date_used(fake_openai):
    script_analysis(fake_openai, needs_decomposition=False)

    await run("How did Apple do?", timezone="Mars/Olympus")

    [analysis] = requests_of(fake_openai, is_analysis)
    assert date.today().isoformat() in analysis.input_text


async def test_the_plan_is_capped_and_blank_sub_questions_dropped(fake_openai, research_env):
    research_env(RESEARCH_MAX_SUB_QUESTIONS="3")
    script_analysis(fake_openai, sub("  "), *(sub(f"Q{n}?") for n in range(5)))
    ledger = UsageLedger()

    analysis = await analyze_query(
        "Big question?", today=date(2025, 6, 13), timezone=None, config=get_research_config(), ledger=ledger
    )

    assert [sq.question for sq in analysis.sub_questions] == ["Q0?", "Q1?", "Q2?"]
    assert ledger.by_model["gpt-5.4-mini"].calls == 1
    [request] = fake_openai.requests
    assert "at most 3 sub-questions" in request.instructions
    assert "Friday, June 13, 2025 (2025-06-13)" in request.input_text


async def test_malformed_analysis_is_a_named_error(fake_openai):
    fake_openai.script(JsonReply(raw="not json"), when=is_analysis)

    with pytest.raises(StructuredOutputInvalid):
        await analyze_query(
            "Q?", today=date(2025, 6, 13), timezone=None, config=get_research_config(), ledger=UsageLedger()
        )


async def test_numerical_hints_decide_the_route_in_the_plan(fake_openai, research_env):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(
        fake_openai,
        sub("Apple's quote?", "numerical", ["aapl "], "quote"),
        sub("Apple's revenue?", "numerical", ["AAPL"], None),
        sub("Why?", "qualitative"),
        sub("Which is better?", "analytical"),
    )

    events = await run("Apple?", mode="research")

    [plan] = of_type(events, "plan")
    assert [q.route for q in plan.sub_questions] == ["market_data", "web_search", "web_search", "synthesis"]
