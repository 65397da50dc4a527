"""A Chat Completions server's failures as the named errors of `datascraper.errors`.

Such servers mostly send OpenAI's error body (`{"error": {"message", "type", "param", "code"}}`), so the
`openai` provider's translation serves what is the same (`insufficient_quota`, rate limits, 5xx). What
differs is settled here first: the messages name this provider's settings; an unknown model is a 404 whose
code may be null (Ollama), the status as a number (vLLM: `"code": 404`) or `model_not_found`; an account
without credit is a 402 (OpenRouter); a server that is down is a refused connection, not an outage of a
hosted API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
from datascraper.providers.openai.failures import (
    MODEL_NOT_FOUND_CODE,
    QUOTA_EXHAUSTED_CODE,
    stream_failure,
    translate_error,
)

NO_CREDIT_CODES = (QUOTA_EXHAUSTED_CODE, "402")


def auth_failed() -> ProviderAuthFailed:
    return ProviderAuthFailed(
        "The OpenAI-compatible server rejected the key: check OPENAI_COMPATIBLE_API_KEY (unset when the server "
        "needs none)."
    )


def no_credit() -> ProviderQuotaExceeded:
    return ProviderQuotaExceeded(
        "The OpenAI-compatible server's account has no credit left: check the plan and billing of "
        "OPENAI_COMPATIBLE_API_KEY."
    )


def translate_compatible_error(
    exc: BaseException, *, model: str | None = None, name: str | None = None
) -> ResearchError:
    """The named error for an SDK failure (after the SDK's own retries). `model` is the model asked, by its
    label; `name` its name on the server (which the server's message quotes)."""
    if isinstance(exc, ResearchError):
        return exc
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return UpstreamTimeout("The OpenAI-compatible server at OPENAI_COMPATIBLE_BASE_URL did not answer in time.")
    if isinstance(exc, openai.APIConnectionError):
        return UpstreamError(
            "Could not connect to the OpenAI-compatible server at OPENAI_COMPATIBLE_BASE_URL: is it running?"
        )
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return auth_failed()
    if isinstance(exc, openai.APIStatusError) and (exc.status_code == 402 or exc.code in NO_CREDIT_CODES):
        return no_credit()
    if isinstance(exc, openai.NotFoundError) and model is not None:
        if exc.code == MODEL_NOT_FOUND_CODE or (name and name in str(exc.body)):
            return ModelUnavailable(model, get_research_config().setting_of(model))
        return UpstreamError(
            "The server at OPENAI_COMPATIBLE_BASE_URL has no Chat Completions endpoint (HTTP 404): check that "
            "the URL ends in /v1."
        )
    if isinstance(exc, openai.APIError) and exc.code == "invalid_api_key":
        return auth_failed()
    return translate_error(exc, model=model)


def failure_in_stream(error: object, *, model: str) -> ResearchError:
    """The named error for an `error` object a server sent inside a stream that began with HTTP 200
    (OpenRouter does, with the status as its code)."""
    code = str(error.get("code")) if isinstance(error, Mapping) and error.get("code") is not None else None
    if code in NO_CREDIT_CODES:
        return no_credit()
    if code in ("401", "invalid_api_key"):
        return auth_failed()
    if code == "429":
        return UpstreamRateLimited()
    event: dict[str, Any] = {"error": error if isinstance(error, Mapping) else {}}
    return stream_failure(event, model=model)
