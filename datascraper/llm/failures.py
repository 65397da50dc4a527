"""Provider failures as the named errors of `datascraper.errors`, each with a code a user can act on.

Messages are ours: the upstream body may echo the request, so it never reaches a user. The original
exception stays available as `__cause__` when the caller raises `from exc`.
"""

from __future__ import annotations

import json

import httpx2
import openai

from datascraper.errors import (
    ModelUnavailable,
    ProviderAuthFailed,
    ProviderQuotaExceeded,
    ResearchError,
    UpstreamError,
    UpstreamRateLimited,
    UpstreamTimeout,
)
from datascraper.models_config import get_research_config

# The 429 the provider sends when an account has no credit left: retrying it only repeats the refusal.
QUOTA_EXHAUSTED_CODE = "insufficient_quota"


def setting_for(model: str) -> str | None:
    """The setting that chose `model`, so an error can say what to change."""
    config = get_research_config()
    if model == config.research_model:
        return "RESEARCH_MODEL"
    if model == config.planner_model:
        return "RESEARCH_PLANNER_MODEL"
    return None


def translate_error(exc: BaseException, *, model: str | None = None) -> ResearchError:
    """The named error for an SDK failure (raised after the SDK's own retries); `model` is the one asked."""
    if isinstance(exc, ResearchError):
        return exc
    if isinstance(exc, openai.RateLimitError):
        return ProviderQuotaExceeded() if exc.code == QUOTA_EXHAUSTED_CODE else UpstreamRateLimited()
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return UpstreamTimeout()
    if isinstance(exc, openai.APIConnectionError):
        return UpstreamError("Could not connect to the model provider.")
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return ProviderAuthFailed()
    if isinstance(exc, openai.NotFoundError) and model is not None and exc.code in ("model_not_found", None):
        return ModelUnavailable(model, setting_for(model))
    if isinstance(exc, openai.APIStatusError):
        return UpstreamError(f"The model provider returned an error (HTTP {exc.status_code}).")
    return UpstreamError()


async def refuse_retry_without_credit(response: httpx2.Response) -> None:
    """An httpx response hook: a 429 `insufficient_quota` is marked `x-should-retry: false`, which the SDK
    obeys, so a key without credit costs one request, not three, and fails at once."""
    if response.status_code != 429:
        return
    await response.aread()
    try:
        code = (json.loads(response.content).get("error") or {}).get("code")
    except (ValueError, AttributeError):
        return
    if code == QUOTA_EXHAUSTED_CODE:
        response.headers["x-should-retry"] = "false"
