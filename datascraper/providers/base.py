"""The one small interface every model provider implements, and the typed values that cross it.

A provider answers three kinds of call, the only ones the product makes of a model: a structured answer (the
planner's, the judge's), a streamed answer with its citations (a web search with the provider's own hosted
search tool, or the written answer without it), and the list of the models it serves (the lifecycle check).
Each provider speaks its own wire through its own SDK behind this interface, so citations, usage and error
codes are read where the provider gives them, and nothing above it knows which provider answered.

What every implementation guarantees:
- its failures are the named errors of `datascraper.errors` (`ModelUnavailable` naming the model and its
  setting, `ProviderAuthFailed`, `ProviderQuotaExceeded`, `UpstreamRateLimited`, `UpstreamTimeout`,
  `UpstreamError`, `StreamInterrupted`, `ModelRefused`), the SDK's exception as `__cause__`, never its body;
- `ensure_configured` raises `ProviderNotConfigured` before anything is sent, so a call that was never made
  is never counted;
- usage is reported as billed (`ModelUsage`: input, cached input, output, reasoning tokens, hosted searches),
  also for a call that failed part way.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Literal, Protocol

from pydantic import BaseModel

from datascraper.model_ref import ModelRef, ProviderName
from datascraper.schemas import ChatTurn, ModelUsage, Source

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]

ModelListing = Mapping[str, date | None]
"""The models a provider serves to this key, by the provider's own name, each with its announced shutdown
date (None: none announced, or the provider does not say)."""


@dataclass(frozen=True, slots=True)
class StructuredRequest:
    """A call whose answer must be JSON matching `schema` (strict, where the provider can enforce it)."""

    model: ModelRef
    instructions: str
    input: str
    schema: type[BaseModel]
    effort: ReasoningEffort
    # The bound of the whole call, the provider's retries included: no single try may outlast it either.
    timeout_s: float


@dataclass(frozen=True, slots=True)
class StructuredReply:
    """What the model wrote, unparsed: the caller validates it, so its usage counts even when it is invalid.
    `refusal` is the model's own words when it declined; `complete` is false when it stopped part way."""

    text: str
    usage: ModelUsage
    refusal: str | None = None
    complete: bool = True


@dataclass(frozen=True, slots=True)
class TextRequest:
    """A streamed answer to `question`, after the conversation's `history`.

    With `web_search` the model searches with its provider's hosted tool and cites the pages it used;
    without it, it writes from what the prompt holds. Cited pages are numbered after `source_offset`.
    """

    model: ModelRef
    instructions: str
    question: str
    history: tuple[ChatTurn, ...] = ()
    web_search: bool = False
    source_offset: int = 0


class TextStream(Protocol):
    """One streamed answer. Iterated (once), it yields the text as it may be shown: each citation already a
    `[n]` marker naming one of `sources`. A failure part way first yields the text held back, then raises
    the named error; `usage` and `complete` then describe what the call did and cost."""

    @property
    def usage(self) -> ModelUsage: ...

    @property
    def complete(self) -> bool: ...

    @property
    def sources(self) -> list[Source]: ...

    def __aiter__(self) -> AsyncGenerator[str, None]:
        """An async generator, so that a caller that stops early can close the call at once."""
        ...


class ModelProvider(Protocol):
    """A model provider: one module per provider implements it (`datascraper.providers.openai` first)."""

    @property
    def name(self) -> ProviderName: ...

    def ensure_configured(self) -> None:
        """Raise `ProviderNotConfigured` (nothing sent) when this provider's key or address is missing."""
        ...

    async def structured(self, request: StructuredRequest) -> StructuredReply:
        """One structured answer; raises the named errors."""
        ...

    def stream_text(self, request: TextRequest) -> TextStream:
        """One streamed answer; nothing is sent before iteration starts."""
        ...

    async def list_models(self, *, timeout_s: float) -> ModelListing:
        """The models this key may use, read once (no retries) within `timeout_s`; raises the named errors."""
        ...

    async def warm_up(self, schemas: Sequence[type[BaseModel]]) -> None:
        """Build at process start what the first calls would build on the way (the structured calls' request
        formats for `schemas`, the SDK's types, the client's pool), sending nothing. May raise: the caller
        logs it and serves anyway."""
        ...
