"""Tavily: `POST {TAVILY_BASE_URL}/search` with `Authorization: Bearer <TAVILY_API_KEY>`.

The body asks for the query (Tavily refuses one over 400 characters, so a longer question is cut between
words), at most 20 results, the basic depth (1 credit a search; `advanced` costs 2) and no generated answer
or page content: the app reads the pages itself, through the citation fetcher. Each result has `url`,
`title`, `content` (Tavily's excerpt) and `score`; `published_date` only for news searches.

Tavily's refusals (as its SDK reads them; the body is `{"detail": {"error": "..."}}`): 401 a missing or
invalid key (`SearchAuthFailed`), 403 a key not allowed the call (the same), 432 the plan's limit and 433
the pay-as-you-go limit reached (`SearchQuotaExceeded`), 429 its rate limit (retried, then
`SearchRateLimited`); the rest as every search API (`search.api_call`).
"""

from __future__ import annotations

from datetime import date
from email.utils import parsedate_to_datetime
from typing import Any

import httpx2

from datascraper.errors import ResearchError, SearchAuthFailed, SearchQuotaExceeded, SearchUnavailable
from datascraper.search.api_call import KeyedSearchAPI, SearchAPI, call_json, day, shortened
from datascraper.search.base import SearchResult

TAVILY = SearchAPI(label="The Tavily API", url_setting="TAVILY_BASE_URL")
DEFAULT_BASE_URL = "https://api.tavily.com"
KEY_SETTING = "TAVILY_API_KEY"
MAX_QUERY_CHARS = 400
MAX_RESULTS = 20


class TavilySearch(KeyedSearchAPI):
    api = TAVILY
    key_setting = KEY_SETTING
    default_base_url = DEFAULT_BASE_URL
    search_path = "/search"
    provider = "tavily"

    async def search(self, query: str, *, limit: int, timeout_s: float) -> list[SearchResult]:
        payload = await call_json(
            TAVILY,
            "POST",
            self._search_url(),
            headers={"Authorization": f"Bearer {self._key_value()}"},
            body={
                "query": shortened(query, max_chars=MAX_QUERY_CHARS),
                "max_results": min(limit, MAX_RESULTS),
                "search_depth": "basic",
                "include_answer": False,
                "include_raw_content": False,
            },
            max_retries=self._max_retries,
            timeout_s=timeout_s,
            refusal=_refusal,
        )
        return _results(payload)[:limit]


def _refusal(response: httpx2.Response) -> ResearchError | None:
    if response.status_code in (401, 403):
        return SearchAuthFailed(TAVILY.label, KEY_SETTING)
    if response.status_code in (432, 433):
        return SearchQuotaExceeded(TAVILY.label, KEY_SETTING)
    return None


def _results(payload: Any) -> list[SearchResult]:
    items = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(items, list):
        raise SearchUnavailable("The Tavily API answered JSON without a `results` list.")
    return [
        SearchResult(
            url=item["url"],
            title=str(item.get("title") or item["url"]),
            snippet=str(item.get("content") or ""),
            published=_published(item.get("published_date")),
        )
        for item in items
        if isinstance(item, dict) and isinstance(item.get("url"), str) and item["url"]
    ]


def _published(value: object) -> date | None:
    """Tavily's `published_date`: an HTTP date (`Thu, 12 Jun 2025 09:30:00 GMT`) or ISO 8601."""
    if isinstance(value, str) and value[:3].isalpha():
        try:
            return parsedate_to_datetime(value).date()
        except (TypeError, ValueError):
            return None
    return day(value)
