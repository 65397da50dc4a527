"""Models retire: the configured ones are checked against the provider's list, with the shutdown dates it
announces, at every process start (in the background), by `manage.py check --deploy`, for staff on /api/status;
no other system check calls the provider."""

from __future__ import annotations

import asyncio
from datetime import date
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from config.asgi import MarketDataLifespan
from datascraper.models_config import ResearchConfig
from datascraper.providers import lifecycle
from datascraper.providers.anthropic.provider import AnthropicProvider
from datascraper.providers.lifecycle import check_models, start_model_check
from datascraper.providers.warm_up import warm_up_models
from tests.config.test_asgi_lifespan import LifespanDriver
from tests.datascraper.conftest import market_data  # noqa: F401  (the fixture)

TODAY = date(2026, 11, 26)


def test_the_default_models_are_live_with_no_shutdown_announced(fake_openai):
    defaults = ResearchConfig()
    for model in (defaults.planner_model, defaults.research_model):
        listed = fake_openai.catalogue[model]
        assert listed.shutdown is None, f"{model} has a shutdown announced"
        assert listed.web_search or model == defaults.planner_model


async def test_live_defaults_pass_the_check(fake_openai):
    report = await check_models(today=TODAY)

    assert report.level == "ok"
    assert [(c.setting, c.model, c.level) for c in report.checks] == [
        ("RESEARCH_PLANNER_MODEL", "gpt-5.4-mini", "ok"),
        ("RESEARCH_MODEL", "gpt-5.4", "ok"),
    ]


async def test_a_model_with_an_announced_shutdown_is_a_warning_naming_it_and_its_date(fake_openai, research_env):
    research_env(RESEARCH_PLANNER_MODEL="gpt-5-mini")
    fake_openai.today = TODAY

    report = await check_models(today=TODAY)

    [planner, research] = report.checks
    assert (planner.level, planner.shutdown_date) == ("warning", date(2026, 12, 11))
    assert "'gpt-5-mini'" in planner.message and "2026-12-11" in planner.message
    assert "RESEARCH_PLANNER_MODEL" in planner.message
    assert research.level == "ok" and report.level == "warning"


async def test_a_model_the_provider_no_longer_serves_is_an_error_naming_the_setting(fake_openai, research_env):
    research_env(RESEARCH_MODEL="gpt-5.2-chat-latest")
    fake_openai.today = TODAY

    report = await check_models(today=TODAY)

    research = report.checks[1]
    assert research.level == "error" and report.level == "error"
    assert "'gpt-5.2-chat-latest'" in research.message and "set RESEARCH_MODEL" in research.message


async def test_a_rejected_key_is_reported_as_such(fake_openai):
    fake_openai.revoked_keys.add("test-key")

    report = await check_models(today=TODAY)

    assert report.error_code == "provider_auth_failed" and report.checks == []


async def test_the_check_runs_in_the_background_of_a_starting_web_process(fake_openai, monkeypatch, settings):
    settings.RUNS_BACKEND = "queue"  # no market data server to start: only the check is under test
    monkeypatch.setattr(lifecycle, "_latest", None)
    fake_openai.models_delay_s = 1.0

    lifespan = LifespanDriver(MarketDataLifespan(app=None))
    await lifespan.step("lifespan.startup")

    assert lifespan.sent == ["lifespan.startup.complete"]
    async with asyncio.timeout(5):
        while not (listings := [r for r in fake_openai.requests if r.path == "/v1/models"]):
            await asyncio.sleep(0.01)
    assert listings[0].ended_at is None, "the start did not wait for the provider's list"
    async with asyncio.timeout(5):
        while lifecycle.latest_report() is None:
            await asyncio.sleep(0.05)
    assert lifecycle.latest_report().level == "ok"
    await lifespan.step("lifespan.shutdown")


async def test_without_a_key_nothing_is_checked(monkeypatch, research_env):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    research_env()

    assert start_model_check() is None


def test_manage_py_check_deploy_warns_of_a_shutdown_and_fails_on_a_retired_model(fake_openai, research_env, capsys):
    research_env(RESEARCH_PLANNER_MODEL="gpt-5-mini")
    fake_openai.today = TODAY

    call_command("check", "--deploy")
    assert "'gpt-5-mini' shuts down on 2026-12-11" in capsys.readouterr().err

    research_env(RESEARCH_MODEL="gpt-5.2-chat-latest")
    with pytest.raises(SystemCheckError, match=r"'gpt-5\.2-chat-latest' .*RESEARCH_MODEL"):
        call_command("check", "--deploy")


