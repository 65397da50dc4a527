"""Named failures of the research router. Each carries the `code` of the run's `error` event.

Messages are written for the end user: no traceback, no key, no upstream payload.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datascraper.schemas import RunSummary


class ResearchError(Exception):
    code = "research_failed"
    default_message = "The research could not be completed."

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.default_message)
        # Set by the pipeline on the way out: the failed run's usage, timings and signals.
        self.summary: RunSummary | None = None

    @property
    def message(self) -> str:
        return str(self)


class ProviderNotConfigured(ResearchError):
    code = "provider_not_configured"
    default_message = "The answering model is not configured: set OPENAI_API_KEY."

    @classmethod
    def missing(cls, setting: str) -> ProviderNotConfigured:
        return cls(f"The answering model is not configured: set {setting}.")


class SearchNotConfigured(ProviderNotConfigured):
    """The search provider's address or key is missing or not a URL: nothing was sent."""

    default_message = "The search provider is not configured: set SEARXNG_URL to the instance's root."


class SearchFormatRefused(ProviderNotConfigured):
    """A SearxNG instance answered 403 to `format=json`: its settings do not enable the JSON format, so every
    search would be refused the same way until the operator enables it."""

    default_message = (
        "The SearxNG instance at SEARXNG_URL refuses JSON answers (403): add `json` to `search.formats` in its "
        "settings.yml and restart it."
    )


class HostedSearchUnavailable(ProviderNotConfigured):
    """SEARCH_PROVIDER=hosted with a research model whose provider has no hosted web search (a Chat
    Completions server): every web search would fail, so the process refuses to start on it."""

    def __init__(self, setting: str | None, provider: str) -> None:
        super().__init__(
            f"SEARCH_PROVIDER=hosted needs a research model with its provider's own web search, and "
            f"{setting or 'RESEARCH_MODEL'} names the provider '{provider}', which has none: set SEARCH_PROVIDER "
            f"to a search API (searxng).",
        )
        self.setting = setting
        self.provider = provider


class UpstreamRateLimited(ResearchError):
    code = "rate_limited"
    default_message = "The model provider is rate limiting requests; try again shortly."


class UpstreamTimeout(ResearchError):
    code = "upstream_timeout"
    default_message = "The model provider did not answer in time."


class UpstreamError(ResearchError):
    code = "upstream_error"
    default_message = "The model provider returned an error."


class StreamInterrupted(ResearchError):
    code = "stream_interrupted"
    default_message = "The answer stream from the model provider broke off."


class SearchRateLimited(UpstreamRateLimited):
    default_message = "The search provider is rate limiting requests (429); try again shortly."


class SearchTimeout(UpstreamTimeout):
    default_message = "The search provider did not answer in time."


class SearchUnavailable(UpstreamError):
    """The search provider could not be reached, failed (5xx), or answered something that is not its results."""

    default_message = "The search provider could not be reached or returned an error."


class NothingFound(UpstreamError):
    """A search whose results gave no page that could be read: there is nothing to write from. An upstream
    failure for the user (the contract's codes), with its own message."""

    default_message = "The web search found no page that could be read."


class ModelsNotListed(UpstreamError):
    """The server has no model list (`GET /v1/models` answered 404): the configured models cannot be checked
    against it. Nothing else is wrong with it; runs go on."""

    default_message = (
        "The OpenAI-compatible server at OPENAI_COMPATIBLE_BASE_URL does not list its models (GET /v1/models "
        "answered 404): the configured models cannot be checked."
    )


class DeadlineExceeded(ResearchError):
    """The run's hard deadline (`RESEARCH_RUN_TIMEOUT`) passed before an answer was written.

    Research past its own, earlier deadline is not an error: the answer is written from the findings so
    far. This is raised only when the answer itself cannot be finished in time.
    """

    code = "deadline_exceeded"
    default_message = "The research ran out of time before the answer could be finished."


class ProviderAuthFailed(ResearchError):
    """The provider refused the key (401): retrying cannot help, the operator must change it."""

    code = "provider_auth_failed"
    default_message = "The model provider rejected the configured API key: check OPENAI_API_KEY."


class ProviderQuotaExceeded(ResearchError):
    """The account has no credit left (429 `insufficient_quota`): unlike a rate limit, waiting does not help."""

    code = "provider_quota_exceeded"
    default_message = "The model provider's account has no credit left: check the plan and billing of OPENAI_API_KEY."


class SearchAuthFailed(ProviderAuthFailed):
    """A search API refused its key (missing, wrong or revoked): every search would be refused alike."""

    def __init__(self, api: str, setting: str) -> None:
        super().__init__(f"{api} rejected the configured key: check {setting}.")


class SearchQuotaExceeded(ProviderQuotaExceeded):
    """A search API's account is out of credit or over its plan's limit: waiting within a run does not help."""

    def __init__(self, api: str, setting: str) -> None:
        super().__init__(f"{api} refused the search: the account of {setting} has no credit or plan usage left.")


class ModelUnavailable(ResearchError):
    """The provider does not serve the configured model (404 `model_not_found`): shut down, misspelled, or not
    available to this key. The message names the model and the setting that chose it."""

    code = "model_unavailable"

    def __init__(self, model: str, setting: str | None = None) -> None:
        where = f"set {setting} to a current model" if setting else "choose a current model"
        super().__init__(
            f"The model '{model}' is not available from the model provider (it may have been shut down): {where}."
        )
        self.model = model
        self.setting = setting


class StructuredOutputInvalid(ResearchError):
    """A structured answer that does not parse into its schema, or stopped before it was complete."""

    code = "invalid_model_output"
    default_message = "The model returned an answer in an unexpected shape."


class ModelRefused(ResearchError):
    """The model declined to answer (a `refusal` instead of text). The refusal is the model's own words."""

    code = "model_refused"
    default_message = "The model declined to answer this question."


# Failures of the account itself: no fallback can succeed where these failed, so a run ends with them at once.
ACCOUNT_FAILURES: tuple[type[ResearchError], ...] = (ProviderNotConfigured, ProviderAuthFailed, ProviderQuotaExceeded)
