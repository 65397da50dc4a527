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
from datascraper.market_data.symbols import yahoo_spelling
from datascraper.models_config import ResearchConfig
from datascraper.plan_schemas import QueryAnalysis
from datascraper.providers.structured import parse_structured
from datascraper.schemas import ChatTurn, UsageLedger

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
    "walmart": ("WMT", "Walmart"),
    "disney": ("DIS", "Disney"),
    "coca-cola": ("KO", "Coca-Cola"),
    "jpmorgan": ("JPM", "JPMorgan"),
    "visa": ("V", "Visa"),
    "boeing": ("BA", "Boeing"),
    "nike": ("NKE", "Nike"),
    "oracle": ("ORCL", "Oracle"),
    "salesforce": ("CRM", "Salesforce"),
    "adobe": ("ADBE", "Adobe"),
    "paypal": ("PYPL", "PayPal"),
    "uber": ("UBER", "Uber"),
    "ibm": ("IBM", "IBM"),
    "broadcom": ("AVGO", "Broadcom"),
    "costco": ("COST", "Costco"),
    "pfizer": ("PFE", "Pfizer"),
    "exxon": ("XOM", "Exxon"),
    "starbucks": ("SBUX", "Starbucks"),
}

# Upper-case words that are not stock tickers here: words and acronyms, currencies, and shorthand for
# indexes, futures, commodities and crypto that happens to be some company's ticker (DOW, GOLD, BTC...).
# Such a question goes to the model, which knows what the user meant.
_NOT_TICKERS = frozenset(
    "I A AN THE MY ME WE US OUR YOU YOUR HE SHE THEY THIS THAT USA UK EU CEO CFO CTO EPS PE ETF IPO GDP AI EV YTD TTM "
    "USD EUR GBP JPY CHF CNY CAD AUD NZD "
    "INR HKD SGD KRW MXN BRL SEK NOK ZAR RUB TRY ATH NYSE NASDAQ SEC FED FOMC IS IT OK API WHAT HOW DOW DJIA "
    "SPX SPY NDX VIX RUT DXY FTSE DAX CAC HSI TSX ES NQ YM RTY CL GC SI NG HG GOLD SILVER OIL WTI BRENT GAS BTC "
    "ETH SOL XRP DOGE ADA BNB DOT LTC AVAX LINK SHIB TRX XLM BCH USDT USDC".split()
)
# A letter ticker with an optional class or exchange suffix (BRK.B, VOD.L), or a numeric one with its exchange
# suffix (7203.T, 0700.HK): a bare number is never a ticker here.
_SYMBOL = r"\$?(?:[A-Za-z]{1,5}(?:[.-][A-Za-z]{1,2})?|\d{3,6}\.[A-Za-z]{1,2})"
_SUBJECT = (
    rf"(?P<subject>(?P<name>{'|'.join(map(re.escape, COMMON_TICKERS))})(?: \((?P<paren>{_SYMBOL})\))?"
    rf"|(?P<symbol>{_SYMBOL}))(?:'s|’s)?"
)
_NOW = r"(?: right now| now| today| currently)?"
_TODAY = r"(?: today| so far today| right now| now)"
_SHARES = r"(?: stock| shares)?"
_WHAT_IS = r"(?:what(?:'s|’s| is) )?"
_CURRENT = r"(?:current |latest |last |live )?"
_PRICE = rf"{_CURRENT}(?:stock |share )?price"
_ONE_SHARE = r"(?:(?:a|one) share of )?"
_UP_DOWN = r"(?:up|down|green|red)(?: or (?:up|down))?"
_MOVED = (
    r"(?:moved?|changed?|gain(?:ed)?|lose|lost|fall(?:en)?|fell|rise|risen|rose|drop(?:ped)?|climb(?:ed)?"
    r"|jump(?:ed)?)"
)
_DAY_CHANGE = r"(?:(?:daily|day's|day|today's|percent|percentage|price) )*change"
_MARKET_CAP = r"(?:market (?:cap|capitali[sz]ation|value|valuation)|mkt cap|mcap)"
# A polite opening ("can you tell me", "give me") and a closing "please" change nothing.
_ASK = r"(?:(?:can|could) you (?:please )?)?(?:(?:tell|give|show|get) me )?(?:please )?"
# Whole questions, not keywords: anything beyond these shapes (a period, a product, a currency, a reason,
# another figure) fails to match and goes to the model.
_TEMPLATE_PATTERNS: tuple[tuple[QuoteFact, str], ...] = (
    ("price", rf"{_WHAT_IS}(?:the )?{_PRICE} (?:of|for|on) {_ONE_SHARE}{_SUBJECT}{_SHARES}{_NOW}"),
    ("price", rf"{_WHAT_IS}(?:the )?{_CURRENT}{_SUBJECT} {_PRICE}{_NOW}"),
    ("price", rf"{_WHAT_IS}(?:the )?{_CURRENT}{_SUBJECT}{_SHARES} (?:trading at|(?:stock )?quote){_NOW}"),
    ("price", rf"what(?:'s|’s| is| are) {_SUBJECT}{_SHARES} at{_NOW}"),
    ("price", rf"(?:what price|at what price) (?:is|are) {_SUBJECT}{_SHARES} trading(?: at)?{_NOW}"),
    ("price", rf"what (?:does|do) {_SUBJECT}{_SHARES} trade at{_NOW}"),
    ("price", rf"where(?:'s|’s| is| are) {_SUBJECT}{_SHARES}(?: trading| at)?{_NOW}"),
    (
        "price",
        rf"how much (?:is|are|does|do) {_ONE_SHARE}{_SUBJECT}{_SHARES}(?: cost| trading at| going for)?{_NOW}",
    ),
    ("price", rf"(?:a |the )?{_CURRENT}(?:stock )?quote (?:for |on |of )?{_SUBJECT}{_SHARES}{_NOW}"),
    ("price", rf"price check (?:on|for) {_SUBJECT}{_SHARES}"),
    ("change", rf"(?:is|are) {_SUBJECT}{_SHARES} {_UP_DOWN}{_TODAY}?"),
    ("change", rf"did {_SUBJECT}{_SHARES} go {_UP_DOWN}{_TODAY}"),
    ("change", rf"how much (?:is|are) {_SUBJECT}{_SHARES} {_UP_DOWN}{_TODAY}"),
    ("change", rf"how much (?:has|have|did) {_SUBJECT}{_SHARES} {_MOVED}{_TODAY}"),
    ("change", rf"how (?:is|are) {_SUBJECT}{_SHARES} (?:trading|moving){_NOW}"),
    ("change", rf"{_WHAT_IS}(?:the )?{_SUBJECT}{_SHARES} {_DAY_CHANGE}{_TODAY}?"),
    ("change", rf"{_WHAT_IS}(?:the )?{_DAY_CHANGE} (?:of|for|in) {_SUBJECT}{_SHARES}{_TODAY}?"),
    ("market_cap", rf"{_WHAT_IS}(?:the )?{_CURRENT}{_SUBJECT} {_MARKET_CAP}{_NOW}"),
    ("market_cap", rf"{_WHAT_IS}(?:the )?{_CURRENT}{_MARKET_CAP} (?:of|for) {_SUBJECT}{_NOW}"),
    ("market_cap", rf"how (?:big|large|high) is {_SUBJECT} {_MARKET_CAP}{_NOW}"),
    ("market_cap", rf"how much is {_SUBJECT} worth{_NOW}"),
)
_TEMPLATES: tuple[tuple[QuoteFact, re.Pattern[str]], ...] = tuple(
    (fact, re.compile(rf"^{_ASK}{pattern}(?:,? please)?$", re.IGNORECASE)) for fact, pattern in _TEMPLATE_PATTERNS
)
# A company named in words must be asked about as a stock for a price: "Apple price" may be a product's.
_NAMED_PRICE_NEEDS = re.compile(r"\b(?:stock|shares?|trading|trade)\b", re.IGNORECASE)


