"""Exa: `POST {EXA_BASE_URL}/search` with `x-api-key`.

The body asks for the query, `numResults` and the `auto` search type, and no page contents (they are
billed apart, and the app reads the pages itself through the citation fetcher). Each result has `id`,
`url`, `title` (may be null), `publishedDate` (ISO 8601, may be null), `author`, and `text` or
`highlights` only when contents were asked for (an excerpt is kept when present).

Exa's refusals (body `{"requestId", "error", "tag"}`): 401 a missing or invalid key (`SearchAuthFailed`,
as a 403 for a key without access), 402 no credit left or the key's budget spent
(`SearchQuotaExceeded`), 429 its rate limit (retried, then `SearchRateLimited`); the rest as every search
API (`search.api_call`).
"""

from __future__ import annotations

from typing import Any

import httpx2

from datascraper.errors import ResearchError, SearchAuthFailed, SearchQuotaExceeded, SearchUnavailable
from datascraper.search.api_call import KeyedSearchAPI, SearchAPI, call_json, day
from datascraper.search.base import SearchResult

EXA = SearchAPI(label="The Exa API", url_setting="EXA_BASE_URL")
DEFAULT_BASE_URL = "https://api.exa.ai"
KEY_SETTING = "EXA_API_KEY"
MAX_RESULTS = 100
SNIPPET_CHARS = 500


class ExaSearch(KeyedSearchAPI):
    api = EXA
    key_setting = KEY_SETTING
    default_base_url = DEFAULT_BASE_URL
    search_path = "/search"
    provider = "exa"

    async def search(self, query: str, *, limit: int, timeout_s: float) -> list[SearchResult]:
        payload = await call_json(
            EXA,
            "POST",
            self._search_url(),
            headers={"x-api-key": self._key_value()},
            body={"query": query, "numResults": min(limit, MAX_RESULTS), "type": "auto"},
            max_retries=self._max_retries,
            timeout_s=timeout_s,
            refusal=_refusal,
        )
        return _results(payload)[:limit]


def _refusal(response: httpx2.Response) -> ResearchError | None:
    if response.status_code in (401, 403):
        return SearchAuthFailed(EXA.label, KEY_SETTING)
    if response.status_code == 402:
        return SearchQuotaExceeded(EXA.label, KEY_SETTING)
    return None


def _results(payload: Any) -> list[SearchResult]:
    items = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(items, list):
        raise SearchUnavailable("The Exa API answered JSON without a `results` list.")
    return [
        SearchResult(
            url=item["url"],
            title=str(item.get("title") or item["url"]),
            snippet=_excerpt(item),
            published=day(item.get("publishedDate")),
        )
        for item in items
        if isinstance(item, dict) and isinstance(item.get("url"), str) and item["url"]
    ]


def _excerpt(item: dict[str, Any]) -> str:
    highlights = item.get("highlights")
    if isinstance(highlights, list) and highlights:
        return " ".join(str(h) for h in highlights)[:SNIPPET_CHARS]
    return str(item.get("text") or "")[:SNIPPET_CHARS]
