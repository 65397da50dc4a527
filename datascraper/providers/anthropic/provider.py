"""Anthropic behind the provider interface: the Messages API (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from datascraper.model_ref import ProviderName
from datascraper.models_config import get_research_config
from datascraper.providers.anthropic.client import get_anthropic_client
from datascraper.providers.anthropic.models import list_anthropic_models
from datascraper.providers.anthropic.stream import MessagesStream
from datascraper.providers.anthropic.structured import output_format, structured_answer
from datascraper.providers.base import ModelListing, StructuredReply, StructuredRequest, TextRequest


class AnthropicProvider:
    """The `anthropic` provider: structured output through the structured-outputs format, streamed answers
    with the hosted web search tool and its `web_search_result_location` citations, and `GET /v1/models`
    with each model's retirement date."""

    @property
    def name(self) -> ProviderName:
        return "anthropic"

    def ensure_configured(self) -> None:
        get_anthropic_client()  # raises ProviderNotConfigured without ANTHROPIC_API_KEY

    async def structured(self, request: StructuredRequest) -> StructuredReply:
        return await structured_answer(request)

    def stream_text(self, request: TextRequest) -> MessagesStream:
        return MessagesStream(request, get_anthropic_client())

    async def list_models(self, *, timeout_s: float) -> ModelListing:
        return await list_anthropic_models(timeout_s=timeout_s)

    async def warm_up(self, schemas: Sequence[type[BaseModel]]) -> None:
        """The structured calls' formats for `schemas`, and this loop's client when a key is set."""
        for schema in schemas:
            output_format(schema)
        if get_research_config().provider_configured("anthropic"):
            get_anthropic_client()
