"""The research router's entry point: one async generator of typed events per question."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from datascraper.errors import ProviderNotConfigured, ResearchError
from datascraper.models_config import ResearchConfig, get_research_config
from datascraper.openai_search import WebSearchStream
from datascraper.schemas import ResearchEvent, ResearchQuery, RunSummary, SourcesEvent, StatusEvent, UsageLedger


def _elapsed_ms(since: float) -> int:
    return round((time.monotonic() - since) * 1000)


async def quick_answer(query: ResearchQuery, config: ResearchConfig) -> AsyncIterator[ResearchEvent]:
    """The single-search path: one streamed, web-searched answer, no orchestration."""
    started = time.monotonic()
    ledger = UsageLedger()
    yield StatusEvent(phase="synthesizing", label="Searching the web and writing the answer")
    stream = WebSearchStream(query.question, history=query.history, model=config.research_model, ledger=ledger)
    first_token_ms: int | None = None
    try:
        async for delta in stream:
            if first_token_ms is None:
                first_token_ms = _elapsed_ms(started)
            yield delta
    except ResearchError:
        if stream.result.sources:
            yield SourcesEvent(sources=stream.result.sources)
        raise
    result = stream.result
    if result.sources:
        yield SourcesEvent(sources=result.sources)
    timings = {"total_ms": _elapsed_ms(started)}
    if first_token_ms is not None:
        timings["first_token_ms"] = first_token_ms
    yield RunSummary(
        mode="quick",
        answer=result.text,
        sources=result.sources,
        timings=timings,
        usage=ledger,
        signals={"mode": "quick", "fast_path": False, "sources": len(result.sources)},
    )


async def run_research(query: ResearchQuery, config: ResearchConfig | None = None) -> AsyncIterator[ResearchEvent]:
    config = config or get_research_config()
    if not config.is_configured:
        raise ProviderNotConfigured()
    async for event in quick_answer(query, config):
        yield event
