"""An estimated cost per run, from a small price table per provider: list prices as published, not what was
billed.

Prices change and differ by account (batch, regional processing, discounts), so the report labels every
cost an estimate, and each model's row says where its prices were read and on which day. A model missing
from the table, or one that searched with a provider whose search price is not in it, has no estimate
(shown as unknown) rather than a guessed one, never 0.

Only prices read on the provider's own pricing page are listed. Not listed yet, for want of a page read:
Google's Gemini models and its search grounding, Anthropic's web search tool, and any `openai-compatible`
server (a local one costs nothing per token, a hosted one what its operator charges). The search APIs'
calls (`UsageLedger.search_calls`) are priced per search API the same way; SearxNG is the operator's own
instance and charges nothing per search.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from datascraper.model_ref import ModelSettingInvalid, ProviderName, parse_model
from datascraper.schemas import ModelUsage, UsageLedger

OPENAI_PRICING = "https://developers.openai.com/api/docs/pricing"
ANTHROPIC_PRICING = "https://platform.claude.com/docs/en/docs/about-claude/pricing"
# The day each page was read for this table (OpenAI's rows as the table's first version read them).
OPENAI_CHECKED = date(2026, 3, 20)
ANTHROPIC_CHECKED = date(2026, 11, 27)


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens: fresh input, cached input (a cache hit), output (reasoning tokens are billed as
    output); the hosted web search per 1,000 calls, None where its price is not known; and where and when
    these were read."""

    input: float
    cached_input: float
    output: float
    source: str
    checked: date
    search_per_1k: float | None = None


def _openai(input: float, cached_input: float, output: float) -> ModelPrice:
    # Hosted web search: 10 USD per 1,000 calls, apart from tokens.
    return ModelPrice(input, cached_input, output, OPENAI_PRICING, OPENAI_CHECKED, search_per_1k=10.0)


def _anthropic(input: float, cached_input: float, output: float) -> ModelPrice:
    # "Cache hits and refreshes" is the cached input; cache writes are not counted in `ModelUsage`.
    return ModelPrice(input, cached_input, output, ANTHROPIC_PRICING, ANTHROPIC_CHECKED)


PRICES: dict[ProviderName, dict[str, ModelPrice]] = {
    "openai": {
        "gpt-5.4": _openai(2.50, 0.25, 15.00),
        "gpt-5.4-mini": _openai(0.75, 0.075, 4.50),
        "gpt-5.4-nano": _openai(0.20, 0.02, 1.25),
        "gpt-5.2": _openai(1.75, 0.175, 14.00),
        "gpt-5": _openai(1.25, 0.125, 10.00),
        "gpt-5-mini": _openai(0.25, 0.025, 2.00),
        "gpt-4.1": _openai(2.00, 0.50, 8.00),
    },
    "anthropic": {
        "claude-opus-4-6": _anthropic(5.00, 0.50, 25.00),
        "claude-opus-4-5": _anthropic(5.00, 0.50, 25.00),
        "claude-opus-4-1": _anthropic(15.00, 1.50, 75.00),
        "claude-sonnet-4-6": _anthropic(3.00, 0.30, 15.00),
        "claude-sonnet-4-5": _anthropic(3.00, 0.30, 15.00),
        "claude-sonnet-4-0": _anthropic(3.00, 0.30, 15.00),
        "claude-haiku-4-5": _anthropic(1.00, 0.10, 5.00),
    },
}


@dataclass(frozen=True)
class SearchPrice:
    """USD per 1,000 searches of a search API as the app calls it, and where and when that was read."""

    per_1k: float
    source: str
    checked: date


SEARCH_PRICES: dict[str, SearchPrice] = {
    # `search_depth: basic` costs 1 credit; pay-as-you-go credits are 0.008 USD (monthly plans less).
    "tavily": SearchPrice(8.00, "https://docs.tavily.com/documentation/api-credits", date(2026, 11, 27)),
    "brave": SearchPrice(5.00, "https://api-dashboard.search.brave.com/app/plans", date(2026, 11, 27)),
    # `type: auto` with at most 10 results (the app asks for 5) is the base price.
    "exa": SearchPrice(7.00, "https://exa.ai/docs/reference/pricing", date(2026, 11, 27)),
}
SELF_HOSTED_SEARCH = ("searxng",)
# A snapshot's date: OpenAI's `gpt-5.4-mini-2026-03-17`, Anthropic's `claude-sonnet-4-5-20250929`.
_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")
_ALIASES = {"claude-sonnet-4": "claude-sonnet-4-0"}


def price_of(model: str) -> ModelPrice | None:
    """The prices of a model named by its label (`gpt-5.4`, `anthropic:claude-sonnet-4-5`), any snapshot of
    it included; None when its provider's table does not list it."""
    try:
        ref = parse_model(model)
    except ModelSettingInvalid:
        return None
    name = _SNAPSHOT.sub("", ref.name.strip().lower().rsplit("/", 1)[-1])
    return PRICES.get(ref.provider, {}).get(_ALIASES.get(name, name))


def usage_cost(model: str, usage: ModelUsage) -> float | None:
    """The estimated USD of one model's usage; None when a price it needs is not in the table."""
    price = price_of(model)
    if price is None:
        return None
    searches = 0.0
    if usage.web_search_calls:
        if price.search_per_1k is None:
            return None
        searches = usage.web_search_calls * price.search_per_1k / 1000
    fresh = usage.input_tokens - usage.cached_tokens
    tokens = fresh * price.input + usage.cached_tokens * price.cached_input + usage.output_tokens * price.output
    return tokens / 1_000_000 + searches


def search_cost(search: str, calls: int) -> float | None:
    """The estimated USD of `calls` searches of a search API; None when its price is not in the table."""
    if search in SELF_HOSTED_SEARCH:
        return 0.0
    price = SEARCH_PRICES.get(search)
    return None if price is None else calls * price.per_1k / 1000


def estimate_cost(ledger: UsageLedger) -> float | None:
    """The estimated USD of a run, its search API calls included; None when anything it used has no price."""
    costs = [usage_cost(model, usage) for model, usage in ledger.by_model.items()]
    costs += [search_cost(search, calls) for search, calls in ledger.search_calls.items()]
    if any(cost is None for cost in costs):
        return None
    return sum(cost for cost in costs if cost is not None)


# The oldest day a listed price was read: what a report says its estimates are as of.
PRICES_AS_OF = min(
    [price.checked for table in PRICES.values() for price in table.values()]
    + [price.checked for price in SEARCH_PRICES.values()]
)
