"""The quote fast path against a labelled set: plain quote questions in many phrasings, each with the
ticker and fact it must answer, and questions that look alike but need the analyzer (periods, comparisons,
reasons, products, currencies, indexes, crypto, options, other figures), none of which may be taken.

Precision is absolute (a wrong quote is a wrong answer with no model to catch it); recall is what the
whole-question templates reach on this set.
"""

from __future__ import annotations

import pytest

from datascraper.query_analyzer import FastPathMatch, match_fast_path


def price(ticker: str, name: str | None = None) -> FastPathMatch:
    return FastPathMatch(ticker, "price", name)


def change(ticker: str, name: str | None = None) -> FastPathMatch:
    return FastPathMatch(ticker, "change", name)


def market_cap(ticker: str, name: str | None = None) -> FastPathMatch:
    return FastPathMatch(ticker, "market_cap", name)


QUOTE_QUESTIONS: list[tuple[str, FastPathMatch]] = [
    # price
    ("What is AAPL trading at?", price("AAPL")),
    ("What's AAPL trading at right now?", price("AAPL")),
    ("AAPL price", price("AAPL")),
    ("AAPL stock price today", price("AAPL")),
    ("$nvda price", price("NVDA")),
    ("What's the price of BRK-B?", price("BRK-B")),
    ("What is the price of BRK.B stock?", price("BRK-B")),
    ("What is Apple's stock price?", price("AAPL", "Apple")),
    ("Apple (AAPL) share price", price("AAPL", "Apple")),
    ("Where is NVDA trading right now?", price("NVDA")),
    ("TSLA quote", price("TSLA")),
    ("What's the latest AAPL quote?", price("AAPL")),
    ("Price of MSFT", price("MSFT")),
    ("Current AAPL price", price("AAPL")),
    ("What is the current stock price of Microsoft?", price("MSFT", "Microsoft")),
    ("What's the latest Apple stock price?", price("AAPL", "Apple")),
    ("What is the last price of AMD?", price("AMD")),
    ("Tesla stock price", price("TSLA", "Tesla")),
    ("Netflix share price today", price("NFLX", "Netflix")),
    ("What is the share price of Nvidia right now?", price("NVDA", "Nvidia")),
    ("What's the price of a share of Amazon?", price("AMZN", "Amazon")),
    ("What's AAPL at?", price("AAPL")),
    ("What is Apple stock at right now?", price("AAPL", "Apple")),
    ("What price is TSLA trading at?", price("TSLA")),
    ("At what price is MSFT trading?", price("MSFT")),
    ("What does NVDA trade at?", price("NVDA")),
    ("Where's GOOGL trading?", price("GOOGL")),
    ("Where is Tesla stock now?", price("TSLA", "Tesla")),
    ("How much is AAPL?", price("AAPL")),
    ("How much is a share of Apple?", price("AAPL", "Apple")),
    ("How much does Microsoft stock cost?", price("MSFT", "Microsoft")),
    ("How much are Tesla shares trading at?", price("TSLA", "Tesla")),
    ("How much is one share of NVDA right now?", price("NVDA")),
    ("Quote AAPL", price("AAPL")),
    ("Get me a quote for MSFT", price("MSFT")),
    ("Give me a quote on Disney stock", price("DIS", "Disney")),
    ("Price check on AMZN", price("AMZN")),
    ("Can you tell me the price of AAPL?", price("AAPL")),
    ("Tell me Apple's share price, please", price("AAPL", "Apple")),
    ("Show me the stock price for Walmart", price("WMT", "Walmart")),
    ("What is Coca-Cola's stock price?", price("KO", "Coca-Cola")),
    ("What is the JPMorgan share price?", price("JPM", "JPMorgan")),
    ("What's the price of Visa stock?", price("V", "Visa")),
    ("What is $pltr trading at?", price("PLTR")),
    ("what is SHOP trading at", price("SHOP")),
    # the day's move
    ("How much is MSFT up today?", change("MSFT")),
    ("Is Nvidia down today?", change("NVDA", "Nvidia")),
    ("Is Apple stock up today?", change("AAPL", "Apple")),
    ("Is AAPL up or down today?", change("AAPL")),
    ("Are Tesla shares down right now?", change("TSLA", "Tesla")),
    ("Is META green today?", change("META")),
    ("Did AMZN go up today?", change("AMZN")),
    ("Did Boeing stock go down today?", change("BA", "Boeing")),
    ("How much has TSLA moved today?", change("TSLA")),
    ("How much did Nike shares fall today?", change("NKE", "Nike")),
    ("How much has Intel gained today?", change("INTC", "Intel")),
    ("How much did GOOGL drop today?", change("GOOGL")),
    ("How is NFLX trading today?", change("NFLX")),
    ("How are Amazon shares moving?", change("AMZN", "Amazon")),
    ("What is AAPL's change today?", change("AAPL")),
    ("What's the daily change for NVDA?", change("NVDA")),
    ("Tesla day change", change("TSLA", "Tesla")),
    ("What's the percent change in MSFT today?", change("MSFT")),
    # market capitalisation
    ("What's Tesla's market cap?", market_cap("TSLA", "Tesla")),
    ("What is the market cap of Microsoft?", market_cap("MSFT", "Microsoft")),
    ("AAPL market cap", market_cap("AAPL")),
    ("Nvidia market capitalization", market_cap("NVDA", "Nvidia")),
    ("What's the current market capitalisation of Alphabet?", market_cap("GOOGL", "Alphabet")),
    ("What is Oracle's market value right now?", market_cap("ORCL", "Oracle")),
    ("Market cap for Broadcom", market_cap("AVGO", "Broadcom")),
    ("How big is Costco's market cap?", market_cap("COST", "Costco")),
    ("How much is Apple worth?", market_cap("AAPL", "Apple")),
    ("How much is META worth right now?", market_cap("META")),
    ("What's the mkt cap of UBER?", market_cap("UBER")),
]

