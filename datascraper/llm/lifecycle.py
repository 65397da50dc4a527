"""Models retire: the configured ones are checked against the provider's own list.

`GET /v1/models` lists the models a key may use, each with an optional `shutdown_date`. A configured model
with a shutdown announced is a warning naming the model and its date; one the provider no longer lists (shut
down, misspelled, not open to this key) is an error naming the setting to change. Serving processes (web,
`runworker`, `ask`) run the check in the background as they start, so a slow provider never delays them;
`manage.py check` runs it bounded; staff read the last result on `GET /api/status`.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, date, datetime
from typing import Literal

import openai
from pydantic import BaseModel

from datascraper.llm.client import get_openai_client
from datascraper.llm.failures import translate_error
from datascraper.models_config import ResearchConfig, get_research_config

logger = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 10.0

Level = Literal["ok", "warning", "error"]


class ModelCheck(BaseModel):
    """One configured model against the provider's list."""

    setting: str
    model: str
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


def configured_models(config: ResearchConfig) -> list[tuple[str, str]]:
    """(setting, model) for each model the configuration names."""
    return [("RESEARCH_PLANNER_MODEL", config.planner_model), ("RESEARCH_MODEL", config.research_model)]


def judge_model(setting: str, model: str, listed: dict[str, date | None], today: date) -> ModelCheck:
    if model not in listed:
        return ModelCheck(
            setting=setting,
            model=model,
            level="error",
            message=f"The provider does not list '{model}' (shut down, misspelled, or not open to this key): "
            f"set {setting} to a current model.",
        )
    shutdown = listed[model]
    if shutdown is None:
        message = f"'{model}' is live, no shutdown announced."
        return ModelCheck(setting=setting, model=model, level="ok", message=message)
    if shutdown <= today:
        return ModelCheck(
            setting=setting,
            model=model,
            level="error",
            shutdown_date=shutdown,
            message=f"'{model}' was shut down on {shutdown}: set {setting} to a current model.",
        )
    return ModelCheck(
        setting=setting,
        model=model,
        level="warning",
        shutdown_date=shutdown,
        message=f"'{model}' shuts down on {shutdown}: set {setting} to a current model before then.",
    )


def _shutdown_date(value: object) -> date | None:
    try:
        return date.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


async def check_models(
    config: ResearchConfig | None = None, *, timeout_s: float = CHECK_TIMEOUT_S, today: date | None = None
) -> ModelLifecycleReport:
    """List the provider's models once (bounded by `timeout_s`) and judge each configured model."""
    config = config or get_research_config()
    now = datetime.now(UTC)
    today = today or now.date()
    try:
        client = get_openai_client().with_options(timeout=timeout_s, max_retries=0)
        async with asyncio.timeout(timeout_s):
            listed = {m.id: _shutdown_date(m.shutdown_date) async for m in client.models.list()}
    except (openai.OpenAIError, TimeoutError) as exc:
        failure = translate_error(exc)
        return ModelLifecycleReport(checked_at=now, error_code=failure.code, error=failure.message)
    checks = [judge_model(setting, model, listed, today) for setting, model in configured_models(config)]
    return ModelLifecycleReport(checked_at=now, checks=checks)


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
