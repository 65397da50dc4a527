"""Which provider serves a model: the model setting's prefix (`provider:model`) names it.

A provider is added by its module and one entry in `_IMPLEMENTED`; every provider the contract names has
one. A prefix the contract does not name is refused when the setting is read (`datascraper.model_ref`).
"""

from __future__ import annotations

from collections.abc import Callable

from datascraper.model_ref import ModelRef, ProviderName, parse_model
from datascraper.models_config import ResearchConfig
from datascraper.providers.base import ModelProvider
from datascraper.providers.openai.provider import OpenAIProvider
from datascraper.providers.openai_compatible.provider import OpenAICompatibleProvider


# The providers whose SDK takes about a second to import are imported when a model names them, so that no
# process whose models are all OpenAI's pays for them.
def _anthropic() -> ModelProvider:
    from datascraper.providers.anthropic.provider import AnthropicProvider

    return AnthropicProvider()


def _google() -> ModelProvider:
    from datascraper.providers.google.provider import GoogleProvider

    return GoogleProvider()


_IMPLEMENTED: dict[ProviderName, Callable[[], ModelProvider]] = {
    "openai": OpenAIProvider,
    "anthropic": _anthropic,
    "google": _google,
    "openai-compatible": OpenAICompatibleProvider,
}
_providers: dict[ProviderName, ModelProvider] = {}


def model_provider(model: ModelRef) -> ModelProvider:
    """The provider that serves `model`, one instance per process."""
    provider = _providers.get(model.provider)
    if provider is None:
        provider = _providers[model.provider] = _IMPLEMENTED[model.provider]()
    return provider


def provider_for(model: str) -> tuple[ModelProvider, ModelRef]:
    """The provider of a model named by its label or its setting's value (`gpt-5.4`, `openai:gpt-5.4`)."""
    ref = parse_model(model)
    return model_provider(ref), ref


def configured_providers(config: ResearchConfig) -> list[ModelProvider]:
    """The providers the configured models use, each once, in the settings' order."""
    providers: dict[ProviderName, ModelProvider] = {}
    for _, ref in config.model_settings():
        if ref.provider not in providers:
            providers[ref.provider] = model_provider(ref)
    return list(providers.values())
