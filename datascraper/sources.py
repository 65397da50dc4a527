"""The address a source is known by: one page, one source, whichever search or step cited it.

Web searches cite pages with tracking parameters (`utm_source=openai`); market data and filings cite
their pages as fetched. Every place that numbers, matches or checks sources (the web search's citations,
the synthesizer's source list, the charts, the evidence the checks read) compares them by `clean_url`.
Who publishes a source, and when, is read from the same address by `research_engine.source_types`.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from datascraper.schemas import Source


def publisher_url(source: Source) -> str:
    """The address that says who publishes `source`: its own, or for a redirect the site it leads to."""
    return f"https://{source.site}/" if source.site else source.url


def clean_url(url: str) -> str:
    """The URL without tracking parameters (`utm_source=openai` and kin): one page, one source."""
    parts = urlsplit(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(key, value) for key, value in params if not key.lower().startswith("utm_")]
    if len(kept) == len(params):
        return url
    return urlunsplit(parts._replace(query=urlencode(kept)))


@dataclass
class _CitedPage:
    n: int
    url: str
    title: str
    site: str | None = None


class CitedPages:
    """The web pages one answer cites, numbered in the order first cited, one number per `clean_url`.

    Numbers start after `source_offset`, so a caller can merge the sources of several answers into one
    list. Each provider's stream numbers its citations here, whatever form the provider gives them in.
    """

    def __init__(self, *, source_offset: int = 0) -> None:
        self._next_n = source_offset + 1
        self._pages: dict[str, _CitedPage] = {}

    def cite(self, url: str, title: str, *, provisional_title: bool = False, site: str | None = None) -> int:
        """The number of `url`'s page, registering it if new. A `provisional_title` (an inline link's label,
        which only names the domain) never replaces a title already known; a real one replaces it. `site`
        is the publisher's domain when `url` is a redirect that does not name it."""
        key = clean_url(url)
        page = self._pages.get(key)
        if page is None:
            page = self._pages[key] = _CitedPage(n=self._next_n, url=key, title=title, site=site)
            self._next_n += 1
        elif not provisional_title and title:
            page.title = title
        return page.n

    @property
    def sources(self) -> list[Source]:
        return [Source(n=p.n, title=p.title, url=p.url, kind="web", site=p.site) for p in self._pages.values()]
