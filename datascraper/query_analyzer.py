"""Where a question is analysed: a local fast path for one-ticker quote questions, else the planner model.

The fast path exists because "What is AAPL trading at?" needs neither a plan nor a search: one quote
answers it, and the model call would cost more time than the whole answer. It is deliberately narrow: one
ticker, one plain fact (price, day change or market cap), no period, no second company, no "why". Anything
it is unsure of goes to the model, which may still decide that one search is enough.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Literal

from datascraper import prompts
from datascraper.llm import parse_structured
from datascraper.models_config import ResearchConfig
from datascraper.schemas import ChatTurn, QueryAnalysis, UsageLedger

QuoteFact = Literal["price", "change", "market_cap"]


@dataclass(frozen=True)
class FastPathMatch:
    """A question the quote alone answers."""

    ticker: str
    fact: QuoteFact
    name: str | None = None  # the company's common name, when the question used it


# --- the local fast path -----------------------------------------------------------------------------------

# Very common companies only; an unknown name simply goes to the model.
COMMON_TICKERS: dict[str, tuple[str, str]] = {
    "apple": ("AAPL", "Apple"),
    "microsoft": ("MSFT", "Microsoft"),
    "tesla": ("TSLA", "Tesla"),
    "amazon": ("AMZN", "Amazon"),
    "alphabet": ("GOOGL", "Alphabet"),
    "google": ("GOOGL", "Alphabet"),
    "nvidia": ("NVDA", "Nvidia"),
    "netflix": ("NFLX", "Netflix"),
    "intel": ("INTC", "Intel"),
    "amd": ("AMD", "AMD"),
    "meta": ("META", "Meta"),
    "facebook": ("META", "Meta"),
}

# Upper-case words that are not tickers in a question (a ticker-shaped word among them means "ask the model").
_NOT_TICKERS = frozenset(
    "I A AN THE US USA UK EU CEO CFO CTO EPS PE ETF IPO GDP AI EV YTD TTM USD EUR GBP JPY ATH NYSE NASDAQ "
    "SEC FED FOMC IS IT OK API WHAT HOW".split()
)
_TICKER = re.compile(r"(?<![\w$])\$?([A-Z]{1,5}(?:[.-][A-Z]{1,2})?)(?:'s|’s)?(?![\w-])")
_DOLLAR_TICKER = re.compile(r"(?<![\w$])\$([A-Za-z]{1,5})\b")
_NAME = re.compile(r"\b(" + "|".join(COMMON_TICKERS) + r")(?:'s|’s)?\b")

_MARKET_CAP = re.compile(r"\bmarket (?:cap|capitali[sz]ation|value)\b")
_CHANGE = re.compile(
    r"\b(?:up|down)\b.*\btoday\b"
    r"|\bhow much (?:is|has)\b.*\b(?:up|down|moved?)\b"
    r"|\b(?:change|move|moved|moving)\b.*\btoday\b"
)
_PRICE = re.compile(r"\b(?:price|trading|trade|quote|quoted|worth per share)\b")
# Anything that asks for more than the current quote: a period, a comparison, a reason, other figures.
_DISQUALIFIERS = re.compile(
    r"\d|,|;|\b(?:and|or|vs|versus|compare[ds]?|comparison|against|relative|why|should|buy|sell|target|"
    r"forecast|predict|expect|expected|will|would|history|historical|yesterday|last|week|month|year|ytd|since|"
    r"ago|average|high|low|close|closed|closing|open|opened|opening|after|pre|premarket|revenue|earnings|"
    r"dividend|ratio|valuation|analyst|analysts|news|option|options|futures|crypto|bitcoin|index|etf|fund)\b"
)
_MAX_WORDS = 12


def match_fast_path(question: str) -> FastPathMatch | None:
    """The quote fact and ticker of an obviously simple question, or None when unsure."""
    text = " ".join(question.split())
    lowered = text.lower()
    if not text or len(text.split()) > _MAX_WORDS or _DISQUALIFIERS.search(lowered):
        return None
    facts: list[QuoteFact] = []
    if _MARKET_CAP.search(lowered):
        facts.append("market_cap")
    elif _CHANGE.search(lowered):
        facts.append("change")
    if _PRICE.search(lowered) and not facts:
        facts.append("price")
    if len(facts) != 1:
        return None

    tickers: dict[str, str | None] = {}
    for word in _TICKER.findall(text):
        if word not in _NOT_TICKERS:
            tickers.setdefault(word.replace(".", "-"), None)
    for word in _DOLLAR_TICKER.findall(text):
        tickers.setdefault(word.upper(), None)
    for name in _NAME.findall(lowered):
        symbol, common_name = COMMON_TICKERS[name]
        tickers[symbol] = common_name
    if len(tickers) != 1:
        return None
    [(ticker, name)] = tickers.items()
    return FastPathMatch(ticker=ticker, fact=facts[0], name=name)


# --- the planner model ---------------------------------------------------------------------------------------


async def analyze_query(
    question: str,
    *,
    history: Sequence[ChatTurn] = (),
    today: date,
    timezone: str | None,
    config: ResearchConfig,
    ledger: UsageLedger,
) -> QueryAnalysis:
    """The planner model's verdict, with sub-questions capped at `config.max_sub_questions`.

    Raises the named error of `parse_structured` (`StructuredOutputInvalid`, upstream failures); the
    caller falls back to the single-search path.
    """
    analysis = await parse_structured(
        config.planner_model,
        prompts.ANALYZER_INSTRUCTIONS.format(max_sub_questions=config.max_sub_questions),
        _with_history(
            prompts.ANALYZER_INPUT.format(time_context=prompts.time_context(today, timezone), question=question),
            history,
        ),
        QueryAnalysis,
        ledger,
    )
    sub_questions = [sq for sq in analysis.sub_questions if sq.question.strip()][: config.max_sub_questions]
    return analysis.model_copy(update={"sub_questions": sub_questions})


def _with_history(text: str, history: Sequence[ChatTurn]) -> str:
    if not history:
        return text
    turns = "\n".join(f"{turn.role}: {turn.content}" for turn in history)
    return f"Earlier conversation:\n{turns}\n\n{text}"
