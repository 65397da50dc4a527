"""Models retire: the configured ones are checked against their provider's own list.

Each provider lists the models a key may use (OpenAI's `GET /v1/models`, each with an optional
`shutdown_date`), read once per provider the configuration uses whose key is set, all at once. A configured
model with a shutdown announced is a warning naming the model and its date; one the provider no longer lists
(shut down, misspelled, not open to this key) is an error naming the setting to change. Serving processes
(web, `runworker`, `ask`) run the check in the background as they start, so a slow provider never delays
them; `manage.py check` runs it bounded; staff read the last result on `GET /api/status`.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, date, datetime
from typing import Literal

from pydantic import BaseModel

from datascraper.errors import ModelsNotListed, ProviderNotConfigured, ResearchError, UpstreamTimeout
from datascraper.model_ref import ModelRef, ProviderName
from datascraper.models_config import PROVIDER_REQUIREMENT, ResearchConfig, get_research_config
from datascraper.providers.base import ModelListing
from datascraper.providers.registry import model_provider

logger = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 10.0

Level = Literal["ok", "warning", "error"]


class ModelCheck(BaseModel):
    """One configured model (by its label) against its provider's list."""

    setting: str
    model: str
    provider: ProviderName
    level: Level
    shutdown_date: date | None = None
    message: str


class ProviderCheck(BaseModel):
    """One provider the configured models use: its model list read (how many it lists), or why it was not."""

    provider: ProviderName
    level: Literal["ok", "warning", "error"]  # warning: a server that keeps no model list (its models unchecked)
    models_listed: int | None = None
    error_code: str | None = None
    message: str


class ModelLifecycleReport(BaseModel):
    """Each configured provider's list and each of its configured models; `error_code` and `error` are the first
    provider's whose list could not be read (its models then go unchecked), saying what to fix."""

    checked_at: datetime
    providers: list[ProviderCheck] = []
    checks: list[ModelCheck] = []
    error_code: str | None = None
    error: str | None = None

    @property
    def level(self) -> Level:
        if self.error_code is not None or any(c.level == "error" for c in self.checks):
            return "error"
        warned = any(c.level == "warning" for c in self.checks) or any(p.level == "warning" for p in self.providers)
        return "warning" if warned else "ok"


def judge_model(setting: str, ref: ModelRef, listed: ModelListing, today: date) -> ModelCheck:
    model, provider = ref.label, ref.provider
    if ref.name not in listed:
        return ModelCheck(
            setting=setting,
            model=model,
            provider=provider,
            level="error",
            message=f"The provider does not list '{model}' (shut down, misspelled, or not open to this key): "
            f"set {setting} to a current model.",
        )
    shutdown = listed[ref.name]
    if shutdown is None:
        message = f"'{model}' is live, no shutdown announced."
        return ModelCheck(setting=setting, model=model, provider=provider, level="ok", message=message)
    if shutdown <= today:
        return ModelCheck(
            setting=setting,
            model=model,
            provider=provider,
            level="error",
            shutdown_date=shutdown,
            message=f"'{model}' was shut down on {shutdown}: set {setting} to a current model.",
        )
    return ModelCheck(
        setting=setting,
        model=model,
        provider=provider,
        level="warning",
        shutdown_date=shutdown,
        message=f"'{model}' shuts down on {shutdown}: set {setting} to a current model before then.",
    )


async def list_models_of(
    config: ResearchConfig, provider: ProviderName, *, timeout_s: float = CHECK_TIMEOUT_S
) -> tuple[ProviderCheck, ModelListing | None]:
    """Read `provider`'s model list once, through the registry, bounded by `timeout_s`; the listing is None
    when it could not be read (no key, a rejected one, an unreachable provider), the check saying why."""
    ref = next(ref for _, ref in config.model_settings() if ref.provider == provider)
    if not config.provider_configured(provider):
        failure: ResearchError = ProviderNotConfigured.missing(PROVIDER_REQUIREMENT[provider][1])
        return _unlisted(provider, failure), None
    try:
        async with asyncio.timeout(timeout_s):
            listed = await model_provider(ref).list_models(timeout_s=timeout_s)
    except TimeoutError:
        return _unlisted(provider, UpstreamTimeout()), None
    except ModelsNotListed as exc:  # nothing is wrong with the server; its models go unchecked
        return ProviderCheck(provider=provider, level="warning", error_code=exc.code, message=exc.message), None
    except ResearchError as exc:
        return _unlisted(provider, exc), None
    message = f"{provider} lists {len(listed)} model(s)."
    return ProviderCheck(provider=provider, level="ok", models_listed=len(listed), message=message), listed


def _unlisted(provider: ProviderName, failure: ResearchError) -> ProviderCheck:
    return ProviderCheck(provider=provider, level="error", error_code=failure.code, message=failure.message)


async def check_models(
    config: ResearchConfig | None = None, *, timeout_s: float = CHECK_TIMEOUT_S, today: date | None = None
) -> ModelLifecycleReport:
    """List the models of each provider whose key is set, at once (each bounded by `timeout_s`), and judge
    each configured model of a provider that answered. A provider without its key is not asked: the runs
    that need it end `provider_not_configured`, and `doctor` says which variable to set."""
    config = config or get_research_config()
    now = datetime.now(UTC)
    today = today or now.date()
    providers = config.configured_providers()
    listed = await asyncio.gather(*(list_models_of(config, p, timeout_s=timeout_s) for p in providers))
    listings = {check.provider: listing for check, listing in listed if listing is not None}
    failed = next((check for check, _ in listed if check.level == "error"), None)
    return ModelLifecycleReport(
        checked_at=now,
        providers=[check for check, _ in listed],
        checks=[
            judge_model(setting, ref, listings[ref.provider], today)
            for setting, ref in config.model_settings()
            if ref.provider in listings
        ],
        error_code=failed.error_code if failed else None,
        error=failed.message if failed else None,
    )


def log_report(report: ModelLifecycleReport) -> None:
    for provider in report.providers:
        if provider.level != "ok":
            log = logger.error if provider.level == "error" else logger.warning
            log("The models of %s could not be checked: %s", provider.provider, provider.message)
    for check in report.checks:
        if check.level == "error":
            logger.error("%s", check.message)
        elif check.level == "warning":
            logger.warning("%s", check.message)


_latest: ModelLifecycleReport | None = None
_running: set[asyncio.Task[ModelLifecycleReport | None]] = set()


def latest_report() -> ModelLifecycleReport | None:
    """The last check this process made, or None before its first."""
    return _latest


async def refresh_report(*, timeout_s: float = CHECK_TIMEOUT_S) -> ModelLifecycleReport | None:
    """Check now, keep and log the result; None when no provider's key is set (nothing to check)."""
    global _latest
    if not get_research_config().configured_providers():
        return None
    report = await check_models(timeout_s=timeout_s)
    _latest = report
    log_report(report)
    return report


def start_model_check() -> asyncio.Task[ModelLifecycleReport | None] | None:
    """Check the configured models in the background of the running loop; the process does not wait."""
    if not get_research_config().configured_providers():
        return None
    task = asyncio.get_running_loop().create_task(refresh_report(), name="model-lifecycle-check")
    _running.add(task)  # the loop keeps only a weak reference
    task.add_done_callback(_running.discard)
    return task
