"""SearxNG: `GET {SEARXNG_URL}/search?q=...&format=json` on a self-hosted instance.

An instance answers JSON only when its settings list `json` in `search.formats`; otherwise it answers 403,
which is named as such (`SearchFormatRefused`) rather than retried. The retries, the timeout and the other
statuses are those every search API shares (`search.api_call`). SEARXNG_URL is the operator's own setting,
so no address rule applies to it; the result pages are read later by the citation fetcher, under its rules.
"""

from __future__ import annotations

from typing import Any

import httpx2

from datascraper.errors import ResearchError, SearchFormatRefused, SearchNotConfigured, SearchUnavailable
from datascraper.search.api_call import SearchAPI, api_url, call_json, day
from datascraper.search.base import SearchResult

SEARXNG = SearchAPI(label="The SearxNG instance", url_setting="SEARXNG_URL")


class SearxngSearch:
    """One instance's search API; a connection pool per call (a sub-question searches once)."""

    def __init__(self, root_url: str | None, *, max_retries: int) -> None:
        self._root_url = root_url
        self._max_retries = max_retries

    @property
    def name(self) -> str:
        return "searxng"

    def ensure_configured(self) -> None:
        self._search_url()

    async def search(self, query: str, *, limit: int, timeout_s: float) -> list[SearchResult]:
        payload = await call_json(
            SEARXNG,
            "GET",
            self._search_url(),
            headers={},
            params={"q": query, "format": "json"},
            max_retries=self._max_retries,
            timeout_s=timeout_s,
            refusal=_refusal,
        )
        return _results(payload)[:limit]

    def _search_url(self) -> str:
        if not self._root_url:
            raise SearchNotConfigured()  # its message says what SEARXNG_URL holds
        return api_url(SEARXNG, self._root_url, "/search")


def _refusal(response: httpx2.Response) -> ResearchError | None:
    return SearchFormatRefused() if response.status_code == 403 else None


def _results(payload: Any) -> list[SearchResult]:
    """The results of a SearxNG answer; one without a URL is skipped (an infobox, an answer box)."""
    items = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(items, list):
        raise SearchUnavailable("The SearxNG instance answered JSON without a `results` list.")
    results = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("url"), str) or not item["url"]:
            continue
        results.append(
            SearchResult(
                url=item["url"],
                title=str(item.get("title") or item["url"]),
                snippet=str(item.get("content") or ""),
                published=day(item.get("publishedDate")),
                engine=str(item["engine"]) if item.get("engine") else None,
            )
        )
    return results
