"""OpenAI's failures as the named errors of `datascraper.errors`, each with a code a user can act on.

The provider's error `code` decides, not the HTTP status, because the same failure comes with different
statuses: an unknown or retired model is a 400 `model_not_found` on the Responses API (a 404 on Chat
Completions and on OpenAI-compatible servers), and a streamed call of an account without credit is an
HTTP 200 whose stream then carries an `error` event and `response.failed` with code `insufficient_quota`
(a 429 when not streamed). The status decides only where the body names no code we know.

Messages are ours: the upstream body may echo the request, so it never reaches a user. The original
exception stays available as `__cause__` when the caller raises `from exc`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

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

# The code the provider gives an account with no credit left: retrying it only repeats the refusal.
QUOTA_EXHAUSTED_CODE = "insufficient_quota"
MODEL_NOT_FOUND_CODE = "model_not_found"

# The codes a user or an operator can act on, whatever the status (or the stream) that carried them.
_ACTIONABLE: dict[str, Callable[[], ResearchError]] = {
    QUOTA_EXHAUSTED_CODE: ProviderQuotaExceeded,
    "invalid_api_key": ProviderAuthFailed,
    "rate_limit_exceeded": UpstreamRateLimited,
}
_PLAIN_CODE = re.compile(r"[a-z][a-z0-9_.]{0,63}")


def failure_for_code(code: object, *, model: str | None = None) -> ResearchError | None:
    """The named error the provider's error `code` calls for, or None when the code alone does not say."""
    if code == MODEL_NOT_FOUND_CODE and model is not None:
        return ModelUnavailable(model, get_research_config().setting_of(model))
    make = _ACTIONABLE.get(code) if isinstance(code, str) else None
    return make() if make is not None else None


def translate_error(exc: BaseException, *, model: str | None = None) -> ResearchError:
    """The named error for an SDK failure (raised after the SDK's own retries); `model` is the one asked,
    by its label."""
    if isinstance(exc, ResearchError):
        return exc
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return UpstreamTimeout()
    if isinstance(exc, openai.APIConnectionError):
        return UpstreamError("Could not connect to the model provider.")
    if isinstance(exc, openai.APIError):
        by_code = failure_for_code(exc.code, model=model)
        if by_code is not None:
            return by_code
    if isinstance(exc, openai.RateLimitError):
        return UpstreamRateLimited()
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return ProviderAuthFailed()
    if isinstance(exc, openai.NotFoundError) and model is not None and exc.code is None:
        # An OpenAI-compatible server's bare 404 for a model it does not serve.
        return ModelUnavailable(model, get_research_config().setting_of(model))
    if isinstance(exc, openai.APIStatusError):
        named = _plain(exc.code)
        status = f"HTTP {exc.status_code}, {named}" if named else f"HTTP {exc.status_code}"
        return UpstreamError(f"The model provider returned an error ({status}).")
    if isinstance(exc, openai.APIError):  # the SDK's own stream raises this for an `error` event
        return _failed_while_writing(exc.code)
    return UpstreamError()


def stream_failure(event: Mapping[str, Any], *, model: str | None = None) -> ResearchError:
    """The named error for a failure reported inside a stream that began with HTTP 200: an `error` event
    (the real API nests its fields under `error`; the SDK's own type has them at the top) or
    `response.failed` (its `response.error`)."""
    if event.get("type") == "response.failed":
        response = event.get("response")
        error = response.get("error") if isinstance(response, Mapping) else None
    else:
        error = event.get("error") if isinstance(event.get("error"), Mapping) else event
    code = error.get("code") if isinstance(error, Mapping) else None
    return failure_for_code(code, model=model) or _failed_while_writing(code)


def _failed_while_writing(code: object) -> UpstreamError:
    named = _plain(code)
    return UpstreamError(f"The model provider failed while writing the answer{f' ({named})' if named else ''}.")


def _plain(code: object) -> str | None:
    """`code` when it reads as one: an OpenAI-compatible server may put anything there."""
    return code if isinstance(code, str) and _PLAIN_CODE.fullmatch(code) else None


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
