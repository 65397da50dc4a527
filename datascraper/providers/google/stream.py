"""A streamed Gemini answer (`streamGenerateContent?alt=sse`), with the Google Search tool when asked.

Without the search tool (the synthesizer) the text is shown as it arrives. With it, the text is held until
the stream ends: the grounding metadata that says where each citation goes comes with the last chunks,
after the text it points into, so a marker can only be placed once the whole answer is known
(`grounding.Grounding`). A web-searched answer therefore reaches its reader in one piece when the model
has finished; for a research sub-question nobody reads it before then anyway.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

import httpx2
from google import genai
from google.genai import errors, types

from datascraper.errors import ModelRefused, ResearchError, StreamInterrupted, UpstreamTimeout
from datascraper.providers.base import TextRequest
from datascraper.providers.google.answers import answer_text, first_candidate, refusal_of
from datascraper.providers.google.client import NO_FUNCTION_CALLING
from datascraper.providers.google.failures import SDK_FAILURES, translate_error
from datascraper.providers.google.grounding import Grounding
from datascraper.providers.google.retries import with_retries
from datascraper.providers.google.usage import usage_from_metadata
from datascraper.schemas import ModelUsage, Source
from datascraper.sources import CitedPages

GOOGLE_SEARCH = types.Tool(google_search=types.GoogleSearch())


class GeminiStream:
    """A `TextStream` over one `generate_content_stream` call."""

    def __init__(self, request: TextRequest, client: genai.Client) -> None:
        self._request = request
        self._client = client
        self._pages = CitedPages(source_offset=request.source_offset)
        self._grounding = Grounding()
        self._usage = ModelUsage(calls=1)
        self._complete = False
        self._finish: types.FinishReason | None = None
        self._refusal: str | None = None
        self._metered: types.GenerateContentResponseUsageMetadata | None = None
        self._wrote = False  # whether any answer text arrived

    @property
    def usage(self) -> ModelUsage:
        return self._usage

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def sources(self) -> list[Source]:
        return self._pages.sources

    async def __aiter__(self) -> AsyncGenerator[str, None]:
        request = self._request
        try:
            chunks, first = await with_retries(self._open)
        except SDK_FAILURES as exc:
            raise translate_error(exc, model=request.model.label) from exc
        held: list[str] = []
        failure: ResearchError | None = None
        cause: BaseException | None = None
        try:
            async for chunk in _chained(first, chunks):
                text = self._on_chunk(chunk)
                if text and request.web_search:
                    held.append(text)
                elif text:
                    yield text
        except (httpx2.TimeoutException, TimeoutError) as exc:
            # A read timeout between chunks: the provider went quiet, not the connection broke.
            failure, cause = UpstreamTimeout(), exc
        except errors.APIError as exc:
            failure, cause = translate_error(exc, model=request.model.label), exc
        except SDK_FAILURES as exc:
            failure, cause = StreamInterrupted(), exc
        finally:
            await _close(chunks)
        if held:
            yield self._grounding.cite("".join(held), self._pages)
        failure = failure or self._outcome()
        if failure is not None:
            raise failure from cause

    async def _open(self) -> tuple[AsyncIterator[types.GenerateContentResponse], types.GenerateContentResponse | None]:
        """The stream and its first response: the SDK sends the request when the stream is first read, so an
        error status (to be retried, or named) comes with the first response, not with the call."""
        request = self._request
        turns = [(turn.role, turn.content) for turn in request.history] + [("user", request.question)]
        chunks = await self._client.aio.models.generate_content_stream(
            model=request.model.name,
            contents=[
                types.Content(role="model" if role == "assistant" else "user", parts=[types.Part(text=text)])
                for role, text in turns
            ],
            config=types.GenerateContentConfig(
                system_instruction=request.instructions,
                tools=[GOOGLE_SEARCH] if request.web_search else None,
                automatic_function_calling=NO_FUNCTION_CALLING,
            ),
        )
        try:
            return chunks, await anext(chunks, None)
        except BaseException:
            await _close(chunks)
            raise

    def _on_chunk(self, chunk: types.GenerateContentResponse) -> str:
        """The text of one streamed response; its grounding, usage and finish are noted."""
        candidate = first_candidate(chunk)
        if candidate is not None and candidate.grounding_metadata is not None:
            self._grounding.add(candidate.grounding_metadata)
        if candidate is not None and candidate.finish_reason is not None:
            self._finish = candidate.finish_reason
        self._refusal = refusal_of(chunk, self._finish) or self._refusal
        # Each response carries the running totals: the last one is the call's.
        self._metered = chunk.usage_metadata or self._metered
        self._usage = usage_from_metadata(self._metered, web_searches=len(self._grounding.queries))
        text = answer_text(candidate)
        self._wrote = self._wrote or bool(text)
        return text

    def _outcome(self) -> ResearchError | None:
        """The failure of a stream that ended by itself, if it did not end with a whole answer."""
        if self._refusal is not None and not self._wrote:
            return ModelRefused(self._refusal[:500])
        if self._finish == types.FinishReason.STOP:
            self._complete = True
            return None
        if self._finish is None:
            return StreamInterrupted("The answer stream ended before the answer was complete.")
        reason = getattr(self._finish, "value", self._finish)
        return StreamInterrupted(f"The model stopped before finishing the answer (reason: {reason}).")


async def _chained(
    first: types.GenerateContentResponse | None, rest: AsyncIterator[types.GenerateContentResponse]
) -> AsyncIterator[types.GenerateContentResponse]:
    if first is None:
        return
    yield first
    async for chunk in rest:
        yield chunk


async def _close(chunks: AsyncIterator[types.GenerateContentResponse]) -> None:
    """Close the HTTP stream now, also when the reader stopped early (not at garbage collection)."""
    close = getattr(chunks, "aclose", None)
    if close is not None:
        await close()
