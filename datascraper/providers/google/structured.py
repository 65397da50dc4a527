"""A structured answer from the Gemini API: the pydantic schema as `responseJsonSchema`, the answer unparsed."""

from __future__ import annotations

from functools import cache
from typing import Any

from google.genai import types
from pydantic import BaseModel

from datascraper.models_config import get_research_config
from datascraper.providers.base import StructuredReply, StructuredRequest
from datascraper.providers.google.answers import answer_text, first_candidate, refusal_of
from datascraper.providers.google.client import NO_FUNCTION_CALLING, get_gemini_client, milliseconds
from datascraper.providers.google.failures import SDK_FAILURES, translate_error
from datascraper.providers.google.retries import with_retries
from datascraper.providers.google.usage import usage_from_metadata


@cache
def json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The schema as JSON Schema, built once per schema. `responseJsonSchema` takes JSON Schema as pydantic
    writes it (`$defs` and `$ref` included), where the older `responseSchema` takes an OpenAPI subset."""
    return schema.model_json_schema()


async def structured_answer(request: StructuredRequest) -> StructuredReply:
    """One `generateContent` answering JSON of `request.schema`.

    The request's reasoning effort is not sent: Gemini families take different thinking options
    (`thinkingBudget`, `thinkingLevel`) and refuse the others, so each model thinks as its default. Each
    try is bounded by the whole call's bound (`request.timeout_s`).
    """
    config = get_research_config()
    client = get_gemini_client()
    generation = types.GenerateContentConfig(
        system_instruction=request.instructions,
        response_mime_type="application/json",
        response_json_schema=json_schema(request.schema),
        automatic_function_calling=NO_FUNCTION_CALLING,
        http_options=types.HttpOptions(timeout=milliseconds(min(config.request_timeout_s, request.timeout_s))),
    )
    try:
        response = await with_retries(
            lambda: client.aio.models.generate_content(
                model=request.model.name, contents=request.input, config=generation
            )
        )
    except SDK_FAILURES as exc:
        raise translate_error(exc, model=request.model.label) from exc
    candidate = first_candidate(response)
    finish = candidate.finish_reason if candidate is not None else None
    return StructuredReply(
        text=answer_text(candidate),
        usage=usage_from_metadata(response.usage_metadata),
        refusal=refusal_of(response, finish),
        complete=finish in (None, types.FinishReason.STOP),
    )
