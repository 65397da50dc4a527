"""The Gemini API's failures as the named errors of `datascraper.errors`, each with a code a user can act on.

What the API answers (Google's error body, `{"error": {"code", "message", "status", "details": [...]}}`):

- a wrong key is a **400** INVALID_ARGUMENT, not a 401: its `details` carry an `ErrorInfo` with reason
  `API_KEY_INVALID` and its message says "API key not valid"; a key without access is a 403
  PERMISSION_DENIED. Both are `ProviderAuthFailed`;
- an unknown or retired model is a 404 NOT_FOUND: `ModelUnavailable` naming the setting;
- a 429 RESOURCE_EXHAUSTED is both the per-minute rate limit and the daily quota, and its message says
  "You exceeded your current quota" for both, so the text cannot tell them apart. The `QuotaFailure`
  detail can: a violated `quotaId` with `PerDay` is a quota that resets only the next day
  (`ProviderQuotaExceeded`, never retried); any other 429 is a rate limit (`UpstreamRateLimited`, retried
  within the call's bound by `retries.with_retries`).

Messages are ours: the upstream body may echo the request, so it never reaches a user. The caller raises
`from exc`, so the SDK's exception stays available as `__cause__`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import httpx2
from google.genai import errors

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

_QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_PLAIN_STATUS = re.compile(r"[A-Z][A-Z_]{0,63}")

# What a Gemini call may raise: the API's errors, and the transport's (timeouts, lost connections).
SDK_FAILURES = (errors.APIError, errors.UnknownApiResponseError, httpx2.HTTPError, TimeoutError)

AUTH_FAILED = "The model provider rejected the configured API key: check GEMINI_API_KEY."
DAILY_QUOTA = (
    "The Gemini API's daily quota for this key is used up: check the plan and billing of GEMINI_API_KEY "
    "(the quota resets the next day)."
)


def translate_error(exc: BaseException, *, model: str | None = None) -> ResearchError:
    """The named error for a failed call (after our retries); `model` is the one asked, by its label."""
    if isinstance(exc, ResearchError):
        return exc
    if isinstance(exc, httpx2.TimeoutException | TimeoutError):
        return UpstreamTimeout()
    if isinstance(exc, httpx2.RequestError):
        return UpstreamError("Could not connect to the model provider.")
    if not isinstance(exc, errors.APIError):
        return UpstreamError()
    if is_invalid_key(exc) or exc.code in (401, 403):
        return ProviderAuthFailed(AUTH_FAILED)
    if exc.code == 404 and model is not None:
        return ModelUnavailable(model, get_research_config().setting_of(model))
    if exc.code == 429:
        return ProviderQuotaExceeded(DAILY_QUOTA) if is_daily_quota(exc) else UpstreamRateLimited()
    status = exc.status if isinstance(exc.status, str) and _PLAIN_STATUS.fullmatch(exc.status) else None
    named = f"HTTP {exc.code}, {status}" if status else f"HTTP {exc.code}"
    return UpstreamError(f"The model provider returned an error ({named}).")


def is_invalid_key(exc: errors.APIError) -> bool:
    """The API's answer to a key it does not know: a 400 INVALID_ARGUMENT, reason `API_KEY_INVALID`."""
    if exc.code != 400:
        return False
    reasons = {detail.get("reason") for detail in _details(exc) if detail.get("@type") == _ERROR_INFO}
    return "API_KEY_INVALID" in reasons or "API key not valid" in (exc.message or "")


def is_daily_quota(exc: errors.APIError) -> bool:
    """A 429 whose violated quota is counted per day: waiting seconds or minutes does not help."""
    return any(
        "PerDay" in str(violation.get("quotaId") or "")
        for detail in _details(exc)
        if detail.get("@type") == _QUOTA_FAILURE
        for violation in detail.get("violations") or ()
        if isinstance(violation, Mapping)
    )


def is_retryable(exc: BaseException) -> bool:
    """A failure another try may not meet: a rate limit, an overloaded or failing server, a lost connection."""
    if isinstance(exc, errors.APIError):
        if exc.code == 429:
            return not is_daily_quota(exc)
        return exc.code in (408, 500, 502, 503, 504)
    return isinstance(exc, httpx2.TransportError)


def _details(exc: errors.APIError) -> Iterator[Mapping[str, Any]]:
    body = exc.details if isinstance(exc.details, Mapping) else {}
    error = body.get("error", body)
    listed = error.get("details") if isinstance(error, Mapping) else None
    for detail in listed if isinstance(listed, list) else ():
        if isinstance(detail, Mapping):
            yield detail
