"""One web-searched answer from the Responses API, streamed as cited text.

The hosted `web_search` tool cites with inline markdown links placed after a sentence,
`... 6%. ([reuters.com](https://...?utm_source=openai))`, and sends the matching `url_citation`
annotation only after the text it spans. The answer must still reach the user as it is written, so the
text passes through a `CitationRewriter` that holds back only what could be the start of such a link and
replaces each complete link with a numbered `[n]` marker naming a `Source`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import AsyncExitStack, aclosing
from dataclasses import dataclass
from datetime import date
from enum import Enum
from typing import Any

import httpx2
import openai
from openai import AsyncAPIResponse
from pydantic import BaseModel

from datascraper import prompts
from datascraper.errors import ModelRefused, ResearchError, StreamInterrupted, UpstreamTimeout
from datascraper.llm import (
    breaker,
    get_openai_client,
    request_options,
    stream_failure,
    translate_error,
    usage_from_response,
)
from datascraper.models_config import get_research_config
from datascraper.schemas import ChatTurn, DeltaEvent, ModelUsage, Source, UsageLedger
from datascraper.sources import clean_url
from datascraper.stream_rewriter import INCOMPLETE, StreamRewriter

WEB_SEARCH_TOOL: dict[str, str] = {"type": "web_search"}


class WebSearchResult(BaseModel):
    """What one web-searched answer produced. `complete` is false when the stream broke off."""

    text: str
    sources: list[Source]
    usage: ModelUsage
    model: str
    complete: bool


# --- citations ------------------------------------------------------------------------------------------


class _Scan(Enum):
    COMPLETE = "complete"
    PARTIAL = "partial"
    NOT_A_GROUP = "not_a_group"


@dataclass(frozen=True)
class _GroupScan:
    state: _Scan
    end: int = 0
    links: tuple[tuple[str, str], ...] = ()


_SEPARATORS = ",; "


def _scan_citation_group(text: str) -> _GroupScan:
    """Match `([label](url))` or `([a](u1), [b](u2))` at the start of `text` (which starts with `(`).

    PARTIAL means `text` may still become a group once more text arrives.
    """
    n = len(text)
    links: list[tuple[str, str]] = []
    i = 1
    while True:
        if i == n:
            return _GroupScan(_Scan.PARTIAL)
        if text[i] != "[":
            return _GroupScan(_Scan.NOT_A_GROUP)
        label_end = i + 1
        while label_end < n and text[label_end] not in "][\n":
            label_end += 1
        if label_end == n:
            return _GroupScan(_Scan.PARTIAL)
        if text[label_end] != "]" or label_end == i + 1:
            return _GroupScan(_Scan.NOT_A_GROUP)
        label = text[i + 1 : label_end]
        i = label_end + 1
        if i == n:
            return _GroupScan(_Scan.PARTIAL)
        if text[i] != "(":
            return _GroupScan(_Scan.NOT_A_GROUP)
        url_end = i + 1
        while url_end < n and text[url_end] != ")" and not text[url_end].isspace():
            url_end += 1
        if url_end == n:
            return _GroupScan(_Scan.PARTIAL)
        url = text[i + 1 : url_end]
        if text[url_end] != ")" or not url.startswith(("https://", "http://")):
            return _GroupScan(_Scan.NOT_A_GROUP)
        links.append((label, url))
        i = url_end + 1
        if i == n:
            return _GroupScan(_Scan.PARTIAL)
        if text[i] == ")":
            return _GroupScan(_Scan.COMPLETE, i + 1, tuple(links))
        separator_end = i
        while separator_end < n and text[separator_end] in _SEPARATORS:
            separator_end += 1
        if separator_end == n:
            return _GroupScan(_Scan.PARTIAL)
        if separator_end == i or text[separator_end] != "[":
            return _GroupScan(_Scan.NOT_A_GROUP)
        i = separator_end


@dataclass
class _CitedPage:
    n: int
    url: str
    title: str


class CitationRewriter(StreamRewriter):
    """Rewrites streamed answer text: each inline citation link becomes `[n]`, numbered per URL.

    Only a segment that could still turn out to be a citation link is held back, and never more than
    `max_held_chars` of it. Numbers start after `source_offset` so a caller can merge the sources of
    several answers into one list.
    """

    opener = "("

    def __init__(self, *, source_offset: int = 0, max_held_chars: int = 500) -> None:
        super().__init__()
        self.max_held = max_held_chars
        self._next_n = source_offset + 1
        self._pages: dict[str, _CitedPage] = {}

    def scan(self, text: str) -> tuple[str, int] | str | None:
        scan = _scan_citation_group(text)
        if scan.state is _Scan.PARTIAL:
            return INCOMPLETE
        if scan.state is _Scan.NOT_A_GROUP:
            return None
        numbers = dict.fromkeys(self.cite(url, label, from_link=True) for label, url in scan.links)
        return "".join(f"[{n}]" for n in numbers), scan.end

    def cite(self, url: str, title: str, *, from_link: bool = False) -> int:
        """The number of `url`'s source, registering it if new.

        A link only carries the domain as its label; the annotation's page title replaces it.
        """
        key = clean_url(url)
        page = self._pages.get(key)
        if page is None:
            page = self._pages[key] = _CitedPage(n=self._next_n, url=key, title=title)
            self._next_n += 1
        elif not from_link and title:
            page.title = title
        return page.n

    @property
    def sources(self) -> list[Source]:
        return [Source(n=p.n, title=p.title, url=p.url, kind="web") for p in self._pages.values()]


# --- the streamed call ----------------------------------------------------------------------------------


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


class WebSearchStream:
    """One web-searched answer, iterated as `DeltaEvent`s while the model writes it.

    After iteration `result` holds the text, sources and usage. When the answer fails part way, iteration
    first yields whatever text was held back, then raises the named error; `result` then describes the
    partial answer (`complete=False`), which is exactly the text the deltas carried.
    """

    def __init__(
        self,
        question: str,
        *,
        history: Sequence[ChatTurn] = (),
        instructions: str | None = None,
        model: str | None = None,
        ledger: UsageLedger | None = None,
        source_offset: int = 0,
        today: date | None = None,
        web_search: bool = True,
    ) -> None:
        self.model = model or get_research_config().research_model
        # Without the tool the same stream handling serves the synthesizer, which writes from findings.
        self._web_search = web_search
        self._question = question
        self._history = tuple(history)
        self._instructions = prompts.with_today(
            instructions or prompts.QUICK_ANSWER_INSTRUCTIONS, today or date.today()
        )
        self._ledger = ledger
        self._rewriter = CitationRewriter(source_offset=source_offset)
        self._text: list[str] = []
        self._usage = ModelUsage(calls=1)
        self._complete = False
        self._started = False
        self._refusal: list[str] = []

    @property
    def result(self) -> WebSearchResult:
        return WebSearchResult(
            text="".join(self._text),
            sources=self._rewriter.sources,
            usage=self._usage,
            model=self.model,
            complete=self._complete,
        )

    async def __aiter__(self) -> AsyncGenerator[DeltaEvent, None]:
        if self._started:
            raise RuntimeError("A WebSearchStream can be iterated only once.")
        self._started = True
        if self._web_search:
            breaker.WEB_SEARCH.check()  # before anything is sent or counted
        client = get_openai_client()
        try:
            # `aclosing`: a consumer that stops early closes the HTTP stream now, not at garbage collection.
            async with aclosing(self._deltas(client)) as deltas:
                async for delta in deltas:
                    yield delta
        finally:
            # Also when the consumer stops early: the call was made and may have cost tokens.
            if self._ledger is not None:
                self._ledger.record(self.model, self._usage)

    async def _deltas(self, client: openai.AsyncOpenAI) -> AsyncGenerator[DeltaEvent, None]:
        # The raw response: the SDK still sends the request, retries it, bounds it with its timeout and
        # turns an error status into its named exception; only the events are read here. `input` and
        # `tools` are plain JSON already and go as they are: as typed parameters, the SDK's request
        # transform walked them for about 0.4 ms of CPU per call.
        body: dict[str, Any] = {"input": self._input()}
        if self._web_search:
            body["tools"] = [WEB_SEARCH_TOOL]
        request = client.responses.with_streaming_response.create(
            model=self.model,
            instructions=self._instructions,
            stream=True,
            extra_body=body,
            **request_options(self.model, web_search=self._web_search),
        )
        failure: ResearchError | None = None
        cause: BaseException | None = None
        async with AsyncExitStack() as closing:
            try:
                response = await closing.enter_async_context(request)
            except (openai.OpenAIError, TimeoutError) as exc:
                failure = translate_error(exc, model=self.model)
                self._note_outcome(failure)
                raise failure from exc
            try:
                async for event in stream_event_payloads(response):
                    shown = self._on_event(event)
                    if shown:
                        yield self._show(shown)
            except ResearchError as exc:
                failure = exc
            except (httpx2.TimeoutException, TimeoutError) as exc:
                # A read timeout between events: the provider went quiet, not the connection broke.
                failure, cause = UpstreamTimeout(), exc
            except (httpx2.RequestError, MalformedStreamEvent) as exc:
                failure, cause = StreamInterrupted(), exc
        held = self._rewriter.flush()
        if held:
            yield self._show(held)
        if failure is None and not self._complete:
            failure = StreamInterrupted("The answer stream ended before the answer was complete.")
        if failure is None and self._refusal and not self._text:
            failure = ModelRefused("".join(self._refusal)[:500] or None)
        self._note_outcome(failure)
        if failure is not None:
            raise failure from cause

    def _note_outcome(self, failure: ResearchError | None) -> None:
        """A web search that timed out opens the breaker; one that answered closes it."""
        if not self._web_search:
            return
        if isinstance(failure, UpstreamTimeout):
            breaker.WEB_SEARCH.trip(get_research_config().breaker_cooldown_s)
        elif failure is None:
            breaker.WEB_SEARCH.close()

    def _input(self) -> list[dict[str, str]]:
        turns = [{"role": turn.role, "content": turn.content} for turn in self._history]
        return [*turns, {"role": "user", "content": self._question}]

    def _show(self, text: str) -> DeltaEvent:
        self._text.append(text)
        return DeltaEvent(text=text)

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
            raise stream_failure(event, model=self.model)
        if kind == "response.incomplete":
            response = _response_of(event)
            self._usage = usage_from_response(response.get("usage"), response.get("output"))
            reason = (response.get("incomplete_details") or {}).get("reason") or "unknown"
            raise StreamInterrupted(f"The model stopped before finishing the answer (reason: {reason}).")
        if kind == "error" or event.get("error"):
            # An account without credit gets HTTP 200 and then this, before `response.failed`: the code
            # decides (the SDK's stream raised for any event carrying an `error` object too).
            raise stream_failure(event, model=self.model)
        return ""


def _response_of(event: dict[str, Any]) -> dict[str, Any]:
    response = event.get("response")
    return response if isinstance(response, dict) else {}
