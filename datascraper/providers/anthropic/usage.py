"""One Anthropic call's usage, from a message's `usage` (the SDK's object or a streamed event's JSON).

The Messages API counts input in three parts, `input_tokens` (not cached), `cache_creation_input_tokens`
and `cache_read_input_tokens`, where the product counts all input with the cached part inside it
(`ModelUsage.cached_tokens` is part of `input_tokens`). Hosted web searches are billed per search:
`server_tool_use.web_search_requests`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from datascraper.schemas import ModelUsage

USAGE_FIELDS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
    "server_tool_use",
)


def _field(source: Any, name: str) -> Any:
    return source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)


def usage_fields(usage: Any) -> dict[str, Any]:
    """The fields of a `usage` that are set: a stream's `message_delta` repeats only some of them
    (cumulatively), to be laid over those of its `message_start`."""
    return {name: value for name in USAGE_FIELDS if (value := _field(usage, name)) is not None}


def usage_from_message(usage: Any) -> ModelUsage:
    """The usage of one call; absent fields count as zero."""
    if usage is None:
        return ModelUsage(calls=1)
    fresh = _field(usage, "input_tokens") or 0
    written = _field(usage, "cache_creation_input_tokens") or 0
    read = _field(usage, "cache_read_input_tokens") or 0
    server_tools = _field(usage, "server_tool_use")
    return ModelUsage(
        calls=1,
        input_tokens=fresh + written + read,
        cached_tokens=read,
        output_tokens=_field(usage, "output_tokens") or 0,
        web_search_calls=(_field(server_tools, "web_search_requests") if server_tools is not None else 0) or 0,
    )
