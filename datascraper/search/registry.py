"""Which search API a web sub-question uses: SEARCH_PROVIDER names it.

`hosted` (the default) is no search API: the research model searches with its provider's own tool, as
before. A name the contract lists but no module implements yet is refused with `SearchProviderNotAvailable`
as the process starts (`chat.apps`), never a stub that pretends to search.
"""

from __future__ import annotations

from datascraper.errors import SearchProviderNotAvailable
from datascraper.models_config import ResearchConfig
from datascraper.search.base import SearchProvider
from datascraper.search.searxng import SearxngSearch

IMPLEMENTED = ("hosted", "searxng")


def search_provider(config: ResearchConfig) -> SearchProvider | None:
    """The configured search API; None for `hosted`."""
    if config.search_provider == "hosted":
        return None
    if config.search_provider == "searxng":
        return SearxngSearch(config.searxng_url, max_retries=config.max_retries)
    raise SearchProviderNotAvailable(config.search_provider, IMPLEMENTED)


def require_available(config: ResearchConfig) -> None:
    """Raise `SearchProviderNotAvailable` when SEARCH_PROVIDER names a search API not implemented yet."""
    search_provider(config)
