"""One OpenAI call's usage, from the SDK's response object or a streamed event's JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openai.types.responses import ResponseUsage

from datascraper.schemas import ModelUsage


def _field(source: Any, name: str) -> Any:
    return source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)


def usage_from_response(usage: ResponseUsage | Mapping[str, Any] | None, output: Any = None) -> ModelUsage:
    """The usage of one call. `output` (the response's output items) counts the hosted web searches, which
    are billed per call. The SDK builds responses without validation, so absent fields count as zero."""
    searches = sum(1 for item in output or () if _field(item, "type") == "web_search_call")
    if usage is None:
        return ModelUsage(calls=1, web_search_calls=searches)
    input_details = _field(usage, "input_tokens_details")
    output_details = _field(usage, "output_tokens_details")
    return ModelUsage(
        calls=1,
        input_tokens=_field(usage, "input_tokens") or 0,
        output_tokens=_field(usage, "output_tokens") or 0,
        reasoning_tokens=(_field(output_details, "reasoning_tokens") if output_details else 0) or 0,
        cached_tokens=(_field(input_details, "cached_tokens") if input_details else 0) or 0,
        web_search_calls=searches,
    )
