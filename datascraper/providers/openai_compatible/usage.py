"""One Chat Completions call's usage, as billed: `prompt_tokens`, `completion_tokens`, and the cached and
reasoning details where the server gives them (many send the two totals only)."""

from __future__ import annotations

from openai.types import CompletionUsage

from datascraper.schemas import ModelUsage


def usage_from_chat(usage: CompletionUsage | None) -> ModelUsage:
    if usage is None:
        return ModelUsage(calls=1)
    prompt_details, completion_details = usage.prompt_tokens_details, usage.completion_tokens_details
    return ModelUsage(
        calls=1,
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cached_tokens=(prompt_details.cached_tokens if prompt_details else 0) or 0,
        reasoning_tokens=(completion_details.reasoning_tokens if completion_details else 0) or 0,
    )
