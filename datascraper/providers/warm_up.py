"""Process start-up: each configured provider builds what its first calls would otherwise build on the way."""

from __future__ import annotations

import logging

from datascraper.models_config import get_research_config
from datascraper.plan_schemas import GapReport, QueryAnalysis
from datascraper.providers.registry import configured_providers

logger = logging.getLogger(__name__)


async def warm_up_models() -> None:
    """Warm up each provider the configured models use, for the planner's schemas, sending nothing.

    Never raises: a failure is logged and the first call builds what is missing. Call it on the loop
    that serves.
    """
    try:
        config = get_research_config()
        for provider in configured_providers(config):
            if provider.name in config.configured_providers():  # a provider without its key has nothing to warm
                await provider.warm_up((QueryAnalysis, GapReport))
    except Exception:  # a warm-up never stops a process from serving
        logger.warning("The model client was not warmed up; the first call builds what it needs.", exc_info=True)
