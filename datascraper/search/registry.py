"""Which search API a web sub-question uses: SEARCH_PROVIDER names it.

`hosted` (the default) is no search API: the research model searches with its provider's own tool, as
before. Every other name the contract lists has its module here; a missing key or address is found when a
search is asked for (`SearchNotConfigured`, nothing sent), as a missing model key is.
"""

from __future__ import annotations

from collections.abc import Callable

from datascraper.models_config import ResearchConfig, SearchProviderName
from datascraper.search.base import SearchProvider
from datascraper.search.brave import BraveSearch
from datascraper.search.exa import ExaSearch
from datascraper.search.searxng import SearxngSearch
from datascraper.search.tavily import TavilySearch

_SEARCH_APIS: dict[SearchProviderName, Callable[[ResearchConfig], SearchProvider]] = {
    "searxng": lambda config: SearxngSearch(config.searxng_url, max_retries=config.max_retries),
    "tavily": lambda config: TavilySearch(
        config.tavily_api_key, config.tavily_base_url, max_retries=config.max_retries
    ),
    "brave": lambda config: BraveSearch(config.brave_api_key, config.brave_base_url, max_retries=config.max_retries),
    "exa": lambda config: ExaSearch(config.exa_api_key, config.exa_base_url, max_retries=config.max_retries),
}


def search_provider(config: ResearchConfig) -> SearchProvider | None:
    """The configured search API; None for `hosted`."""
    if config.search_provider == "hosted":
        return None
    return _SEARCH_APIS[config.search_provider](config)
