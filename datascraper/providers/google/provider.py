"""Gemini behind the provider interface: the Gemini API (`GEMINI_API_KEY`, `GEMINI_BASE_URL`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from google.genai import types
from pydantic import BaseModel

from datascraper.model_ref import ProviderName
from datascraper.models_config import get_research_config
from datascraper.providers.base import ModelListing, StructuredReply, StructuredRequest, TextRequest
from datascraper.providers.google.client import get_gemini_client, milliseconds
from datascraper.providers.google.failures import SDK_FAILURES, translate_error
from datascraper.providers.google.stream import GeminiStream
from datascraper.providers.google.structured import json_schema, structured_answer

_MODEL_PREFIX = "models/"
_PAGE_SIZE = 1000


class GoogleProvider:
    """The `google` provider: structured output through `responseJsonSchema`, streamed answers with the
    Google Search tool and its grounding metadata, and `GET /v1beta/models` (which announces no shutdown
    dates: a model is live or not listed)."""

    @property
    def name(self) -> ProviderName:
        return "google"

    def ensure_configured(self) -> None:
        get_gemini_client()  # raises ProviderNotConfigured without GEMINI_API_KEY

    async def structured(self, request: StructuredRequest) -> StructuredReply:
        return await structured_answer(request)

    def stream_text(self, request: TextRequest) -> GeminiStream:
        return GeminiStream(request, get_gemini_client())

    async def list_models(self, *, timeout_s: float) -> ModelListing:
        """Every page of the list, within `timeout_s` in all, without retries."""
        config = types.ListModelsConfig(
            page_size=_PAGE_SIZE, http_options=types.HttpOptions(timeout=milliseconds(timeout_s))
        )
        try:
            async with asyncio.timeout(timeout_s):
                pager = await get_gemini_client().aio.models.list(config=config)
                return {(model.name or "").removeprefix(_MODEL_PREFIX): None async for model in pager if model.name}
        except SDK_FAILURES as exc:
            raise translate_error(exc) from exc

    async def warm_up(self, schemas: Sequence[type[BaseModel]]) -> None:
        """The structured calls' JSON schemas, and this loop's client when a key is set; nothing is sent."""
        for schema in schemas:
            json_schema(schema)
        if get_research_config().provider_configured("google"):
            get_gemini_client()
