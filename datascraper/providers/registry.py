"""Which provider serves a model: the model setting's prefix (`provider:model`) names it.

A provider is added by its module and one entry in `_IMPLEMENTED`. A prefix the contract names but no entry
implements yet is refused with `ProviderNotAvailable`, as the process starts (`require_available`, called
by `chat.apps`) and, should a run ever meet one, as that run's error: never a stub that pretends to answer.
"""

from __future__ import annotations

from collections.abc import Callable

from datascraper.errors import ProviderNotAvailable
from datascraper.model_ref import ModelRef, ProviderName, parse_model
from datascraper.models_config import ResearchConfig, get_research_config
from datascraper.providers.base import ModelProvider
from datascraper.providers.openai.provider import OpenAIProvider


def _anthropic() -> ModelProvider:
    # Imported when a model names it: its SDK takes about a second to import, which no process whose
    # models are all OpenAI's should pay.
    from datascraper.providers.anthropic.provider import AnthropicProvider

    return AnthropicProvider()


_IMPLEMENTED: dict[ProviderName, Callable[[], ModelProvider]] = {"openai": OpenAIProvider, "anthropic": _anthropic}
_providers: dict[ProviderName, ModelProvider] = {}


def available_providers() -> tuple[ProviderName, ...]:
    return tuple(_IMPLEMENTED)


def model_provider(model: ModelRef, setting: str | None = None) -> ModelProvider:
    """The provider that serves `model` (one instance per process); `setting` names the variable in the
    error, else it is looked up in the configuration."""
    provider = _providers.get(model.provider)
    if provider is not None:
        return provider
    make = _IMPLEMENTED.get(model.provider)
    if make is None:
        setting = setting or get_research_config().setting_of(model.label)
        raise ProviderNotAvailable(setting, model.provider, available_providers())
    provider = _providers[model.provider] = make()
    return provider


def provider_for(model: str) -> tuple[ModelProvider, ModelRef]:
    """The provider of a model named by its label or its setting's value (`gpt-5.4`, `openai:gpt-5.4`)."""
    ref = parse_model(model)
    return model_provider(ref), ref


def configured_providers(config: ResearchConfig) -> list[ModelProvider]:
    """The providers the configured models use, each once, in the settings' order."""
    providers: dict[ProviderName, ModelProvider] = {}
    for setting, ref in config.model_settings():
        if ref.provider not in providers:
            providers[ref.provider] = model_provider(ref, setting)
    return list(providers.values())


def require_available(config: ResearchConfig) -> None:
    """Raise `ProviderNotAvailable` for the first model setting whose provider is not implemented yet."""
    configured_providers(config)
