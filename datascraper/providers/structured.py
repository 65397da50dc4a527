"""Structured-output calls: the planner's and the judge's JSON answers, validated against their pydantic schema,
from whichever provider serves the model."""

from __future__ import annotations

import asyncio
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from datascraper.errors import ModelRefused, ResearchError, StructuredOutputInvalid, UpstreamTimeout
from datascraper.models_config import get_research_config
from datascraper.providers.base import ReasoningEffort, StructuredRequest
from datascraper.providers.registry import provider_for
from datascraper.schemas import ModelUsage, UsageLedger

SchemaT = TypeVar("SchemaT", bound=BaseModel)


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
    """One structured-output call: the model (`gpt-5.4-mini`, `openai:gpt-5.4-mini`) must answer with JSON
    matching `schema`.

    The provider returns the raw text and the JSON is validated here, so the call's usage is recorded even
    when the output does not parse. Every call that was sent counts in `ledger` (by the model's label),
    failed or not; a provider that is not configured sends nothing and counts nothing.

    Structured calls are the planner's, so the whole call, the provider's retries included, is bounded by
    `timeout_s` (default `RESEARCH_PLANNER_TIMEOUT`) and raises `UpstreamTimeout` past it: a hung
    planner costs its caller's fallback that long, not the request timeout times the tries.
    """
    config = get_research_config()
    provider, ref = provider_for(model)
    provider.ensure_configured()
    timeout_s = config.planner_timeout_s if timeout_s is None else timeout_s
    if timeout_s <= 0:
        raise UpstreamTimeout("No time was left to ask the model.")
    request = StructuredRequest(ref, instructions, input, schema, effort, timeout_s)
    try:
        async with asyncio.timeout(timeout_s):
            reply = await provider.structured(request)
    except TimeoutError as exc:
        ledger.record(ref.label, ModelUsage(calls=1))
        raise UpstreamTimeout() from exc
    except ResearchError:
        ledger.record(ref.label, ModelUsage(calls=1))
        raise
    ledger.record(ref.label, reply.usage)
    if reply.refusal is not None:
        raise ModelRefused(reply.refusal[:500] or None)
    if not reply.complete:
        raise StructuredOutputInvalid("The model stopped before finishing its structured answer.")
    try:
        return schema.model_validate_json(reply.text)
    except ValidationError as exc:
        raise StructuredOutputInvalid() from exc
