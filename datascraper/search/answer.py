"""A web-searched answer through a search API: search, read the top pages, write from them.

    question ─► search provider (SEARCH_PROVIDER) ─► top results ─► their pages read by the citation
    fetcher (its address rules, size cap and text extraction) ─► the research model writes from the
    numbered passages, with no search tool, citing them as [n]

`SearchedAnswer` is iterated like a `WebSearchStream` and its `result` has the same shape, so the quick
answer and the executor do not know which search answered (`web_answer` picks one); the cited pages' text
travels with the result, so the citation check does not fetch them again.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from datetime import date

from datascraper import prompts
from datascraper.citations.claims import cited_claims
from datascraper.citations.fetcher import PageUnreachable
from datascraper.citations.verifier import read_pages
from datascraper.errors import NothingFound
from datascraper.models_config import ResearchConfig
from datascraper.schemas import ChatTurn, DeltaEvent, ModelUsage, Source, UsageLedger
from datascraper.search.base import SearchProvider, SearchResult
from datascraper.search.registry import search_provider
from datascraper.web_search import WebSearchResult, WebSearchStream

SEARCH_RESULTS = 5  # results whose pages are read for one answer


def web_answer(
    question: str,
    *,
    instructions: str,
    config: ResearchConfig,
    ledger: UsageLedger,
    today: date,
    history: Sequence[ChatTurn] = (),
) -> WebSearchStream | SearchedAnswer:
    """A web-searched answer: the research model's hosted tool, or the configured search API."""
    search = search_provider(config)
    if search is None:
        return WebSearchStream(
            question,
            history=history,
            instructions=instructions,
            model=config.research_model,
            ledger=ledger,
            today=today,
        )
    return SearchedAnswer(
        question, search, instructions=instructions, config=config, history=history, ledger=ledger, today=today
    )


class SearchedAnswer:
    """One answer written from a search API's pages, iterated (once) as `DeltaEvent`s."""

    def __init__(
        self,
        question: str,
        search: SearchProvider,
        *,
        instructions: str,
        config: ResearchConfig,
        history: Sequence[ChatTurn] = (),
        ledger: UsageLedger | None = None,
        today: date | None = None,
    ) -> None:
        self._question = question
        self._search = search
        self._instructions = prompts.from_passages(instructions)
        self._config = config
        self._history = history
        self._ledger = ledger
        self._today = today
        self.model = config.research_model
        self._read: list[tuple[SearchResult, str]] = []  # the results whose page was read, with its text
        self._stream: WebSearchStream | None = None
        self._started = False

    @property
    def result(self) -> WebSearchResult:
        """What was written so far; before the writing started (a search that failed or was cancelled),
        nothing, at no model cost."""
        if self._stream is None:
            return WebSearchResult(text="", sources=[], usage=ModelUsage(), model=self.model, complete=False)
        written = self._stream.result
        cited = {claim.n for claim in cited_claims(written.text)}
        numbered = [(n, found, text) for n, (found, text) in enumerate(self._read, start=1) if n in cited]
        return written.model_copy(
            update={
                "sources": [
                    Source(n=n, title=found.title, url=found.url, kind="web", published=found.published)
                    for n, found, _ in numbered
                ],
                "pages": {found.url: text for _, found, text in numbered},
            }
        )

    async def __aiter__(self) -> AsyncGenerator[DeltaEvent, None]:
        if self._started:
            raise RuntimeError("A SearchedAnswer can be iterated only once.")
        self._started = True
        self._search.ensure_configured()
        found = await self._search.search(
            self._question, limit=SEARCH_RESULTS, timeout_s=self._config.request_timeout_s
        )
        if self._ledger is not None:
            self._ledger.record_search(self._search.name)
        pages = await read_pages(
            list(dict.fromkeys(result.url for result in found)),
            config=self._config,
            time_limit_s=self._config.citation_fetch_timeout_s,
        )
        for result in found:
            page = pages.pop(result.url, None)  # popped: a URL listed twice is one passage
            if page is not None and not isinstance(page, PageUnreachable) and page.text.strip():
                self._read.append((result, page.text))
        if not self._read:
            raise NothingFound()
        self._stream = WebSearchStream(
            prompts.searched_question(self._question, [(found.title, found.url, text) for found, text in self._read]),
            history=self._history,
            instructions=self._instructions,
            model=self.model,
            ledger=self._ledger,
            today=self._today,
            web_search=False,
        )
        async for delta in self._stream:
            yield delta