@pytest.mark.django_db(transaction=True)
def test_commands_not_about_the_provider_neither_call_it_nor_stop_on_a_retired_model(fake_openai, research_env):
    research_env(RESEARCH_MODEL="gpt-5.2-chat-latest")
    fake_openai.today = TODAY
    stdout = StringIO()

    call_command("check")
    call_command("migrate", "--noinput", verbosity=0)
    call_command("create_api_key", "carol", stdout=stdout, stderr=StringIO())

    assert stdout.getvalue().strip().startswith("frk_")
    assert fake_openai.requests == []


def test_ask_prints_a_warning_for_a_retiring_model_beside_its_answer(fake_openai, research_env, market_data):
    research_env(RESEARCH_PLANNER_MODEL="gpt-5-mini")
    fake_openai.today = TODAY
    stdout, stderr = StringIO(), StringIO()

    call_command("ask", "--mode", "quick", "How did Apple's last quarter go?", stdout=stdout, stderr=stderr)

    assert "default answer" in stdout.getvalue()
    assert "! 'gpt-5-mini' shuts down on 2026-12-11: set RESEARCH_PLANNER_MODEL" in stderr.getvalue()


async def test_staff_see_the_last_model_check_on_the_status(api, fake_openai, research_env, monkeypatch):
    monkeypatch.setattr(lifecycle, "_latest", None)
    research_env(RESEARCH_PLANNER_MODEL="gpt-5-mini")
    fake_openai.today = TODAY
    await lifecycle.refresh_report()
    await get_user_model().objects.filter(username="alice").aupdate(is_staff=True)

    status = (await api.get("/api/status")).json()

    assert status["models"]["checks"][0] == {
        "setting": "RESEARCH_PLANNER_MODEL",
        "model": "gpt-5-mini",
        "provider": "openai",
        "level": "warning",
        "shutdown_date": "2026-12-11",
        "message": "'gpt-5-mini' shuts down on 2026-12-11: set RESEARCH_PLANNER_MODEL to a current model before then.",
    }


async def test_each_provider_whose_key_is_set_is_listed_once_and_its_models_judged(
    fake_openai, fake_anthropic, research_env
):
    research_env(EVAL_JUDGE_MODEL="anthropic:claude-old")

    report = await check_models(today=TODAY)

    assert [(p.provider, p.level) for p in report.providers] == [("openai", "ok"), ("anthropic", "ok")]
    assert report.providers[0].models_listed and report.providers[1].models_listed
    assert [(c.setting, c.model, c.provider, c.level) for c in report.checks] == [
        ("RESEARCH_PLANNER_MODEL", "gpt-5.4-mini", "openai", "ok"),
        ("RESEARCH_MODEL", "gpt-5.4", "openai", "ok"),
        ("EVAL_JUDGE_MODEL", "anthropic:claude-old", "anthropic", "error"),
    ]
    assert "does not list 'anthropic:claude-old'" in report.checks[2].message and "EVAL_JUDGE_MODEL" in report.checks[2].message
    assert len([r for r in fake_openai.requests if r.path == "/v1/models"]) == 1


async def test_a_provider_without_its_key_is_not_asked_and_the_others_are_checked(
    fake_openai, fake_anthropic, research_env
):
    research_env(EVAL_JUDGE_MODEL="anthropic:claude-sonnet-4-6", ANTHROPIC_API_KEY="")

    report = await check_models(today=TODAY)

    assert report.level == "ok" and [p.provider for p in report.providers] == ["openai"]
    assert [c.setting for c in report.checks] == ["RESEARCH_PLANNER_MODEL", "RESEARCH_MODEL"]
    assert fake_anthropic.requests == []


async def test_a_provider_that_fails_leaves_the_others_checked_and_names_what_failed(
    fake_openai, fake_anthropic, research_env
):
    research_env(EVAL_JUDGE_MODEL="anthropic:claude-sonnet-4-6")
    fake_openai.revoked_keys.add("test-key")

    report = await check_models(today=TODAY)

    assert [(p.provider, p.level, p.error_code) for p in report.providers] == [
        ("openai", "error", "provider_auth_failed"),
        ("anthropic", "ok", None),
    ]
    assert report.error_code == "provider_auth_failed" and report.level == "error"
    assert [(c.setting, c.level) for c in report.checks] == [("EVAL_JUDGE_MODEL", "ok")]


async def test_only_the_providers_whose_key_is_set_are_warmed_up(fake_openai, research_env, monkeypatch):
    warmed: list[str] = []

    async def warm_up(provider: AnthropicProvider, schemas: object) -> None:
        warmed.append(provider.name)

    monkeypatch.setattr(AnthropicProvider, "warm_up", warm_up)
    research_env(EVAL_JUDGE_MODEL="anthropic:claude-sonnet-4-6", ANTHROPIC_API_KEY="")
    await warm_up_models()
    assert warmed == []

    research_env(ANTHROPIC_API_KEY="placeholder-key-anthropic")
    await warm_up_models()
    assert warmed == ["anthropic"]
