"""A web sub-question answered through a search API: search, read the top pages, write from them.

    question ─► search provider (SEARCH_PROVIDER) ─► top results ─► their pages read by the citation
    fetcher (its address rules, size cap and text extraction) ─► the research model writes the finding
    from the numbered passages, with no search tool, citing them as [n]

It is iterated like a `WebSearchStream` and its `result` has the same shape, so the executor does not
know which search answered; the cited pages' text travels with the result, so the citation check does not
fetch them again.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import date

from datascraper import prompts
from datascraper.citations.claims import cited_claims
from datascraper.citations.fetcher import PageUnreachable
from datascraper.citations.verifier import read_pages
from datascraper.errors import NothingFound
from datascraper.models_config import ResearchConfig
from datascraper.schemas import DeltaEvent, Source, UsageLedger
from datascraper.search.base import SearchProvider, SearchResult
from datascraper.search.registry import search_provider
from datascraper.web_search import WebSearchResult, WebSearchStream

SEARCH_RESULTS = 5  # results whose pages are read for one sub-question


class SearchedAnswer:
    """One sub-question's finding written from a search API's pages, iterated as `DeltaEvent`s."""

    def __init__(
        self,
        question: str,
        search: SearchProvider,
        *,
        config: ResearchConfig,
        instructions: str = prompts.SEARCHED_SUB_QUESTION_INSTRUCTIONS,
        ledger: UsageLedger | None = None,
        today: date | None = None,
    ) -> None:
        self._question = question
        self._search = search
        self._config = config
        self._instructions = instructions
        self._ledger = ledger
        self._today = today
        self._read: list[tuple[SearchResult, str]] = []  # the results whose page was read, with its text
        self._stream: WebSearchStream | None = None

    @property
    def result(self) -> WebSearchResult:
        if self._stream is None:
            raise RuntimeError("A SearchedAnswer has no result before it is iterated.")
        written = self._stream.result
        cited = {claim.n for claim in cited_claims(written.text)}
        sources = [
            Source(n=n, title=found.title, url=found.url, kind="web", published=found.published)
            for n, (found, _) in enumerate(self._read, start=1)
            if n in cited
        ]
        pages = {found.url: text for n, (found, text) in enumerate(self._read, start=1) if n in cited}
        return written.model_copy(update={"sources": sources, "pages": pages})

    async def __aiter__(self) -> AsyncGenerator[DeltaEvent, None]:
        self._search.ensure_configured()
        found = await self._search.search(
            self._question, limit=SEARCH_RESULTS, timeout_s=self._config.request_timeout_s
        )
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
            instructions=self._instructions,
            model=self._config.research_model,
            ledger=self._ledger,
            today=self._today,
            web_search=False,
        )
        async for delta in self._stream:
            yield delta


def sub_question_search(
    question: str, *, config: ResearchConfig, ledger: UsageLedger, today: date
) -> WebSearchStream | SearchedAnswer:
    """A web sub-question's search: the research model's hosted tool, or the configured search API."""
    search = search_provider(config)
    if search is None:
        return WebSearchStream(
            question,
            instructions=prompts.SUB_QUESTION_SEARCH_INSTRUCTIONS,
            model=config.research_model,
            ledger=ledger,
            today=today,
        )
    return SearchedAnswer(question, search, config=config, ledger=ledger, today=today)
