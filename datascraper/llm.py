"""The provider layer: the OpenAI client, request options per model, usage and error translation.

Every model call of the research router goes through here, so the rules the API enforces (no
`temperature` for reasoning models, no `minimal` effort with web search) and the mapping of SDK failures
to the named errors of `datascraper.errors` live in one place.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal, TypeVar

import openai
from openai import AsyncOpenAI
from openai.types.responses import ResponseUsage
from pydantic import BaseModel, ValidationError

from datascraper.errors import (
    ProviderNotConfigured,
    ResearchError,
    UpstreamError,
    UpstreamRateLimited,
    UpstreamTimeout,
)
from datascraper.models_config import get_research_config, is_reasoning_model
from datascraper.schemas import ModelUsage, UsageLedger

ReasoningEffort = Literal["minimal", "low", "medium", "high"]
SchemaT = TypeVar("SchemaT", bound=BaseModel)


class StructuredOutputInvalid(ResearchError):
    code = "invalid_model_output"
    default_message = "The model returned an answer in an unexpected shape."


# --- the client ---------------------------------------------------------------------------------------

_client: AsyncOpenAI | None = None
_client_loop: asyncio.AbstractEventLoop | None = None


def get_openai_client() -> AsyncOpenAI:
    """The shared client, created on first use from `get_research_config()`.

    One client per process keeps one connection pool. The pool belongs to the event loop that opened its
    connections, so a different running loop (a CLI's `asyncio.run`, a test) gets a client of its own.
    """
    global _client, _client_loop
    config = get_research_config()
    if not config.is_configured:
        raise ProviderNotConfigured()
    loop = _running_loop()
    if _client is None or _client_loop is not loop:
        assert config.openai_api_key is not None  # is_configured checked it
        _client = AsyncOpenAI(
            api_key=config.openai_api_key.get_secret_value(),
            base_url=config.openai_base_url,
            timeout=config.request_timeout_s,
            max_retries=config.max_retries,
        )
        _client_loop = loop
    return _client


def reset_openai_client() -> None:
    """Forget the shared client, so the next call reads the configuration again (tests, config reload)."""
    global _client, _client_loop
    _client = None
    _client_loop = None


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


# --- requests -----------------------------------------------------------------------------------------


def model_kwargs(
    model: str,
    *,
    effort: ReasoningEffort = "low",
    web_search: bool = False,
    temperature: float | None = None,
) -> dict[str, Any]:
    """The model-dependent keyword arguments of a `responses.create`/`parse` call.

    Reasoning models take `reasoning` and answer 400 to `temperature`, so `temperature` is dropped for
    them; other models (`*-chat-latest`) reject `reasoning`. The hosted web search tool refuses
    `minimal` effort, so it is raised to `low` there.
    """
    if is_reasoning_model(model):
        if web_search and effort == "minimal":
            effort = "low"
        return {"reasoning": {"effort": effort}}
    return {} if temperature is None else {"temperature": temperature}


def usage_from_response(usage: ResponseUsage | None) -> ModelUsage:
    """One call's usage. The SDK builds responses without validation, so absent fields count as zero."""
    if usage is None:
        return ModelUsage(calls=1)
    details = getattr(usage, "output_tokens_details", None)
    return ModelUsage(
        calls=1,
        input_tokens=getattr(usage, "input_tokens", 0) or 0,
        output_tokens=getattr(usage, "output_tokens", 0) or 0,
        reasoning_tokens=getattr(details, "reasoning_tokens", 0) or 0,
    )


# --- failures -----------------------------------------------------------------------------------------


def translate_error(exc: BaseException) -> ResearchError:
    """The named error for an SDK failure (raised after the SDK's own retries).

    Messages are ours: the upstream body may echo the request, so it never reaches a user. The original
    exception stays available as `__cause__` when the caller raises `from exc`.
    """
    if isinstance(exc, ResearchError):
        return exc
    if isinstance(exc, openai.RateLimitError):
        return UpstreamRateLimited()
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return UpstreamTimeout()
    if isinstance(exc, openai.APIConnectionError):
        return UpstreamError("Could not connect to the model provider.")
    if isinstance(exc, openai.AuthenticationError):
        return ProviderNotConfigured("The model provider rejected the configured API key.")
    if isinstance(exc, openai.APIStatusError):
        return UpstreamError(f"The model provider returned an error (HTTP {exc.status_code}).")
    return UpstreamError()


# --- structured output --------------------------------------------------------------------------------


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

    The SDK is asked for the raw text (`parse_as=None`) and the JSON is validated here, so the call's
    usage is recorded even when the output does not parse. Every call counts in `ledger`, failed or not.

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
            response = await bounded.responses.parse(
                model=model,
                instructions=instructions,
                input=input,
                text_format=schema,
                parse_as=None,
                **model_kwargs(model, effort=effort),
            )
    except (openai.OpenAIError, TimeoutError) as exc:
        ledger.record(model, ModelUsage(calls=1))
        raise translate_error(exc) from exc
    ledger.record(model, usage_from_response(response.usage))
    if response.status not in (None, "completed"):
        raise StructuredOutputInvalid("The model stopped before finishing its structured answer.")
    try:
        return schema.model_validate_json(response.output_text)
    except ValidationError as exc:
        raise StructuredOutputInvalid() from exc
