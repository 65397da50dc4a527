"""One streamed answer from a Chat Completions server (`stream: true`, ending `data: [DONE]`).

Its usage comes in the last chunk when asked with `stream_options.include_usage`; a server that refuses that
option (a 400 naming it) is asked without it from then on, for the process, and the call then counts as one
call of unknown tokens. Such a server has no hosted web search: a request for one is refused before anything
is sent (the configuration is refused at start for the same reason).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from typing import Any

import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam

from datascraper.errors import (
    HostedSearchUnavailable,
    ModelRefused,
    ResearchError,
    StreamInterrupted,
    UpstreamTimeout,
)
from datascraper.models_config import get_research_config
from datascraper.providers.base import TextRequest
from datascraper.providers.openai_compatible.failures import failure_in_stream, translate_compatible_error
from datascraper.providers.openai_compatible.usage import usage_from_chat
from datascraper.schemas import ModelUsage, Source

logger = logging.getLogger(__name__)

# Base URLs of the servers that refused `stream_options`: asked without it since.
_NO_STREAM_OPTIONS: set[str] = set()
_CUT_SHORT = ("length", "content_filter")


class ChatCompletionsStream:
    """A `TextStream` over one streamed `chat.completions.create`. It cites nothing itself: the text's `[n]`
    markers are the ones the prompt's numbered passages or findings asked for, so `sources` is empty."""

    def __init__(self, request: TextRequest, client: AsyncOpenAI, base_url: str) -> None:
        self._request = request
        self._client = client
        self._base_url = base_url
        self._usage = ModelUsage(calls=1)
        self._complete = False
        self._finish: str | None = None
        self._refusal: list[str] = []

    @property
    def usage(self) -> ModelUsage:
        return self._usage

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def sources(self) -> list[Source]:
        return []

    async def __aiter__(self) -> AsyncGenerator[str, None]:
        label = self._request.model.label
        if self._request.web_search:
            raise HostedSearchUnavailable(get_research_config().setting_of(label), "openai-compatible")
        shown = False
        stream = await self._open()
        failure: ResearchError | None = None
        cause: BaseException | None = None
        try:
            async with stream:
                async for chunk in stream:
                    text = self._on_chunk(chunk)
                    if text:
                        shown = True
                        yield text
        except openai.APITimeoutError as exc:  # quiet between chunks: the server stopped answering
            failure, cause = UpstreamTimeout("The OpenAI-compatible server stopped answering part way."), exc
        except openai.APIConnectionError as exc:
            failure, cause = StreamInterrupted(), exc
        except openai.APIError as exc:  # an `error` object inside the stream
            failure, cause = failure_in_stream(exc.body, model=label), exc
        failure = failure or self._ending_failure(shown)
        if failure is not None:
            raise failure from cause
        self._complete = True

    async def _open(self) -> openai.AsyncStream[ChatCompletionChunk]:
        """The stream, asked with `include_usage` unless this server refused it (then once again without)."""
        label, name = self._request.model.label, self._request.model.name
        with_usage = self._base_url not in _NO_STREAM_OPTIONS
        try:
            return await self._create(with_usage)
        except openai.BadRequestError as exc:
            if not (with_usage and "stream_options" in f"{exc.param} {exc.body}"):
                raise translate_compatible_error(exc, model=label, name=name) from exc
            _NO_STREAM_OPTIONS.add(self._base_url)
            logger.info("The server at OPENAI_COMPATIBLE_BASE_URL refused stream_options: asked without it now.")
        except openai.OpenAIError as exc:
            raise translate_compatible_error(exc, model=label, name=name) from exc
        try:
            return await self._create(False)
        except openai.OpenAIError as exc:
            raise translate_compatible_error(exc, model=label, name=name) from exc

    async def _create(self, with_usage: bool) -> openai.AsyncStream[ChatCompletionChunk]:
        options: dict[str, Any] = {"stream_options": {"include_usage": True}} if with_usage else {}
        return await self._client.chat.completions.create(
            model=self._request.model.name, messages=_messages(self._request), stream=True, **options
        )

    def _on_chunk(self, chunk: ChatCompletionChunk) -> str:
        if chunk.usage is not None:
            self._usage = usage_from_chat(chunk.usage)
        text: list[str] = []
        for choice in chunk.choices:
            if choice.delta.content:
                text.append(choice.delta.content)
            if choice.delta.refusal:
                self._refusal.append(choice.delta.refusal)
            if choice.finish_reason:
                self._finish = choice.finish_reason
        return "".join(text)

    def _ending_failure(self, shown: bool) -> ResearchError | None:
        """What a stream that ended without an error still failed at: no finish, cut short, or refused."""
        if self._refusal and not shown:
            return ModelRefused("".join(self._refusal)[:500] or None)
        if self._finish is None:
            return StreamInterrupted("The answer stream ended before the answer was complete.")
        if self._finish in _CUT_SHORT:
            return StreamInterrupted(f"The model stopped before finishing the answer (reason: {self._finish}).")
        return None


def _messages(request: TextRequest) -> list[ChatCompletionMessageParam]:
    messages: list[ChatCompletionMessageParam] = [{"role": "system", "content": request.instructions}]
    for turn in request.history:
        if turn.role == "user":
            messages.append({"role": "user", "content": turn.content})
        else:
            messages.append({"role": "assistant", "content": turn.content})
    messages.append({"role": "user", "content": request.question})
    return messages
