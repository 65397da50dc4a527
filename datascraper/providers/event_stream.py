"""What every provider's streamed answer does alike, whatever its events: open the call, read its server-sent
events as JSON, show what each one writes, and end with the named error of what went wrong.

A provider's stream (`openai.stream.ResponsesStream`, `anthropic.stream.MessagesStream`) says how its call
is opened and its errors named, what each event writes and what its text holds back; this class keeps
the failures in one order for all of them: a failure part way first yields the text held back, then
raises; a read timeout between events is `UpstreamTimeout` (the provider went quiet), a broken connection
or a frame that is not JSON `StreamInterrupted`, and a stream that ends without its final event is
`StreamInterrupted` too.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any, ClassVar

import httpx2

from datascraper.errors import ResearchError, StreamInterrupted, UpstreamTimeout
from datascraper.providers.base import TextRequest
from datascraper.providers.sse import MalformedStreamEvent, StreamedLines, stream_event_payloads
from datascraper.schemas import ModelUsage, Source


class EventStream(ABC):
    """A `TextStream` over one streamed call whose events are server-sent JSON objects."""

    # The SDK's exceptions, which `_translate` names; raised while the call opens (after the SDK's retries).
    sdk_errors: ClassVar[tuple[type[BaseException], ...]]

    def __init__(self, request: TextRequest) -> None:
        self._request = request
        self._complete = False
        self._shown = False

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    @abstractmethod
    def usage(self) -> ModelUsage: ...

    @property
    @abstractmethod
    def sources(self) -> list[Source]: ...

    @abstractmethod
    def _open(self) -> AbstractAsyncContextManager[StreamedLines]:
        """The call, as the SDK's raw streamed response: the SDK still sends it, retries it, bounds it with
        its timeout and turns an error status into its exception; only the events are read here."""

    @abstractmethod
    def _translate(self, exc: BaseException) -> ResearchError:
        """The named error for one of `sdk_errors` (or a timeout) raised while the call opens."""

    @abstractmethod
    def _on_event(self, event: dict[str, Any]) -> str:
        """The text one event writes (possibly nothing); raises the named error for a failure event."""

    @abstractmethod
    def _flush(self) -> str:
        """Whatever text is still held back, as the stream ends."""

    def _ending_failure(self) -> ResearchError | None:
        """The failure of a stream that ended without an error of its own."""
        if not self._complete:
            return StreamInterrupted("The answer stream ended before the answer was complete.")
        return None

    async def __aiter__(self) -> AsyncGenerator[str, None]:
        failure: ResearchError | None = None
        cause: BaseException | None = None
        opening_errors: tuple[type[BaseException], ...] = (*self.sdk_errors, TimeoutError)
        async with AsyncExitStack() as closing:
            try:
                response = await closing.enter_async_context(self._open())
            except opening_errors as exc:
                raise self._translate(exc) from exc
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
        held = self._flush()
        if held:
            self._shown = True
            yield held
        if failure is None:
            failure = self._ending_failure()
        if failure is not None:
            raise failure from cause
