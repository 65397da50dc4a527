"""The research router's entry point: one async generator of typed events per question."""

from __future__ import annotations

from collections.abc import AsyncIterator

from datascraper.errors import ProviderNotConfigured
from datascraper.models_config import ResearchConfig, get_research_config
from datascraper.schemas import ResearchEvent, ResearchQuery


async def run_research(query: ResearchQuery, config: ResearchConfig | None = None) -> AsyncIterator[ResearchEvent]:
    config = config or get_research_config()
    if not config.is_configured:
        raise ProviderNotConfigured()
    raise NotImplementedError  # replaced by the quick path below once openai_search lands
    yield  # pragma: no cover
