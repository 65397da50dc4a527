"""The estimated cost: a price table per provider, each price with the page it was read on and the day; a
model (or a search) with no known price makes the cost unknown, never 0."""

from __future__ import annotations

from datetime import date

import pytest

from datascraper.evaluation.pricing import PRICES, SEARCH_PRICES, estimate_cost, price_of, usage_cost
from datascraper.schemas import ModelUsage, UsageLedger


def usage(input: int = 0, cached: int = 0, output: int = 0, searches: int = 0) -> ModelUsage:
    return ModelUsage(
        input_tokens=input, cached_tokens=cached, output_tokens=output, web_search_calls=searches, calls=1
    )


@pytest.mark.parametrize("provider", sorted(PRICES))
def test_every_price_says_where_it_was_read_and_when(provider) -> None:
    for model, price in PRICES[provider].items():
        assert price.source.startswith("https://"), model
        assert date(2026, 1, 1) <= price.checked <= date.today(), model
        assert 0 < price.cached_input <= price.input < price.output, model


def test_a_model_is_found_by_its_label_and_any_snapshot_of_it() -> None:
    assert price_of("gpt-5.4") is price_of("openai:gpt-5.4") is price_of("gpt-5.4-2026-03-05")
    assert price_of("anthropic:claude-sonnet-4-5-20250929") is PRICES["anthropic"]["claude-sonnet-4-5"]
    assert price_of("claude-sonnet-4-5") is None  # no prefix is OpenAI's, which has no such model
    assert price_of("google:gemini-2.5-flash") is None
    assert price_of("openai-compatible:qwen2.5:14b") is None


def test_cost_counts_fresh_and_cached_input_output_and_hosted_searches() -> None:
    cost = usage_cost("gpt-5.4", usage(input=1_000_000, cached=400_000, output=100_000, searches=3))

    assert cost == pytest.approx(0.6 * 2.50 + 0.4 * 0.25 + 0.1 * 15.00 + 3 * 10.0 / 1000)


def test_an_anthropic_model_is_priced_from_its_own_table() -> None:
    cost = usage_cost("anthropic:claude-haiku-4-5", usage(input=2_000_000, cached=1_000_000, output=200_000))

    assert cost == pytest.approx(1 * 1.00 + 1 * 0.10 + 0.2 * 5.00)


def test_an_unknown_price_makes_the_cost_unknown_never_zero() -> None:
    assert usage_cost("google:gemini-2.5-flash", usage(input=10, output=10)) is None
    # Anthropic's web search price is not in the table: a run that searched with it has no estimate.
    assert usage_cost("anthropic:claude-sonnet-4-5", usage(input=10, output=10, searches=1)) is None
    ledger = UsageLedger()
    ledger.record("gpt-5.4", usage(input=100, output=10))
    ledger.record("openai-compatible:llama3.3", usage(input=100, output=10))
    assert estimate_cost(ledger) is None


def test_a_run_s_search_api_calls_are_priced_per_search_api() -> None:
    ledger = UsageLedger()
    ledger.record("gpt-5.4", usage(input=1_000_000))
    for _ in range(4):
        ledger.record_search("brave")

    assert estimate_cost(ledger) == pytest.approx(2.50 + 4 * 5.00 / 1000)
    assert all(price.source.startswith("https://") for price in SEARCH_PRICES.values())

    ledger.record_search("searxng")  # the operator's own instance: nothing per search
    assert estimate_cost(ledger) == pytest.approx(2.50 + 4 * 5.00 / 1000)

    ledger.search_calls["another-api"] = 1
    assert estimate_cost(ledger) is None
