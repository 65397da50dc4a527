"""A model setting's value, `provider:model`, read into the provider that serves it and the model's own name.

`RESEARCH_PLANNER_MODEL`, `RESEARCH_MODEL` and `EVAL_JUDGE_MODEL` take `provider:model`; without a prefix the
provider is `openai`, so every configuration written before providers existed (`gpt-5.4`) means what it did.
The product names a model by its `label`: the value without the default provider's prefix (`gpt-5.4`,
`anthropic:claude-sonnet-4-5`). Usage, prices, reports and error messages key on it, so an OpenAI model is
named as it always was, however it was written.

Which providers are implemented is the registry's business (`datascraper.providers.registry`); here a
provider is one of the contract's names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, get_args

ProviderName = Literal["openai", "anthropic", "google", "openai-compatible"]
PROVIDER_NAMES: tuple[ProviderName, ...] = get_args(ProviderName)
DEFAULT_PROVIDER: ProviderName = "openai"
_PROVIDER_BY_NAME: dict[str, ProviderName] = {name: name for name in PROVIDER_NAMES}

# A prefix is letters and hyphens (each provider's name is). A model name may hold colons of its own:
# `openai-compatible:qwen2.5:14b` is Ollama's `qwen2.5:14b`. `ft:` starts an OpenAI fine-tuned model's id
# (`ft:gpt-4.1-mini:acme::abc123`), which is no provider: such an id keeps meaning an OpenAI model.
_PREFIX = re.compile(r"([a-z][a-z-]*):(.*)", re.DOTALL)
_OPENAI_FINE_TUNED = "ft"


class ModelSettingInvalid(ValueError):
    """A model setting that names no model, or a provider the contract does not know. One line, naming the
    setting, so a process that refuses to start on it says exactly what to change."""


@dataclass(frozen=True, slots=True)
class ModelRef:
    """One configured model: the provider that serves it and the model's name as that provider knows it."""

    provider: ProviderName
    name: str

    @property
    def label(self) -> str:
        """How the product names the model: the setting's value without the default provider's prefix."""
        return self.name if self.provider == DEFAULT_PROVIDER else f"{self.provider}:{self.name}"

    def __str__(self) -> str:
        return f"{self.provider}:{self.name}"


@lru_cache(maxsize=256)
def parse_model(value: str, setting: str | None = None) -> ModelRef:
    """`provider:model`, or a bare model of the default provider. `setting` names the variable in errors."""
    text = value.strip()
    where = f"{setting}={value!r}" if setting else repr(value)
    prefixed = _PREFIX.fullmatch(text)
    provider, name = (prefixed.group(1), prefixed.group(2).strip()) if prefixed else (DEFAULT_PROVIDER, text)
    if provider == _OPENAI_FINE_TUNED:
        provider, name = DEFAULT_PROVIDER, text
    known = _PROVIDER_BY_NAME.get(provider)
    if known is None:
        raise ModelSettingInvalid(
            f"{where} names an unknown provider '{provider}': write provider:model with one of "
            f"{', '.join(PROVIDER_NAMES)} (a model name holding a colon takes its provider first, "
            f"e.g. openai-compatible:{text})."
        )
    if not name:
        raise ModelSettingInvalid(f"{where} names no model: write provider:model, e.g. openai:gpt-5.4.")
    return ModelRef(known, name)
