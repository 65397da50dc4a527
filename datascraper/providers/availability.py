"""Whether this process's configuration can answer at all: its RESEARCH_* settings valid (a model setting's
provider and SEARCH_PROVIDER among the contract's names), and the research model able to search when
SEARCH_PROVIDER is `hosted`.

Serving processes and commands refuse to start on a problem (`chat.apps`), in one line naming the setting;
`manage.py doctor` reports the same line as its failing "configuration" check and goes on with the rest.
"""

from __future__ import annotations

from pydantic import ValidationError

from datascraper.errors import HostedSearchUnavailable
from datascraper.model_ref import ModelSettingInvalid
from datascraper.models_config import ResearchConfig, get_research_config
from datascraper.search import registry as search_registry


class ConfigurationRefused(Exception):
    """The configuration cannot serve: one line that names the setting to change."""


def checked_configuration() -> ResearchConfig:
    """The process's research configuration, able to answer; else `ConfigurationRefused`."""
    try:
        config = get_research_config()
    except ValidationError as exc:
        raise ConfigurationRefused(_settings_error(exc)) from None
    try:
        search_registry.require_available(config)
    except HostedSearchUnavailable as exc:
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
