"""OpenAI behind the provider interface: the Responses API (`OPENAI_API_KEY`, `OPENAI_BASE_URL`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import openai
from pydantic import BaseModel

from datascraper.model_ref import ProviderName
from datascraper.providers.base import ModelListing, StructuredReply, StructuredRequest, TextRequest
from datascraper.providers.openai.client import get_openai_client
from datascraper.providers.openai.failures import translate_error
from datascraper.providers.openai.stream import ResponsesStream
from datascraper.providers.openai.structured import structured_answer
from datascraper.providers.openai.warm_up import warm_up_openai


class OpenAIProvider:
    """The `openai` provider: structured output through a strict `text.format`, streamed answers with the
    hosted `web_search` tool and its `url_citation`s, and `GET /v1/models` with its shutdown dates."""

    @property
    def name(self) -> ProviderName:
        return "openai"

    def ensure_configured(self) -> None:
        get_openai_client()  # raises ProviderNotConfigured without OPENAI_API_KEY

    async def structured(self, request: StructuredRequest) -> StructuredReply:
        return await structured_answer(request)

    def stream_text(self, request: TextRequest) -> ResponsesStream:
        return ResponsesStream(request, get_openai_client())

    async def list_models(self, *, timeout_s: float) -> ModelListing:
        client = get_openai_client().with_options(timeout=timeout_s, max_retries=0)
        try:
            return {model.id: _shutdown_date(model.shutdown_date) async for model in client.models.list()}
        except openai.OpenAIError as exc:
            raise translate_error(exc) from exc

    async def warm_up(self, schemas: Sequence[type[BaseModel]]) -> None:
        await warm_up_openai(schemas)


def _shutdown_date(value: object) -> date | None:
    try:
        return date.fromisoformat(str(value)) if value else None
    except ValueError:
        return None
