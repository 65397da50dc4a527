"""One Gemini call's usage, from the response's `usageMetadata` (a streamed answer's last one: each chunk
carries the running totals)."""

from __future__ import annotations

from google.genai import types

from datascraper.schemas import ModelUsage


def usage_from_metadata(
    metadata: types.GenerateContentResponseUsageMetadata | None, *, web_searches: int = 0
) -> ModelUsage:
    """The usage of one call, as billed.

    Input counts the prompt and what the search tool fed the model (`toolUsePromptTokenCount`); cached
    input is `cachedContentTokenCount` (part of the prompt). Output counts the answer
    (`candidatesTokenCount`) and the thinking (`thoughtsTokenCount`), which Gemini bills as output but
    reports apart. `web_searches` is the number of distinct, non-empty queries the search tool ran
    (`webSearchQueries`): Gemini 3 bills grounding per query (older models per grounded prompt)."""
    if metadata is None:
        return ModelUsage(calls=1, web_search_calls=web_searches)
    thoughts = metadata.thoughts_token_count or 0
    return ModelUsage(
        calls=1,
        input_tokens=(metadata.prompt_token_count or 0) + (metadata.tool_use_prompt_token_count or 0),
        cached_tokens=metadata.cached_content_token_count or 0,
        output_tokens=(metadata.candidates_token_count or 0) + thoughts,
        reasoning_tokens=thoughts,
        web_search_calls=web_searches,
    )
