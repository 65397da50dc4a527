"""Any Chat Completions server behind the provider interface (`OPENAI_COMPATIBLE_BASE_URL`,
`OPENAI_COMPATIBLE_API_KEY`): Ollama, vLLM, LM Studio, OpenRouter..."""

from __future__ import annotations

from collections.abc import Sequence

import openai
from pydantic import BaseModel

from datascraper.errors import ModelsNotListed
from datascraper.model_ref import ProviderName
from datascraper.models_config import get_research_config
from datascraper.providers.base import ModelListing, StructuredReply, StructuredRequest, TextRequest
from datascraper.providers.openai_compatible.client import compatible_base_url, get_compatible_client
from datascraper.providers.openai_compatible.failures import translate_compatible_error
from datascraper.providers.openai_compatible.stream import ChatCompletionsStream
from datascraper.providers.openai_compatible.structured import response_format, structured_answer


class OpenAICompatibleProvider:
    """The `openai-compatible` provider: Chat Completions only (never the Responses API). Structured output
    through a strict `json_schema` response format, or JSON asked for in the prompt, validated, with one
    repair; streamed answers without any hosted search; `GET /v1/models` without shutdown dates."""

    @property
    def name(self) -> ProviderName:
        return "openai-compatible"

    def ensure_configured(self) -> None:
        compatible_base_url()  # raises ProviderNotConfigured without an http(s) OPENAI_COMPATIBLE_BASE_URL

    async def structured(self, request: StructuredRequest) -> StructuredReply:
        return await structured_answer(request, get_compatible_client(), compatible_base_url())

    def stream_text(self, request: TextRequest) -> ChatCompletionsStream:
        return ChatCompletionsStream(request, get_compatible_client(), compatible_base_url())

    async def list_models(self, *, timeout_s: float) -> ModelListing:
        """The served (or pulled) models; such servers announce no shutdown dates. A server without the list
        says so (`ModelsNotListed`): the models then go unchecked, nothing else fails."""
        client = get_compatible_client().with_options(timeout=timeout_s, max_retries=0)
        try:
            return {model.id: None async for model in client.models.list()}
        except openai.NotFoundError as exc:
            raise ModelsNotListed() from exc
        except openai.OpenAIError as exc:
            raise translate_compatible_error(exc) from exc

    async def warm_up(self, schemas: Sequence[type[BaseModel]]) -> None:
        for schema in schemas:
            response_format(schema)
        if get_research_config().provider_configured("openai-compatible"):
            get_compatible_client()  # this loop's client and its pool
