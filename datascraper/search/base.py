"""The one small interface every search API implements, and the result that crosses it.

A search provider answers one call: the results of a query, at most `limit` of them, within `timeout_s`
(its retries included). What every implementation guarantees:
- its failures are the named errors of `datascraper.errors`: `SearchNotConfigured` (no address or key, or
  not a URL; nothing sent), `SearchFormatRefused` (a SearxNG instance without the JSON format),
  `SearchAuthFailed` (the key refused), `SearchQuotaExceeded` (the account out of credit),
  `SearchRateLimited` (429, after its retries), `SearchTimeout`, `SearchUnavailable` (unreachable, 5xx, or
  an answer that is not its results); the client's exception as `__cause__`, never the body or a key;
- results keep what the confidence uses: the page's address, its title and, where the API gives one, the
  day it was published.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Protocol


@dataclass(frozen=True, slots=True)
class SearchResult:
    url: str
    title: str
    snippet: str = ""  # the API's excerpt of the page
    published: date | None = None
    engine: str | None = None  # the search engine that found it, where the API says (SearxNG does)


class SearchProvider(Protocol):
    @property
    def name(self) -> str: ...

    def ensure_configured(self) -> None:
        """Raise `SearchNotConfigured` (nothing sent) when the provider's address or key is missing."""
        ...

    async def search(self, query: str, *, limit: int, timeout_s: float) -> list[SearchResult]:
        """The first `limit` results of `query`, in the API's order; raises the named errors."""
        ...