def _ticker(symbol: str) -> str | None:
    """A ticker typed as one: upper case, or marked with `$`; None for anything else."""
    if symbol.startswith("$"):
        ticker = symbol[1:].upper()
    elif symbol.isupper():
        ticker = symbol
    else:
        return None
    # Yahoo's spelling: VOD.L and 7203.T keep their exchange suffix, BRK.B becomes BRK-B.
    return None if ticker in _NOT_TICKERS else yahoo_spelling(ticker)


def match_fast_path(question: str) -> FastPathMatch | None:
    """The quote fact and ticker of an obviously simple question, or None when unsure."""
    text = " ".join(question.split()).rstrip("?.! ")
    for fact, template in _TEMPLATES:
        match = template.match(text)
        if match is None:
            continue
        if match["symbol"] is not None:
            ticker = _ticker(match["symbol"])
            return None if ticker is None else FastPathMatch(ticker=ticker, fact=fact)
        symbol, name = COMMON_TICKERS[match["name"].lower()]
        if match["name"] == symbol:
            # A name that is also its ticker, typed as the ticker (AMD, IBM, META): asked as a stock.
            return FastPathMatch(ticker=symbol, fact=fact)
        if match["paren"] is not None and _ticker(match["paren"]) != symbol:
            return None
        if fact == "price" and match["paren"] is None and not _NAMED_PRICE_NEEDS.search(text):
            return None
        return FastPathMatch(ticker=symbol, fact=fact, name=name)
    return None


# --- the planner model ---------------------------------------------------------------------------------------


async def analyze_query(
    question: str,
    *,
    history: Sequence[ChatTurn] = (),
    today: date,
    timezone: str | None,
    config: ResearchConfig,
    ledger: UsageLedger,
    timeout_s: float | None = None,
) -> QueryAnalysis:
    """The planner model's verdict, with sub-questions capped at `config.max_sub_questions`.

    The call is bounded by `timeout_s` (default `config.planner_timeout_s`). Raises the named error of
    `parse_structured` (`StructuredOutputInvalid`, upstream failures, `UpstreamTimeout` past the bound);
    the caller falls back to the single-search path.
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
        timeout_s=config.planner_timeout_s if timeout_s is None else timeout_s,
    )
    sub_questions = [sq for sq in analysis.sub_questions if sq.question.strip()][: config.max_sub_questions]
    return analysis.model_copy(update={"sub_questions": sub_questions})


def _with_history(text: str, history: Sequence[ChatTurn]) -> str:
    if not history:
        return text
    turns = "\n".join(f"{turn.role}: {turn.content}" for turn in history)
    return f"Earlier conversation:\n{turns}\n\n{text}"
