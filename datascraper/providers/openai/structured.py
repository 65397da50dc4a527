"""A structured answer from the Responses API: the schema as a strict `text.format`, the answer unparsed."""

from __future__ import annotations

from functools import cache

import openai
from openai.lib._parsing._responses import type_to_text_format_param
from openai.types.responses import Response, ResponseFormatTextConfigParam
from pydantic import BaseModel

from datascraper.models_config import get_research_config
from datascraper.providers.base import StructuredReply, StructuredRequest
from datascraper.providers.openai.capabilities import request_options
from datascraper.providers.openai.client import get_openai_client
from datascraper.providers.openai.failures import translate_error
from datascraper.providers.openai.usage import usage_from_response


@cache
def text_format(schema: type[BaseModel]) -> ResponseFormatTextConfigParam:
    """The strict JSON schema `text.format` of a structured call, built once per schema: the SDK's
    `responses.parse(text_format=...)` builds it again on every call, which was a tenth of a research
    run's CPU (the same helper, so the request is the same)."""
    return type_to_text_format_param(schema)


def refusal_of(response: Response) -> str | None:
    """The model's refusal, when it declined instead of answering."""
    for item in response.output or ():
        for part in getattr(item, "content", None) or ():
            if getattr(part, "type", None) == "refusal":
                return getattr(part, "refusal", None) or ""
    return None


async def structured_answer(request: StructuredRequest) -> StructuredReply:
    """One `responses.create` with the schema as its `text.format`.

    The SDK returns the raw text and the caller validates it. The schema goes in `extra_body`: it is sent as
    is, where a typed parameter would be walked through the SDK's request transform on every call (it is
    already JSON). Each try's own timeout is bounded by the whole call's (`request.timeout_s`), given with
    the request: a client copied `with_options` for it cost about a third of a millisecond per call.
    """
    config = get_research_config()
    model = request.model
    try:
        response = await get_openai_client().responses.create(
            model=model.name,
            instructions=request.instructions,
            input=request.input,
            extra_body={"text": {"format": text_format(request.schema)}},
            timeout=min(config.request_timeout_s, request.timeout_s),
            **request_options(model.name, effort=request.effort),
        )
    except openai.OpenAIError as exc:
        raise translate_error(exc, model=model.label) from exc
    return StructuredReply(
        text=response.output_text,
        usage=usage_from_response(response.usage, response.output),
        refusal=refusal_of(response),
        complete=response.status in (None, "completed"),
    )
