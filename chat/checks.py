"""`manage.py check --deploy`: the configured models against the provider's list (`datascraper.providers.lifecycle`).

A model with a shutdown announced is a warning, one the provider does not serve is an error, both naming
the setting to change. Each provider whose key is set is checked; without any key there is nothing to
check. Each list is read once, bounded; a check run from inside an event loop (where it cannot wait)
reports the last result of this process instead.

A deployment check only: Django runs the other system checks before every management command, and a command
that is not about the provider (`migrate`, `create_api_key`...) must neither wait on the network nor be refused
because a model retired. `doctor`, `ask`, the start-up log and `/api/status` report the models themselves.
"""

from __future__ import annotations

import asyncio

from django.core import checks

from datascraper.models_config import get_research_config
from datascraper.providers.lifecycle import ModelLifecycleReport, check_models, latest_report

CHECK_TIMEOUT_S = 5.0


def _report() -> ModelLifecycleReport | None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(check_models(timeout_s=CHECK_TIMEOUT_S))
    return latest_report()


@checks.register("models", deploy=True)
def configured_models_are_live(app_configs: object = None, **kwargs: object) -> list[checks.CheckMessage]:
    if not get_research_config().configured_providers():
        return []
    report = _report()
    if report is None:
        return []
    messages: list[checks.CheckMessage] = []
    for provider in report.providers:
        if provider.level != "ok":
            message = f"The models of {provider.provider} could not be checked: {provider.message}"
            messages.append(checks.Warning(message, id="chat.W101"))
    for check in report.checks:
        if check.level == "error":
            messages.append(checks.Error(check.message, hint=f"Set {check.setting}.", id="chat.E102"))
        elif check.level == "warning":
            messages.append(checks.Warning(check.message, hint=f"Set {check.setting}.", id="chat.W103"))
    return messages
