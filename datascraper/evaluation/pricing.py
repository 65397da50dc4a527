"""An estimated cost per run, from a small price table: list prices as published, not what was billed.

Prices change and differ by account (batch, regional processing, discounts), so the report labels every
cost an estimate and states the table's date. A model missing from the table has no estimate (shown as
n/a) rather than a guessed one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from datascraper.schemas import ModelUsage, UsageLedger

PRICES_AS_OF = date(2026, 3, 20)
# Hosted web search, per call (the provider lists 10 USD per 1,000 calls), apart from tokens.
WEB_SEARCH_USD_PER_CALL = 0.01


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens: fresh input, cached input, output (reasoning tokens are billed as output)."""

    input: float
    cached_input: float
    output: float


PRICES: dict[str, ModelPrice] = {
    "gpt-5.4": ModelPrice(2.50, 0.25, 15.00),
    "gpt-5.4-mini": ModelPrice(0.75, 0.075, 4.50),
    "gpt-5.4-nano": ModelPrice(0.20, 0.02, 1.25),
    "gpt-5.2": ModelPrice(1.75, 0.175, 14.00),
    "gpt-5": ModelPrice(1.25, 0.125, 10.00),
    "gpt-5-mini": ModelPrice(0.25, 0.025, 2.00),
    "gpt-4.1": ModelPrice(2.00, 0.50, 8.00),
}
_DATE_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def price_of(model: str) -> ModelPrice | None:
    return PRICES.get(_DATE_SUFFIX.sub("", model.strip().lower().rsplit("/", 1)[-1]))


def usage_cost(model: str, usage: ModelUsage) -> float | None:
    """The estimated USD of one model's usage; None when the model's price is not in the table."""
    price = price_of(model)
    if price is None:
        return None
    fresh = usage.input_tokens - usage.cached_tokens
    tokens = fresh * price.input + usage.cached_tokens * price.cached_input + usage.output_tokens * price.output
    return tokens / 1_000_000 + usage.web_search_calls * WEB_SEARCH_USD_PER_CALL


def estimate_cost(ledger: UsageLedger) -> float | None:
    """The estimated USD of a run; None when any model it used is missing from the table."""
    costs = [usage_cost(model, usage) for model, usage in ledger.by_model.items()]
    if any(cost is None for cost in costs):
        return None
    return sum(cost for cost in costs if cost is not None)
