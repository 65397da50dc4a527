"""Which search API a web sub-question uses: SEARCH_PROVIDER names it.

`hosted` (the default) is no search API: the research model searches with its provider's own tool, as
before. Every other name the contract lists has its module here; a missing key or address is found when a
search is asked for (`SearchNotConfigured`, nothing sent), as a missing model key is. `hosted` with a research
model whose provider has no search tool (a Chat Completions server) is refused as the process starts
(`require_available`, called by `chat.apps`).
"""

from __future__ import annotations

from collections.abc import Callable

from datascraper.errors import HostedSearchUnavailable
from datascraper.model_ref import ProviderName, parse_model
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

# Model providers with no hosted web search of their own: a Chat Completions server only writes.
WITHOUT_HOSTED_SEARCH: tuple[ProviderName, ...] = ("openai-compatible",)


def search_provider(config: ResearchConfig) -> SearchProvider | None:
    """The configured search API; None for `hosted`."""
    if config.search_provider == "hosted":
        return None
    return _SEARCH_APIS[config.search_provider](config)


def require_available(config: ResearchConfig) -> None:
    """Raise `HostedSearchUnavailable` when SEARCH_PROVIDER is `hosted` and the research model's provider has
    no search of its own."""
    research = parse_model(config.research_model, "RESEARCH_MODEL")
    if config.search_provider == "hosted" and research.provider in WITHOUT_HOSTED_SEARCH:
        raise HostedSearchUnavailable("RESEARCH_MODEL", research.provider)
