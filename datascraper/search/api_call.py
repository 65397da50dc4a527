"""What every search API's call shares: its address checked, one bounded call, the statuses named.

    api_url ─► the address, from the operator's setting (or the API's public host), checked before anything
               is sent (`SearchNotConfigured`); api_key ─► the key, or `SearchNotConfigured`
    call_json ─► one search, its retries included, within `timeout_s`:
      a timeout, a refused connection, 429 or a 5xx  retried `max_retries` times (`Retry-After` when it is a
                                                      number of seconds, else 0.5 s doubling), then
                                                      `SearchTimeout`, `SearchUnavailable`, `SearchRateLimited`
      what the API's own `refusal` names             raised at once: a rejected key, an account out of credit,
                                                      a SearxNG without its JSON format (retrying cannot help)
      any other status but 200                       `SearchUnavailable`, not retried (the request itself is
                                                      refused; it would be refused again)
      200                                            its JSON, else `SearchUnavailable`

Messages name the API and the setting to look at; never a key, a header or the API's body (the client's
exception is the `__cause__`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, ClassVar

import httpx2
from pydantic import SecretStr

from datascraper.errors import (
    ResearchError,
    SearchNotConfigured,
    SearchRateLimited,
    SearchTimeout,
    SearchUnavailable,
)

USER_AGENT = "finance-research-search/1.0"
_BACKOFF_S = 0.5

# What an API answers that no retry can change, named by the API's module; None: the generic mapping.
Refusal = Callable[[httpx2.Response], ResearchError | None]


@dataclass(frozen=True, slots=True)
class SearchAPI:
    label: str  # how messages name it: "The SearxNG instance", "The Tavily API"
    url_setting: str  # the setting that holds its address: SEARXNG_URL, TAVILY_BASE_URL


class KeyedSearchAPI:
    """What the search APIs reached with a key (Tavily, Brave, Exa) share: the key and the address they are
    built with, checked before anything is sent. A subclass names its API, its key's setting, its public host
    and its search path."""

    api: ClassVar[SearchAPI]
    key_setting: ClassVar[str]
    default_base_url: ClassVar[str]
    search_path: ClassVar[str]
    provider: ClassVar[str]

    def __init__(self, key: SecretStr | None, base_url: str | None, *, max_retries: int) -> None:
        self._key = key
        self._base_url = base_url or self.default_base_url
        self._max_retries = max_retries

    @property
    def name(self) -> str:
        return self.provider

    def ensure_configured(self) -> None:
        self._key_value()
        self._search_url()

    def _key_value(self) -> str:
        return api_key(self._key, self.key_setting)

    def _search_url(self) -> str:
        return api_url(self.api, self._base_url, self.search_path)


def api_url(api: SearchAPI, root: str | None, path: str) -> str:
    """`path` on the API's root; `SearchNotConfigured` when the root is unset or not an http(s) URL."""
    if not root:
        raise SearchNotConfigured(f"The search provider is not configured: set {api.url_setting}.")
    try:
        parsed = httpx2.URL(root)
    except (httpx2.InvalidURL, ValueError) as exc:
        raise SearchNotConfigured(f"{api.url_setting} is not a URL: {root!r}.") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise SearchNotConfigured(f"{api.url_setting} must be an http(s) URL: {root!r}.")
    return f"{str(parsed).rstrip('/')}{path}"


def api_key(key: SecretStr | None, setting: str) -> str:
    """The key's value, for the request's header only; `SearchNotConfigured` (naming the setting) when unset."""
    value = key.get_secret_value().strip() if key is not None else ""
    if not value:
        raise SearchNotConfigured(f"The search provider is not configured: set {setting}.")
    return value


async def call_json(
    api: SearchAPI,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    max_retries: int,
    timeout_s: float,
    refusal: Refusal,
    params: Mapping[str, str | int] | None = None,
    body: Mapping[str, Any] | None = None,
) -> Any:
    """The API's JSON answer to one request, its retries within `timeout_s`; the named errors otherwise."""
    try:
        async with asyncio.timeout(timeout_s), _client(timeout_s, headers) as client:
            for attempt in range(max_retries + 1):
                last = attempt == max_retries
                try:
                    response = await client.request(method, url, params=params, json=body)
                except httpx2.TimeoutException as exc:
                    if last:
                        raise SearchTimeout() from exc
                    continue
                except httpx2.HTTPError as exc:
                    if last:
                        message = f"{api.label} at {api.url_setting} could not be reached ({url})."
                        raise SearchUnavailable(message) from exc
                    await asyncio.sleep(_BACKOFF_S * 2**attempt)
                    continue
                if (refused := refusal(response)) is not None:
                    raise refused
                if _transient(response) and not last:
                    await asyncio.sleep(_backoff(response, attempt))
                    continue
                return _answer(api, response)
    except TimeoutError as exc:
        raise SearchTimeout() from exc
    raise AssertionError("unreachable: the last attempt returns or raises")


def shortened(query: str, *, max_chars: int, max_words: int | None = None) -> str:
    """`query` within an API's limits on its length (a longer one is refused), cut between words."""
    words = query.split()[:max_words]
    while len(" ".join(words)) > max_chars and len(words) > 1:
        words.pop()
    return " ".join(words)[:max_chars]


def day(value: object) -> date | None:
    """An API's ISO 8601 date or time (`2025-06-12`, `2025-06-12T09:30:00Z`) as a day; else unknown."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value).date()
    except ValueError:
        return None


def _answer(api: SearchAPI, response: httpx2.Response) -> Any:
    if response.status_code == 429:
        raise SearchRateLimited()
    if response.status_code != 200:
        raise SearchUnavailable(f"{api.label} answered HTTP {response.status_code}.")
    try:
        return response.json()
    except ValueError as exc:
        raise SearchUnavailable(f"{api.label} answered something that is not JSON.") from exc


def _transient(response: httpx2.Response) -> bool:
    return response.status_code == 429 or response.status_code >= 500


def _client(timeout_s: float, headers: Mapping[str, str]) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(timeout_s),
        headers={"User-Agent": USER_AGENT, "Accept": "application/json", **headers},
    )


def _backoff(response: httpx2.Response, attempt: int) -> float:
    retry_after = response.headers.get("retry-after", "")
    return float(retry_after) if retry_after.isdigit() else _BACKOFF_S * 2**attempt
