"""Which search API a web sub-question uses: SEARCH_PROVIDER names it.

`hosted` (the default) is no search API: the research model searches with its provider's own tool, as
before. A name the contract lists but no module implements yet is refused with `SearchProviderNotAvailable`
as the process starts (`chat.apps`), never a stub that pretends to search; so is `hosted` with a research
model whose provider has no search tool (a Chat Completions server).
"""

from __future__ import annotations

from datascraper.errors import HostedSearchUnavailable, SearchProviderNotAvailable
from datascraper.model_ref import ProviderName, parse_model
from datascraper.models_config import ResearchConfig
from datascraper.search.base import SearchProvider
from datascraper.search.searxng import SearxngSearch

IMPLEMENTED = ("hosted", "searxng")
# Model providers with no hosted web search of their own: a Chat Completions server only writes.
WITHOUT_HOSTED_SEARCH: tuple[ProviderName, ...] = ("openai-compatible",)


def search_provider(config: ResearchConfig) -> SearchProvider | None:
    """The configured search API; None for `hosted`."""
    if config.search_provider == "hosted":
        return None
    if config.search_provider == "searxng":
        return SearxngSearch(config.searxng_url, max_retries=config.max_retries)
    raise SearchProviderNotAvailable(config.search_provider, IMPLEMENTED)


def require_available(config: ResearchConfig) -> None:
    """Raise `SearchProviderNotAvailable` when SEARCH_PROVIDER names a search API not implemented yet, and
    `HostedSearchUnavailable` when it is `hosted` and the research model's provider has no search of its own."""
    search_provider(config)
    research = parse_model(config.research_model, "RESEARCH_MODEL")
    if config.search_provider == "hosted" and research.provider in WITHOUT_HOSTED_SEARCH:
        raise HostedSearchUnavailable("RESEARCH_MODEL", research.provider)
