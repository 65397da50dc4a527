"""One streamed answer from the Messages API: its events read as JSON, its text shown with `[n]` markers.

The events, in order: `message_start` (the message, its input usage), then per content block
`content_block_start`, its `content_block_delta`s and `content_block_stop` (with web search: a
`server_tool_use` block, its `web_search_tool_result`, then text blocks whose `citations_delta`s name the
pages they state), `message_delta` (the stop reason, the cumulative usage), `message_stop`; `ping`s
anywhere, and an `error` event when the provider fails part way (an `overloaded_error`).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

import anthropic
from anthropic import AsyncAPIResponse
from anthropic.types import AssistantMessageParam, MessageParam, UserMessageParam

from datascraper.errors import ModelRefused, ResearchError, StreamInterrupted
from datascraper.providers.anthropic.citations import CitedTextBlocks
from datascraper.providers.anthropic.failures import stream_failure, translate_error
from datascraper.providers.anthropic.usage import usage_fields, usage_from_message
from datascraper.providers.base import TextRequest
from datascraper.providers.event_stream import EventStream
from datascraper.schemas import ModelUsage, Source

# Required by the Messages API; what every current Claude model takes (a value above a model's limit is a 400).
TEXT_MAX_TOKENS = 8192
# Searches one answer may make: a sub-question's answer rarely needs more, and each is billed.
WEB_SEARCH_MAX_USES = 5
WEB_SEARCH_TOOL: dict[str, Any] = {"type": "web_search_20250305", "name": "web_search", "max_uses": WEB_SEARCH_MAX_USES}
_FINISHED = ("end_turn", "stop_sequence")


class MessagesStream(EventStream):
    """A `TextStream` over one streamed `messages.create` (with the hosted web search tool when asked)."""

    sdk_errors = (anthropic.AnthropicError,)

    def __init__(self, request: TextRequest, client: anthropic.AsyncAnthropic) -> None:
        super().__init__(request)
        self._client = client
        self._blocks = CitedTextBlocks(source_offset=request.source_offset, drop_narration=request.web_search)
        self._usage: dict[str, Any] = {}
        self._stop_reason: str | None = None

    @property
    def usage(self) -> ModelUsage:
        return usage_from_message(self._usage or None)

    @property
    def sources(self) -> list[Source]:
        return self._blocks.sources

    def _open(self) -> AbstractAsyncContextManager[AsyncAPIResponse[Any]]:
        # The tools are plain JSON and go as they are, past the SDK's request transform.
        request = self._request
        return self._client.messages.with_streaming_response.create(
            model=request.model.name,
            max_tokens=TEXT_MAX_TOKENS,
            system=request.instructions,
            messages=_messages(request),
            stream=True,
            extra_body={"tools": [WEB_SEARCH_TOOL]} if request.web_search else None,
        )

    def _translate(self, exc: BaseException) -> ResearchError:
        return translate_error(exc, model=self._request.model.label)

    def _flush(self) -> str:
        return self._blocks.flush()

    def _on_event(self, event: dict[str, Any]) -> str:
        kind = event.get("type")
        if kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                return self._blocks.text(delta.get("text") or "")
            if delta.get("type") == "citations_delta":
                self._blocks.cite(_index(event), delta.get("citation"))
            return ""
        if kind == "content_block_start":
            return self._blocks.start(_index(event), event.get("content_block") or {})
        if kind == "content_block_stop":
            return self._blocks.stop(_index(event))
        if kind == "message_start":
            self._usage = usage_fields((event.get("message") or {}).get("usage") or {})
        elif kind == "message_delta":
            self._usage.update(usage_fields(event.get("usage") or {}))
            self._stop_reason = (event.get("delta") or {}).get("stop_reason") or self._stop_reason
        elif kind == "message_stop":
            self._complete = self._stop_reason in _FINISHED
        elif kind == "error":
            raise stream_failure(event, model=self._request.model.label)
        return ""

    def _ending_failure(self) -> ResearchError | None:
        if self._stop_reason == "refusal":
            return ModelRefused()
        if self._stop_reason is not None and self._stop_reason not in _FINISHED:
            # `max_tokens`, or `pause_turn` (a long turn of server tools the API paused): the answer is cut.
            return StreamInterrupted(f"The model stopped before finishing the answer (reason: {self._stop_reason}).")
        return super()._ending_failure()


def _index(event: dict[str, Any]) -> int:
    index = event.get("index")
    return index if isinstance(index, int) else -1


def _messages(request: TextRequest) -> list[MessageParam]:
    # The API refuses a message without content (an answer that failed before writing is stored empty).
    turns: list[MessageParam] = [
        AssistantMessageParam(role="assistant", content=turn.content)
        if turn.role == "assistant"
        else UserMessageParam(role="user", content=turn.content)
        for turn in request.history
        if turn.content.strip()
    ]
    return [*turns, UserMessageParam(role="user", content=request.question)]
