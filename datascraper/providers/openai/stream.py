"""One streamed answer from the Responses API: its events read as JSON, its text shown with `[n]` markers."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import httpx2
import openai
from openai import AsyncAPIResponse

from datascraper.errors import ModelRefused, ResearchError, StreamInterrupted, UpstreamTimeout
from datascraper.providers.base import TextRequest
from datascraper.providers.openai.capabilities import request_options
from datascraper.providers.openai.citations import CitationRewriter
from datascraper.providers.openai.failures import stream_failure, translate_error
from datascraper.providers.openai.usage import usage_from_response
from datascraper.schemas import ModelUsage, Source

WEB_SEARCH_TOOL: dict[str, str] = {"type": "web_search"}


class MalformedStreamEvent(ValueError):
    """An SSE frame of the answer stream whose data is not a JSON object."""


async def stream_event_payloads(response: AsyncAPIResponse[Any]) -> AsyncIterator[dict[str, Any]]:
    """The JSON object of each server-sent event of a Responses stream, in order.

    The SDK's own stream builds a typed event model for every frame, most of them text deltas, and that
    was the largest part of a research run's CPU; the few fields read here are taken from the JSON.
    """
    data: list[str] = []
    async for line in response.iter_lines():
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif not line and data:
            payload, data = "\n".join(data), []
            if payload.startswith("[DONE]"):
                return
            try:
                event = json.loads(payload)
            except ValueError as exc:
                raise MalformedStreamEvent("An answer stream event is not JSON.") from exc
            if not isinstance(event, dict):
                raise MalformedStreamEvent("An answer stream event is not a JSON object.")
            yield event


class ResponsesStream:
    """A `TextStream` over one streamed `responses.create` (with the hosted `web_search` tool when asked)."""

    def __init__(self, request: TextRequest, client: openai.AsyncOpenAI) -> None:
        self._request = request
        self._client = client
        self._rewriter = CitationRewriter(source_offset=request.source_offset)
        self._usage = ModelUsage(calls=1)
        self._complete = False
        self._shown = False
        self._refusal: list[str] = []

    @property
    def usage(self) -> ModelUsage:
        return self._usage

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def sources(self) -> list[Source]:
        return self._rewriter.sources

    async def __aiter__(self) -> AsyncGenerator[str, None]:
        # The raw response: the SDK still sends the request, retries it, bounds it with its timeout and
        # turns an error status into its named exception; only the events are read here. `input` and
        # `tools` are plain JSON already and go as they are: as typed parameters, the SDK's request
        # transform walked them for about 0.4 ms of CPU per call.
        request, label = self._request, self._request.model.label
        body: dict[str, Any] = {"input": _input(request)}
        if request.web_search:
            body["tools"] = [WEB_SEARCH_TOOL]
        call = self._client.responses.with_streaming_response.create(
            model=request.model.name,
            instructions=request.instructions,
            stream=True,
            extra_body=body,
            **request_options(request.model.name, web_search=request.web_search),
        )
        failure: ResearchError | None = None
        cause: BaseException | None = None
        async with AsyncExitStack() as closing:
            try:
                response = await closing.enter_async_context(call)
            except (openai.OpenAIError, TimeoutError) as exc:
                raise translate_error(exc, model=label) from exc
            try:
                async for event in stream_event_payloads(response):
                    shown = self._on_event(event)
                    if shown:
                        self._shown = True
                        yield shown
            except ResearchError as exc:
                failure = exc
            except (httpx2.TimeoutException, TimeoutError) as exc:
                # A read timeout between events: the provider went quiet, not the connection broke.
                failure, cause = UpstreamTimeout(), exc
            except (httpx2.RequestError, MalformedStreamEvent) as exc:
                failure, cause = StreamInterrupted(), exc
        held = self._rewriter.flush()
        if held:
            self._shown = True
            yield held
        if failure is None and not self._complete:
            failure = StreamInterrupted("The answer stream ended before the answer was complete.")
        if failure is None and self._refusal and not self._shown:
            failure = ModelRefused("".join(self._refusal)[:500] or None)
        if failure is not None:
            raise failure from cause

    def _on_event(self, event: dict[str, Any]) -> str:
        """Text to show for one stream event (its JSON); raises the named error for a failure event."""
        kind = event.get("type")
        if kind == "response.output_text.delta":
            return self._rewriter.feed(event.get("delta") or "")
        if kind == "response.output_text.annotation.added":
            annotation = event.get("annotation")
            if isinstance(annotation, dict) and annotation.get("type") == "url_citation" and annotation.get("url"):
                self._rewriter.cite(annotation["url"], annotation.get("title") or "")
            return ""
        if kind == "response.output_text.done":
            return self._rewriter.flush()
        if kind == "response.refusal.delta":
            # The model declined: its words are kept apart, and the answer ends as a refusal, not as text.
            self._refusal.append(event.get("delta") or "")
            return ""
        if kind == "response.completed":
            response = _response_of(event)
            self._usage = usage_from_response(response.get("usage"), response.get("output"))
            self._complete = True
            return self._rewriter.flush()
        if kind == "response.failed":
            response = _response_of(event)
            self._usage = usage_from_response(response.get("usage"), response.get("output"))
            raise stream_failure(event, model=self._request.model.label)
        if kind == "response.incomplete":
            response = _response_of(event)
            self._usage = usage_from_response(response.get("usage"), response.get("output"))
            reason = (response.get("incomplete_details") or {}).get("reason") or "unknown"
            raise StreamInterrupted(f"The model stopped before finishing the answer (reason: {reason}).")
        if kind == "error" or event.get("error"):
            # An account without credit gets HTTP 200 and then this, before `response.failed`: the code
            # decides (the SDK's stream raised for any event carrying an `error` object too).
            raise stream_failure(event, model=self._request.model.label)
        return ""


def _input(request: TextRequest) -> list[dict[str, str]]:
    turns = [{"role": turn.role, "content": turn.content} for turn in request.history]
    return [*turns, {"role": "user", "content": request.question}]


def _response_of(event: dict[str, Any]) -> dict[str, Any]:
    response = event.get("response")
    return response if isinstance(response, dict) else {}