# Each needs the analyzer; the comment says why the fast path must not take it.
ANALYZER_QUESTIONS: list[str] = [
    # not a quote at all
    "What did Apple announce at its latest product event?",
    "How did Apple's last quarter go?",
    "Did Apple change its CEO today?",
    "How is Apple doing today?",  # the business or the stock
    "What's the latest on Tesla?",
    # a period or a past moment
    "What was AAPL's closing price yesterday?",
    "AAPL price on 2024-01-02",
    "What price did Apple IPO at?",
    "Apple price on Monday?",
    "How much has Apple moved this quarter?",
    "Is AAPL up this week?",
    "How much did TSLA gain this year?",
    "How much is NVDA up since January?",
    "Was AAPL up today?",
    "What's the premarket price of AAPL?",
    "What is AAPL's after-hours price?",
    "What is Apple's stock price history?",
    "What was Apple's market cap at its IPO?",
    "How much was Microsoft worth in 2000?",
    # comparisons and more than one figure
    "Compare AAPL and MSFT prices",
    "What is AAPL's price and market cap?",
    "What is the price of AAPL compared with its 52-week high and the average analyst target?",
    "How much is Apple worth compared to Microsoft?",
    "Is AAPL up more than MSFT today?",
    "Which is bigger, Apple or Microsoft?",
    "What is AAPL's market cap vs MSFT?",
    # reasons, opinions, advice
    "Why is TSLA down today?",
    "Is AAPL up today because of earnings?",
    "Should I buy AAPL at this price?",
    "Is Tesla overvalued at its current price?",
    "Is Tesla a good trade right now?",
    "Is Apple a good stock?",
    "How much is AAPL expected to rise?",
    # other figures
    "What is the AAPL price target?",
    "What is AAPL's price to earnings?",
    "What's the trading volume of Apple?",
    "What's AAPL's 52-week high?",
    "What's Nvidia's market share?",
    "How much is Apple's dividend?",
    "What's Apple's EPS?",
    "What is Tesla's loss?",
    "What is Apple's valuation?",
    # products and services
    "What is the price of the Apple Vision Pro?",
    "What is the price of Meta Quest?",
    "Apple price",
    "How much is Tesla?",
    "How much does Netflix cost?",
    "How much is Amazon Prime?",
    "How much is Apple Music?",
    "What is the price of Apple's iPhone?",
    "What is the Uber price to the airport?",
    "Where is Uber?",
    "Quote Apple",
    # currencies
    "What is Microsoft's share price in GBP?",
    "What's AAPL's market cap in euros?",
    "What is the price of USD?",
    "Where is CAD trading?",
    "Is EUR up today?",
    # indexes and futures
    "Is DOW up today?",
    "Where is SPX trading?",
    "Is the market up today?",
    "Are stocks up today?",
    "Where is DXY trading?",
    "How much is NASDAQ down today?",
    "What is ES trading at?",
    "What is the market cap of the S&P 500?",
    # commodities
    "What is the price of gold?",
    "What is the WTI crude price?",
    "Is OIL up today?",
    # crypto
    "What is the price of BTC?",
    "How much is ETH worth?",
    "What's ADA trading at?",
    "Is DOGE up today?",
    "What is the market cap of USDT?",
    # options
    "What is the price of AAPL 200 calls?",
    "AAPL call price",
    "What's the AAPL option price?",
    "What is the price of Apple stock options?",
    # not typed as a ticker, or unknown, or the conversation's
    "What's its price?",
    "What is Rivian's stock price?",
    "aapl price",
    "Is IT up today?",
    "How much is MY stock?",
    "How much is MY portfolio worth?",
    "What is the price of a share of Apple in 2010?",
    "What is Apple's share price in London?",
    "What is the price of 700?",  # a bare number is not a ticker
]


@pytest.mark.parametrize(("question", "expected"), QUOTE_QUESTIONS, ids=[q for q, _ in QUOTE_QUESTIONS])
def test_a_labelled_quote_question_takes_the_fast_path_with_its_ticker_and_fact(question, expected):
    assert match_fast_path(question) == expected


@pytest.mark.parametrize("question", ANALYZER_QUESTIONS)
def test_a_labelled_question_that_needs_the_analyzer_never_takes_the_fast_path(question):
    assert match_fast_path(question) is None


def test_the_labelled_set_is_large_and_balanced():
    questions = [q for q, _ in QUOTE_QUESTIONS] + ANALYZER_QUESTIONS
    assert len(questions) >= 100 and len(set(questions)) == len(questions)
    assert {m.fact for _, m in QUOTE_QUESTIONS} == {"price", "change", "market_cap"}
