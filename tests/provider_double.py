"""A second model provider for the tests of what is the same for every provider (doctor's checks, the model
lifecycle, warm-up), registered for one test under a provider name of the contract.

Only the provider-neutral plumbing is under test with it: it lists a fixed catalogue, records what it was
asked, and answers nothing else. Each real provider is tested at its own wire, against its fake server in
`tests/fakes/`. A test that registers it replaces whatever the registry holds under that name, for that test.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import date

import pytest
from pydantic import BaseModel

from datascraper.errors import ProviderNotConfigured
from datascraper.model_ref import ProviderName
from datascraper.models_config import PROVIDER_REQUIREMENT, get_research_config
from datascraper.providers import registry
from datascraper.providers.base import ModelListing, StructuredReply, StructuredRequest, TextRequest, TextStream

DOUBLE_PROVIDER: ProviderName = "anthropic"
DOUBLE_KEY = "placeholder-key-anthropic"


class ListingProvider:
    """Lists `catalogue` (model name → shutdown date) when its key is set; counts its listings and warm-ups."""

    def __init__(self, catalogue: dict[str, date | None]) -> None:
        self.catalogue = catalogue
        self.listings = 0
        self.warm_ups = 0

    @property
    def name(self) -> ProviderName:
        return DOUBLE_PROVIDER

    def ensure_configured(self) -> None:
        if not get_research_config().provider_configured(DOUBLE_PROVIDER):
            raise ProviderNotConfigured.missing(PROVIDER_REQUIREMENT[DOUBLE_PROVIDER][1])

    async def structured(self, request: StructuredRequest) -> StructuredReply:
        raise AssertionError("the double answers no question")

    def stream_text(self, request: TextRequest) -> TextStream:
        raise AssertionError("the double answers no question")

    async def list_models(self, *, timeout_s: float) -> ModelListing:
        self.ensure_configured()
        self.listings += 1
        return dict(self.catalogue)

    async def warm_up(self, schemas: Sequence[type[BaseModel]]) -> None:
        self.warm_ups += 1


@pytest.fixture
def second_provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[ListingProvider]:
    """The double, registered as the `anthropic` provider for this test (listing `claude-test`, live)."""
    double = ListingProvider({"claude-test": None, "claude-old": date(2026, 1, 1)})
    monkeypatch.setitem(registry._IMPLEMENTED, DOUBLE_PROVIDER, lambda: double)
    monkeypatch.setattr(registry, "_providers", {})
    yield double
