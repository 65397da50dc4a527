"""Brave Search: `GET {BRAVE_BASE_URL}/res/v1/web/search?q=...&count=N` with `X-Subscription-Token`.

Brave refuses a query over 400 characters or 50 words (422), so a longer question is cut between words;
`count` is at most 20. The results are `web.results` (no `web` at all when nothing was found), each with
`url`, `title`, `description` (Brave's excerpt, with `<strong>` marks) and, when Brave dates the page,
`page_age` (ISO 8601) and `age` (`"June 12, 2025"`, or relative: `"2 days ago"`).

Brave's refusals (body `{"type": "ErrorResponse", "error": {"code", "detail", "status", ...}}`): a missing
or wrong token is a 422 with code `SUBSCRIPTION_TOKEN_INVALID` (`SearchAuthFailed`, as a 401 or 403 would
be); 429 `RATE_LIMITED` is retried, then `SearchRateLimited`; the rest as every search API
(`search.api_call`).
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

import httpx2

from datascraper.errors import ResearchError, SearchAuthFailed, SearchUnavailable
from datascraper.search.api_call import KeyedSearchAPI, SearchAPI, call_json, day, shortened
from datascraper.search.base import SearchResult

BRAVE = SearchAPI(label="The Brave Search API", url_setting="BRAVE_BASE_URL")
DEFAULT_BASE_URL = "https://api.search.brave.com"
KEY_SETTING = "BRAVE_API_KEY"
SEARCH_PATH = "/res/v1/web/search"
MAX_QUERY_CHARS = 400
MAX_QUERY_WORDS = 50
MAX_COUNT = 20
_MARKUP = re.compile(r"</?strong>")


class BraveSearch(KeyedSearchAPI):
    api = BRAVE
    key_setting = KEY_SETTING
    default_base_url = DEFAULT_BASE_URL
    search_path = SEARCH_PATH
    provider = "brave"

    async def search(self, query: str, *, limit: int, timeout_s: float) -> list[SearchResult]:
        payload = await call_json(
            BRAVE,
            "GET",
            self._search_url(),
            headers={"X-Subscription-Token": self._key_value()},
            params={
                "q": shortened(query, max_chars=MAX_QUERY_CHARS, max_words=MAX_QUERY_WORDS),
                "count": min(limit, MAX_COUNT),
            },
            max_retries=self._max_retries,
            timeout_s=timeout_s,
            refusal=_refusal,
        )
        return _results(payload)[:limit]


def _refusal(response: httpx2.Response) -> ResearchError | None:
    if response.status_code in (401, 403) or _error_code(response) == "SUBSCRIPTION_TOKEN_INVALID":
        return SearchAuthFailed(BRAVE.label, KEY_SETTING)
    return None


def _error_code(response: httpx2.Response) -> str | None:
    if response.status_code < 400:
        return None
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return None
    return error.get("code") if isinstance(error, dict) else None


def _results(payload: Any) -> list[SearchResult]:
    if not isinstance(payload, dict) or payload.get("type") != "search":
        raise SearchUnavailable("The Brave Search API answered JSON that is not a web search's.")
    web = payload.get("web") or {}
    items = web.get("results", []) if isinstance(web, dict) else None
    if not isinstance(items, list):
        raise SearchUnavailable("The Brave Search API answered a `web` without a `results` list.")
    return [
        SearchResult(
            url=item["url"],
            title=_MARKUP.sub("", str(item.get("title") or item["url"])),
            snippet=_MARKUP.sub("", str(item.get("description") or "")),
            published=day(item.get("page_age")) or _age_day(item.get("age")),
        )
        for item in items
        if isinstance(item, dict) and isinstance(item.get("url"), str) and item["url"]
    ]


def _age_day(value: object) -> date | None:
    """Brave's `age` when it is a date (`June 12, 2025`); a relative age (`2 days ago`) is not kept."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.strptime(value.strip(), "%B %d, %Y").date()
    except ValueError:
        return None
