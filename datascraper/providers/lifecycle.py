"""Models retire: the configured ones are checked against their provider's own list.

Each provider lists the models a key may use (OpenAI's `GET /v1/models`, each with an optional
`shutdown_date`), read once per provider the configuration uses. A configured model with a shutdown announced
is a warning naming the model and its date; one the provider no longer lists (shut down, misspelled, not open
to this key) is an error naming the setting to change. Serving processes (web,
`runworker`, `ask`) run the check in the background as they start, so a slow provider never delays them;
`manage.py check` runs it bounded; staff read the last result on `GET /api/status`.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, date, datetime
from typing import Literal

from pydantic import BaseModel

from datascraper.errors import ResearchError, UpstreamTimeout
from datascraper.model_ref import ModelRef, ProviderName, parse_model
from datascraper.models_config import ResearchConfig, get_research_config
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


class ModelLifecycleReport(BaseModel):
    """Every configured model, or why the list could not be read (`error_code` then says what to fix)."""

    checked_at: datetime
    checks: list[ModelCheck] = []
    error_code: str | None = None
    error: str | None = None

    @property
    def level(self) -> Level:
        if self.error_code is not None or any(c.level == "error" for c in self.checks):
            return "error"
        return "warning" if any(c.level == "warning" for c in self.checks) else "ok"


def configured_models(config: ResearchConfig) -> list[tuple[str, ModelRef]]:
    """(setting, model) for each model a question uses."""
    return [
        ("RESEARCH_PLANNER_MODEL", parse_model(config.planner_model)),
        ("RESEARCH_MODEL", parse_model(config.research_model)),
    ]


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


async def check_models(
    config: ResearchConfig | None = None, *, timeout_s: float = CHECK_TIMEOUT_S, today: date | None = None
) -> ModelLifecycleReport:
    """List each provider's models once (bounded by `timeout_s`) and judge each configured model."""
    config = config or get_research_config()
    now = datetime.now(UTC)
    today = today or now.date()
    configured = configured_models(config)
    listings: dict[ProviderName, ModelListing] = {}
    for _, ref in configured:
        if ref.provider in listings:
            continue
        try:
            provider = model_provider(ref)
            async with asyncio.timeout(timeout_s):
                listings[ref.provider] = await provider.list_models(timeout_s=timeout_s)
        except TimeoutError:
            return _unchecked(now, UpstreamTimeout())
        except ResearchError as exc:
            return _unchecked(now, exc)
    checks = [judge_model(setting, ref, listings[ref.provider], today) for setting, ref in configured]
    return ModelLifecycleReport(checked_at=now, checks=checks)


def _unchecked(now: datetime, failure: ResearchError) -> ModelLifecycleReport:
    return ModelLifecycleReport(checked_at=now, error_code=failure.code, error=failure.message)


def log_report(report: ModelLifecycleReport) -> None:
    if report.error_code is not None:
        logger.error("The configured models could not be checked: %s", report.error)
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
    """Check now, keep and log the result; None when no key is configured (nothing to check)."""
    global _latest
    if not get_research_config().is_configured:
        return None
    report = await check_models(timeout_s=timeout_s)
    _latest = report
    log_report(report)
    return report


def start_model_check() -> asyncio.Task[ModelLifecycleReport | None] | None:
    """Check the configured models in the background of the running loop; the process does not wait."""
    if not get_research_config().is_configured:
        return None
    task = asyncio.get_running_loop().create_task(refresh_report(), name="model-lifecycle-check")
    _running.add(task)  # the loop keeps only a weak reference
    task.add_done_callback(_running.discard)
    return task
