"""The models an Anthropic key may use: `GET /v1/models`, page by page, with each model's retirement date.

The list names models by their dated ids (`claude-haiku-4-5-20251001`); an alias a setting may use
(`claude-haiku-4-5`) is resolved by `GET /v1/models/{id}`, so each configured model of this provider that
the list does not name is looked up once. A model the API answers 404 for is left out: not served. The
list holds active and deprecated models; `retires_at` is a deprecated model's scheduled retirement.
"""

from __future__ import annotations

from datetime import date, datetime

import anthropic

from datascraper.models_config import get_research_config
from datascraper.providers.anthropic.client import get_anthropic_client
from datascraper.providers.anthropic.failures import translate_error
from datascraper.providers.base import ModelListing

PAGE_SIZE = 100


async def list_anthropic_models(*, timeout_s: float) -> ModelListing:
    """The models this key may use, each with its retirement date (None: none scheduled); one try per
    request, each bounded by `timeout_s` (the caller bounds them together)."""
    client = get_anthropic_client().with_options(timeout=timeout_s, max_retries=0)
    listed: dict[str, date | None] = {}
    try:
        async for model in client.models.list(limit=PAGE_SIZE):
            listed[model.id] = _day(model.retires_at)
        for name in _configured_names():
            if name in listed:
                continue
            try:
                model = await client.models.retrieve(name)
            except anthropic.NotFoundError:
                continue
            listed[name] = _day(model.retires_at)
    except anthropic.AnthropicError as exc:
        raise translate_error(exc) from exc
    return listed


def _configured_names() -> list[str]:
    return [ref.name for _, ref in get_research_config().model_settings() if ref.provider == "anthropic"]


def _day(moment: datetime | None) -> date | None:
    return moment.date() if moment is not None else None
