"""Structured-output calls: the planner's JSON answers, validated against their pydantic schema."""

from __future__ import annotations

import asyncio
from functools import cache
from typing import TypeVar

import openai
from openai.lib._parsing._responses import type_to_text_format_param
from openai.types.responses import Response, ResponseFormatTextConfigParam
from pydantic import BaseModel, ValidationError

from datascraper.errors import ModelRefused, ResearchError, UpstreamTimeout
from datascraper.llm.capabilities import ReasoningEffort, request_options
from datascraper.llm.client import get_openai_client
from datascraper.llm.failures import translate_error
from datascraper.llm.usage import usage_from_response
from datascraper.models_config import get_research_config
from datascraper.schemas import ModelUsage, UsageLedger

SchemaT = TypeVar("SchemaT", bound=BaseModel)


class StructuredOutputInvalid(ResearchError):
    code = "invalid_model_output"
    default_message = "The model returned an answer in an unexpected shape."


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


async def parse_structured(
    model: str,
    instructions: str,
    input: str,
    schema: type[SchemaT],
    ledger: UsageLedger,
    *,
    effort: ReasoningEffort = "low",
    timeout_s: float | None = None,
) -> SchemaT:
    """One structured-output call: the model must answer with JSON matching `schema`.

    The SDK returns the raw text and the JSON is validated here, so the call's usage is recorded even
    when the output does not parse. Every call counts in `ledger`, failed or not. The schema goes in
    `extra_body`: it is sent as is, where a typed parameter would be walked through the SDK's
    request transform on every call (it is already JSON).

    Structured calls are the planner's, so the whole call, the SDK's retries included, is bounded by
    `timeout_s` (default `RESEARCH_PLANNER_TIMEOUT`) and raises `UpstreamTimeout` past it: a hung
    planner costs its caller's fallback that long, not the request timeout times the tries.
    """
    config = get_research_config()
    client = get_openai_client()
    timeout_s = config.planner_timeout_s if timeout_s is None else timeout_s
    if timeout_s <= 0:
        raise UpstreamTimeout("No time was left to ask the model.")
    # Each try's own timeout must not outlast the bound of the whole call either.
    bounded = client.with_options(timeout=min(config.request_timeout_s, timeout_s))
    try:
        async with asyncio.timeout(timeout_s):
            response = await bounded.responses.create(
                model=model,
                instructions=instructions,
                input=input,
                extra_body={"text": {"format": text_format(schema)}},
                **request_options(model, effort=effort),
            )
    except (openai.OpenAIError, TimeoutError) as exc:
        ledger.record(model, ModelUsage(calls=1))
        raise translate_error(exc, model=model) from exc
    ledger.record(model, usage_from_response(response.usage, response.output))
    refusal = refusal_of(response)
    if refusal is not None:
        raise ModelRefused(refusal[:500] or None)
    if response.status not in (None, "completed"):
        raise StructuredOutputInvalid("The model stopped before finishing its structured answer.")
    try:
        return schema.model_validate_json(response.output_text)
    except ValidationError as exc:
        raise StructuredOutputInvalid() from exc
