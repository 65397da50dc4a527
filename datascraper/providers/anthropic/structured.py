"""A structured answer from the Messages API: the schema as the structured-outputs format, the answer unparsed.

`output_config.format` (a JSON schema) constrains the model's text to the schema, where a forced tool call
only asks for it; the SDK's `transform_schema` writes the schema as the API takes it (every object closed
with `additionalProperties: false`, the keywords the API refuses moved into descriptions).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import anthropic
from pydantic import BaseModel

from datascraper.models_config import get_research_config
from datascraper.providers.anthropic.client import get_anthropic_client
from datascraper.providers.anthropic.failures import translate_error
from datascraper.providers.anthropic.usage import usage_from_message
from datascraper.providers.base import StructuredReply, StructuredRequest

# The Messages API requires `max_tokens`. The planner's answers are a few hundred tokens; 8,192 is what
# every current Claude model takes (a value above a model's own limit is a 400).
STRUCTURED_MAX_TOKENS = 8192


@cache
def output_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The `output_config` of a structured call for `schema`, built once per schema."""
    return {"format": {"type": "json_schema", "schema": anthropic.transform_schema(schema)}}


async def structured_answer(request: StructuredRequest) -> StructuredReply:
    """One `messages.create` whose text must be JSON of `request.schema`.

    Each try's timeout is bounded by the whole call's; the caller bounds the retries together. A refusal
    is the `refusal` stop reason (its text, if any, the model's words); `max_tokens` means the JSON was cut.
    """
    config = get_research_config()
    model = request.model
    try:
        message = await get_anthropic_client().messages.create(
            model=model.name,
            max_tokens=STRUCTURED_MAX_TOKENS,
            system=request.instructions,
            messages=[{"role": "user", "content": request.input}],
            extra_body={"output_config": output_format(request.schema)},
            timeout=min(config.request_timeout_s, request.timeout_s),
        )
    except anthropic.AnthropicError as exc:
        raise translate_error(exc, model=model.label) from exc
    text = "".join(block.text for block in message.content if block.type == "text")
    refused = message.stop_reason == "refusal"
    return StructuredReply(
        text="" if refused else text,
        usage=usage_from_message(message.usage),
        refusal=text if refused else None,
        complete=message.stop_reason in ("end_turn", "stop_sequence", "refusal"),
    )
