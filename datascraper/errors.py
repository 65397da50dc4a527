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


class DeadlineExceeded(ResearchError):
    """The run's hard deadline (`RESEARCH_RUN_TIMEOUT`) passed before an answer was written.

    Research past its own, earlier deadline is not an error: the answer is written from the findings so
    far. This is raised only when the answer itself cannot be finished in time.
    """

    code = "deadline_exceeded"
    default_message = "The research ran out of time before the answer could be finished."
