"""The provider layer: the OpenAI client, request options per model, usage and error translation.

Every model call of the research router goes through here, so the rules the API enforces (no
`temperature` for reasoning models, no `minimal` effort with web search) and the mapping of SDK failures
to the named errors of `datascraper.errors` live in one place.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Literal, TypeVar

import httpx2
import openai
from openai import AsyncOpenAI
from openai.lib._parsing._responses import type_to_text_format_param
from openai.types.responses import ResponseFormatTextConfigParam, ResponseUsage
from pydantic import BaseModel, ValidationError

from datascraper.errors import (
    ProviderNotConfigured,
    ResearchError,
    UpstreamError,
    UpstreamRateLimited,
    UpstreamTimeout,
)
from datascraper.models_config import get_research_config, is_reasoning_model
from datascraper.schemas import GapReport, ModelUsage, QueryAnalysis, UsageLedger

ReasoningEffort = Literal["minimal", "low", "medium", "high"]
SchemaT = TypeVar("SchemaT", bound=BaseModel)

logger = logging.getLogger(__name__)


class StructuredOutputInvalid(ResearchError):
    code = "invalid_model_output"
    default_message = "The model returned an answer in an unexpected shape."


# --- the client ---------------------------------------------------------------------------------------

# The SDK keeps up to 100 idle connections, and its pool probes every idle one for a server hang-up each
# time a request starts or ends: under load that scan was a tenth of a run's CPU. Twenty idle connections
# cover a burst's reuse; past them, a connection is closed rather than kept.
CONNECTION_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=20)

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
            http_client=openai.DefaultAsyncHttpxClient(limits=CONNECTION_LIMITS),
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


def usage_from_response(usage: ResponseUsage | Mapping[str, Any] | None) -> ModelUsage:
    """One call's usage, from the SDK's object or a streamed event's JSON. The SDK builds responses
    without validation, so absent fields count as zero."""
    if usage is None:
        return ModelUsage(calls=1)
    if isinstance(usage, Mapping):
        details = usage.get("output_tokens_details") or {}
        return ModelUsage(
            calls=1,
            input_tokens=usage.get("input_tokens") or 0,
            output_tokens=usage.get("output_tokens") or 0,
            reasoning_tokens=details.get("reasoning_tokens") or 0,
        )
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


@lru_cache(maxsize=None)
def text_format(schema: type[BaseModel]) -> ResponseFormatTextConfigParam:
    """The strict JSON schema `text.format` of a structured call, built once per schema: the SDK's
    `responses.parse(text_format=...)` builds it again on every call, which was a tenth of a research
    run's CPU (the same helper, so the request is the same)."""
    return type_to_text_format_param(schema)


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


# --- warm-up ------------------------------------------------------------------------------------------

# A structured answer with every field the Responses API sends (a reasoning item, then the message), so
# that the warm-up walks the same response types as a planner call; `text` is added per call.
_WARM_UP_RESPONSE: dict[str, Any] = {
    "id": "resp_warm_up",
    "object": "response",
    "created_at": 0,
    "status": "completed",
    "background": False,
    "completed_at": 0,
    "error": None,
    "incomplete_details": None,
    "instructions": "",
    "metadata": {},
    "model": "warm-up",
    "output": [
        {"id": "rs_warm_up", "type": "reasoning", "summary": []},
        {
            "id": "msg_warm_up",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "{}", "annotations": [], "logprobs": []}],
        },
    ],
    "parallel_tool_calls": True,
    "reasoning": {"effort": "low", "summary": None},
    "service_tier": "default",
    "store": True,
    "temperature": 1.0,
    "tool_choice": "auto",
    "tools": [],
    "top_logprobs": 0,
    "top_p": 1.0,
    "truncation": "disabled",
    "usage": {
        "input_tokens": 0,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 0,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 0,
    },
}


async def warm_up_models() -> None:
    """Build at process start what a process's first model calls would otherwise build on the way: the
    planner schemas' `text.format`, the SDK's responses module and its response types (pydantic builds
    their validators on first use), and this loop's client with its connection pool and TLS context.
    That was 0.3-0.8 s of the first research run of a fresh process.

    No request leaves the process: the SDK's response handling runs against a local transport that
    answers one canned response (the model provider costs money and may be unconfigured). Never raises:
    a failure is logged and the first call builds what is missing. Call it on the loop that serves.
    """
    try:
        for schema in (QueryAnalysis, GapReport):
            text_format(schema)
        text = {"format": text_format(QueryAnalysis), "verbosity": "medium"}
        local = httpx2.MockTransport(lambda request: httpx2.Response(200, json={**_WARM_UP_RESPONSE, "text": text}))
        async with httpx2.AsyncClient(transport=local) as http_client:
            sdk = AsyncOpenAI(api_key="warm-up", base_url="http://warm-up.invalid/v1", http_client=http_client)
            await sdk.responses.create(model="warm-up", input="", extra_body={"text": text})
            # The web search streams through this wrapper; building it loads the SDK's streaming types.
            sdk.responses.with_streaming_response  # noqa: B018
        if get_research_config().is_configured:
            get_openai_client()
    except Exception:  # a warm-up never stops a process from serving
        logger.warning("The model client was not warmed up; the first call builds what it needs.", exc_info=True)
