"""Whether this process's configuration can answer at all: its RESEARCH_* settings valid, and every provider and
the search provider they name implemented in this version.

Serving processes and commands refuse to start on a problem (`chat.apps`), in one line naming the setting;
`manage.py doctor` reports the same line as its failing "configuration" check and goes on with the rest.
"""

from __future__ import annotations

from pydantic import ValidationError

from datascraper.errors import ProviderNotAvailable
from datascraper.model_ref import ModelSettingInvalid
from datascraper.models_config import ResearchConfig, get_research_config
from datascraper.providers.registry import require_available
from datascraper.search import registry as search_registry


class ConfigurationRefused(Exception):
    """The configuration cannot serve: one line that names the setting to change."""


def checked_configuration() -> ResearchConfig:
    """The process's research configuration, every provider it names available; else `ConfigurationRefused`."""
    try:
        config = get_research_config()
    except ValidationError as exc:
        raise ConfigurationRefused(_settings_error(exc)) from None
    try:
        require_available(config)
        search_registry.require_available(config)
    except ProviderNotAvailable as exc:
        raise ConfigurationRefused(exc.message) from None
    return config


def _settings_error(exc: ValidationError) -> str:
    """One line: a model setting's own message (it says exactly what to write), else the fields named."""
    errors = exc.errors()
    for error in errors:
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, ModelSettingInvalid):
            return str(cause)
    fields = ", ".join(str(error["loc"][0]) for error in errors)
    return f"Invalid research settings ({fields}): check the RESEARCH_* variables."
