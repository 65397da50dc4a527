"""Anthropic's failures as the named errors of `datascraper.errors`, each with a code a user can act on.

The error body's `type` decides (`{"type": "error", "error": {"type": "not_found_error", "message": ...}}`),
then the status: the same types come as an HTTP error or, once a stream has begun with HTTP 200, as an
`error` event (an `overloaded_error` part way through an answer). An account without credit is a 400
`invalid_request_error` whose message says the credit balance is too low: that message is the only sign of
it, so it is read here (never shown). A `billing_error`, a 402 and the spend-limit codes of
`error.details.error_code` mean the same to a user.

Messages are ours: the upstream body may echo the request, so it never reaches a user. The original
exception stays available as `__cause__` when the caller raises `from exc`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import anthropic
import httpx2

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

KEY_SETTING = "ANTHROPIC_API_KEY"
_NO_CREDIT = re.compile(r"credit balance is too low", re.IGNORECASE)
_SPEND_LIMIT_CODES = frozenset(
    {"contract_spend_limit_reached", "enforced_spend_limit_reached", "linked_organization_spend_limit_reached"}
)
_PLAIN_TYPE = re.compile(r"[a-z][a-z0-9_]{0,63}")


def auth_failed() -> ProviderAuthFailed:
    return ProviderAuthFailed(f"The model provider rejected the configured API key: check {KEY_SETTING}.")


def quota_exceeded() -> ProviderQuotaExceeded:
    return ProviderQuotaExceeded(
        f"The model provider's account has no credit left: check the plan and billing of {KEY_SETTING}."
    )


def failure_for_error(
    error_type: object, message: object, *, code: object = None, model: str | None = None
) -> ResearchError | None:
    """The named error an error body's `type` (with its message and `details.error_code`) calls for, or None
    when they alone do not say."""
    if error_type == "billing_error" or code in _SPEND_LIMIT_CODES:
        return quota_exceeded()
    if error_type == "invalid_request_error" and isinstance(message, str) and _NO_CREDIT.search(message):
        return quota_exceeded()
    if error_type in ("authentication_error", "permission_error"):
        return auth_failed()
    if error_type == "not_found_error" and model is not None:
        return ModelUnavailable(model, get_research_config().setting_of(model))
    if error_type == "rate_limit_error":
        return UpstreamRateLimited()
    if error_type == "timeout_error":
        return UpstreamTimeout()
    return None


def translate_error(exc: BaseException, *, model: str | None = None) -> ResearchError:
    """The named error for an SDK failure (raised after the SDK's own retries); `model` is the one asked,
    by its label."""
    if isinstance(exc, ResearchError):
        return exc
    if isinstance(exc, anthropic.APITimeoutError | TimeoutError):
        return UpstreamTimeout()
    if isinstance(exc, anthropic.APIConnectionError):
        return UpstreamError("Could not connect to the model provider.")
    if not isinstance(exc, anthropic.APIStatusError):
        return UpstreamError()
    by_type = failure_for_error(exc.type, exc.api_message, code=exc.error_code, model=model)
    if by_type is not None:
        return by_type
    status = exc.status_code
    if status == 402:
        return quota_exceeded()
    if status in (401, 403):
        return auth_failed()
    if status == 429:
        return UpstreamRateLimited()
    if status == 404 and model is not None:
        return ModelUnavailable(model, get_research_config().setting_of(model))
    named = _plain(exc.type)
    return UpstreamError(f"The model provider returned an error (HTTP {status}{f', {named}' if named else ''}).")


def stream_failure(event: Mapping[str, Any], *, model: str | None = None) -> ResearchError:
    """The named error for an `error` event inside a stream that began with HTTP 200."""
    error = event.get("error")
    error = error if isinstance(error, Mapping) else {}
    details = error.get("details")
    code = details.get("error_code") if isinstance(details, Mapping) else None
    found = failure_for_error(error.get("type"), error.get("message"), code=code, model=model)
    if found is not None:
        return found
    named = _plain(error.get("type"))
    return UpstreamError(f"The model provider failed while writing the answer{f' ({named})' if named else ''}.")


def _plain(value: object) -> str | None:
    """`value` when it reads as an error type: a proxy in between may put anything there."""
    return value if isinstance(value, str) and _PLAIN_TYPE.fullmatch(value) else None


async def refuse_retry_over_spend_limit(response: httpx2.Response) -> None:
    """An httpx response hook: a 429 whose `error.details.error_code` is a spend limit is marked
    `x-should-retry: false`, which the SDK obeys, so an account over its limit costs one request, not
    three, and fails at once (waiting does not lift a monthly limit)."""
    if response.status_code != 429:
        return
    await response.aread()
    try:
        details = json.loads(response.content)["error"].get("details") or {}
        code = details.get("error_code")
    except (ValueError, KeyError, TypeError, AttributeError):
        return
    if code in _SPEND_LIMIT_CODES:
        response.headers["x-should-retry"] = "false"
