"""SearxNG: `GET {SEARXNG_URL}/search?q=...&format=json` on a self-hosted instance.

An instance answers JSON only when its settings list `json` in `search.formats`; otherwise it answers 403,
which is named as such (`SearchFormatRefused`) rather than retried. A 429 (its limiter), a 5xx, a timeout
or a refused connection is retried `max_retries` times with a short back-off (`Retry-After` when sent),
all within the call's `timeout_s`. SEARXNG_URL is the operator's own setting, so no address rule applies to
it; the result pages are read later by the citation fetcher, under its rules.
"""

from __future__ import annotations

import asyncio
from datetime import date, datetime
from typing import Any

import httpx2

from datascraper.errors import (
    SearchFormatRefused,
    SearchNotConfigured,
    SearchRateLimited,
    SearchTimeout,
    SearchUnavailable,
)
from datascraper.search.base import SearchResult

USER_AGENT = "finance-research-search/1.0"
_BACKOFF_S = 0.5


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
        url = self._search_url()
        try:
            async with asyncio.timeout(timeout_s), _client(timeout_s) as client:
                payload = await self._get(client, url, query)
        except TimeoutError as exc:
            raise SearchTimeout() from exc
        return _results(payload)[:limit]

    async def _get(self, client: httpx2.AsyncClient, url: str, query: str) -> Any:
        for attempt in range(self._max_retries + 1):
            last = attempt == self._max_retries
            try:
                response = await client.get(url, params={"q": query, "format": "json"})
            except httpx2.TimeoutException as exc:
                if last:
                    raise SearchTimeout() from exc
                continue
            except httpx2.HTTPError as exc:
                if last:
                    message = f"The SearxNG instance at SEARXNG_URL could not be reached ({url})."
                    raise SearchUnavailable(message) from exc
                await asyncio.sleep(_BACKOFF_S * 2**attempt)
                continue
            if response.status_code == 403:
                raise SearchFormatRefused()
            if response.status_code == 429 or response.status_code >= 500:
                if last:
                    if response.status_code == 429:
                        raise SearchRateLimited()
                    raise SearchUnavailable(f"The SearxNG instance answered HTTP {response.status_code}.")
                await asyncio.sleep(_backoff(response, attempt))
                continue
            if response.status_code != 200:
                raise SearchUnavailable(f"The SearxNG instance answered HTTP {response.status_code}.")
            try:
                return response.json()
            except ValueError as exc:
                raise SearchUnavailable("The SearxNG instance answered something that is not JSON.") from exc
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _search_url(self) -> str:
        if not self._root_url:
            raise SearchNotConfigured()
        try:
            root = httpx2.URL(self._root_url)
        except (httpx2.InvalidURL, ValueError) as exc:
            raise SearchNotConfigured(f"SEARXNG_URL is not a URL: {self._root_url!r}.") from exc
        if root.scheme not in ("http", "https") or not root.host:
            raise SearchNotConfigured(f"SEARXNG_URL must be an http(s) URL, the instance's root: {self._root_url!r}.")
        return f"{str(root).rstrip('/')}/search"


def _client(timeout_s: float) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(timeout_s),
        headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
    )


def _backoff(response: httpx2.Response, attempt: int) -> float:
    retry_after = response.headers.get("retry-after", "")
    return float(retry_after) if retry_after.isdigit() else _BACKOFF_S * 2**attempt


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
                published=_day(item.get("publishedDate")),
                engine=str(item["engine"]) if item.get("engine") else None,
            )
        )
    return results


def _day(value: object) -> date | None:
    """SearxNG's `publishedDate` (ISO 8601, often with a time) as a day; absent or unreadable: unknown."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value).date()
    except ValueError:
        return None
