"""One streamed, cited answer from the research model, whichever provider serves it.

With the model's hosted web search it answers a question (the quick path, each web sub-question); without
it, it writes from what its prompt holds (the synthesizer). The provider's stream gives the text with each
citation already a `[n]` marker naming one of its sources; here the answer is counted, timed by the web
search breaker and kept as a `WebSearchResult`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from datetime import date

from pydantic import BaseModel, Field

from datascraper import prompts
from datascraper.errors import ResearchError, UpstreamTimeout
from datascraper.model_ref import parse_model
from datascraper.models_config import get_research_config
from datascraper.providers import breaker
from datascraper.providers.base import TextRequest, TextStream
from datascraper.providers.registry import model_provider
from datascraper.schemas import ChatTurn, DeltaEvent, ModelUsage, Source, UsageLedger


class WebSearchResult(BaseModel):
    """What one web-searched answer produced. `complete` is false when the stream broke off. `pages` holds
    the text of the cited pages the app read itself (a search API's results), by URL: the citation check
    reads them there instead of fetching them again."""

    text: str
    sources: list[Source]
    usage: ModelUsage
    model: str
    complete: bool
    pages: dict[str, str] = Field(default_factory=dict)


class WebSearchStream:
    """One answer, iterated as `DeltaEvent`s while the model writes it.

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
        self._ref = parse_model(model or get_research_config().research_model)
        self.model = self._ref.label
        # Without the tool the same stream handling serves the synthesizer, which writes from findings.
        self._web_search = web_search
        self._request = TextRequest(
            model=self._ref,
            instructions=prompts.with_today(instructions or prompts.QUICK_ANSWER_INSTRUCTIONS, today or date.today()),
            question=question,
            history=tuple(history),
            web_search=web_search,
            source_offset=source_offset,
        )
        self._ledger = ledger
        self._stream: TextStream | None = None
        self._started = False
        self._text: list[str] = []

    @property
    def result(self) -> WebSearchResult:
        stream = self._stream
        return WebSearchResult(
            text="".join(self._text),
            sources=stream.sources if stream is not None else [],
            usage=stream.usage if stream is not None else ModelUsage(calls=1),
            model=self.model,
            complete=stream is not None and stream.complete,
        )

    async def __aiter__(self) -> AsyncGenerator[DeltaEvent, None]:
        if self._started:
            raise RuntimeError("A WebSearchStream can be iterated only once.")
        self._started = True
        if self._web_search:
            breaker.WEB_SEARCH.check()  # before anything is sent or counted
        provider = model_provider(self._ref)
        provider.ensure_configured()
        stream = self._stream = provider.stream_text(self._request)
        try:
            # `aclosing`: a consumer that stops early closes the HTTP stream now, not at garbage collection.
            async with aclosing(stream.__aiter__()) as pieces:
                async for text in pieces:
                    self._text.append(text)
                    yield DeltaEvent(text=text)
        except ResearchError as exc:
            self._note_outcome(exc)
            raise
        else:
            self._note_outcome(None)
        finally:
            # Also when the consumer stops early: the call was made and may have cost tokens.
            if self._ledger is not None:
                self._ledger.record(self.model, stream.usage)

    def _note_outcome(self, failure: ResearchError | None) -> None:
        """A web search that timed out opens the breaker; one that answered closes it."""
        if not self._web_search:
            return
        if isinstance(failure, UpstreamTimeout):
            breaker.WEB_SEARCH.trip(get_research_config().breaker_cooldown_s)
        elif failure is None:
            breaker.WEB_SEARCH.close()
