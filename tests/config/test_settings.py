"""Settings come from the environment; production refuses to start on development defaults."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


PRODUCTION = {"DJANGO_SECRET_KEY": "x" * 50, "DJANGO_ALLOWED_HOSTS": "example.com"}


def load_settings(show: str = "DEBUG", **env: str) -> subprocess.CompletedProcess[str]:
    """Start Django with only `env` set (no DJANGO_* from this process) and print `settings.<show>`."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "REDIS_URL", "TRUSTED_PROXIES"))}
    environment.update(env, DJANGO_SETTINGS_MODULE="config.settings")
    code = f"import django; django.setup(); from django.conf import settings; print(settings.{show})"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )


def test_without_a_secret_key_settings_load_but_refuse_any_use_of_the_key():
    """Commands that sign nothing run on a fresh clone; the server's refusal is in test_fresh_clone_commands."""
    result = load_settings("SECRET_KEY", DJANGO_DEBUG="0")

    assert result.returncode != 0
    assert "The SECRET_KEY setting must not be empty" in result.stderr


def test_production_with_a_secret_key_starts():
    result = load_settings(DJANGO_DEBUG="0", **PRODUCTION)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_debug_is_off_unless_asked_for():
    assert load_settings(**PRODUCTION).stdout.strip() == "False"
    assert load_settings(DJANGO_DEBUG="1").stdout.strip() == "True"


def test_with_no_settings_at_all_debug_is_off():
    assert load_settings().stdout.strip() == "False"


def test_the_forwarded_proto_header_is_trusted_only_when_trusted_proxies_are_named():
    without_proxy = load_settings("SECURE_PROXY_SSL_HEADER", **PRODUCTION)
    behind_proxy = load_settings("SECURE_PROXY_SSL_HEADER", TRUSTED_PROXIES="10.0.0.0/8, 2001:db8::1", **PRODUCTION)

    assert without_proxy.returncode == 0, without_proxy.stderr
    assert without_proxy.stdout.strip() == "None"
    assert behind_proxy.stdout.strip() == "('HTTP_X_FORWARDED_PROTO', 'https')"


def test_a_trusted_proxy_that_is_not_an_address_stops_the_app_at_start():
    result = load_settings(TRUSTED_PROXIES="10.0.0.0/8, proxy.internal", **PRODUCTION)

    assert result.returncode != 0
    assert "TRUSTED_PROXIES: 'proxy.internal' is not an IP address or network" in result.stderr


def deploy_checks(**env: str) -> subprocess.CompletedProcess[str]:
    """`manage.py check --deploy` with production settings, failing on warnings."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    environment.update(
        DJANGO_DEBUG="0", DJANGO_SECRET_KEY=secrets.token_urlsafe(50), DJANGO_ALLOWED_HOSTS="example.com"
    )
    environment.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_production_settings_pass_the_deploy_checks():
    result = deploy_checks()

    assert result.returncode == 0, result.stdout + result.stderr


def test_production_settings_behind_a_trusted_proxy_pass_the_deploy_checks():
    result = deploy_checks(TRUSTED_PROXIES="10.0.0.1")

    assert result.returncode == 0, result.stdout + result.stderr


def test_the_deploy_checks_still_see_through_our_middleware():
    """Django's HSTS check depends on finding SecurityMiddleware: with ours in its place (config/middleware.py)
    it still runs."""
    result = deploy_checks(DJANGO_HSTS_SECONDS="0")

    assert result.returncode != 0
    assert "security.W004" in result.stderr


def test_invalid_research_settings_stop_the_app_at_start():
    result = load_settings(RESEARCH_CONCURRENCY="1000", DJANGO_DEBUG="1")

    assert result.returncode != 0
    assert "Invalid research settings (concurrency)" in result.stderr


def test_openai_models_start_with_or_without_their_provider_prefix():
    result = load_settings(DJANGO_DEBUG="1", RESEARCH_MODEL="openai:gpt-5.4", RESEARCH_PLANNER_MODEL="gpt-5.4-mini")

    assert result.returncode == 0, result.stderr


def test_an_unknown_provider_or_an_empty_model_stops_the_app_at_start_naming_the_setting():
    unknown = load_settings(DJANGO_DEBUG="1", EVAL_JUDGE_MODEL="antropic:claude-sonnet-4-5")
    empty = load_settings(DJANGO_DEBUG="1", RESEARCH_MODEL="openai:")

    assert unknown.returncode != 0 and empty.returncode != 0
    assert (
        "ImproperlyConfigured: EVAL_JUDGE_MODEL='antropic:claude-sonnet-4-5' names an unknown provider 'antropic'"
        in unknown.stderr
    )
    assert "ImproperlyConfigured: RESEARCH_MODEL='openai:' names no model" in empty.stderr


def test_every_search_api_starts_and_an_unknown_one_stops_the_app_at_start():
    started = [load_settings(DJANGO_DEBUG="1", SEARCH_PROVIDER=name) for name in ("searxng", "tavily", "brave", "exa")]
    unknown = load_settings(DJANGO_DEBUG="1", SEARCH_PROVIDER="bing")

    assert [result.returncode for result in started] == [0, 0, 0, 0], [result.stderr for result in started]
    assert unknown.returncode != 0
    assert "Invalid research settings (search_provider)" in unknown.stderr


def test_hosted_search_with_a_compatible_research_model_stops_the_app_at_start_and_a_search_api_starts():
    local = {
        "RESEARCH_MODEL": "openai-compatible:qwen2.5:14b",
        "OPENAI_COMPATIBLE_BASE_URL": "http://localhost:11434/v1",
    }
    hosted = load_settings(DJANGO_DEBUG="1", **local)
    searxng = load_settings(DJANGO_DEBUG="1", SEARCH_PROVIDER="searxng", SEARXNG_URL="http://localhost:8888", **local)

    assert hosted.returncode != 0
    assert hosted.stderr.strip().splitlines()[-1] == (
        "django.core.exceptions.ImproperlyConfigured: SEARCH_PROVIDER=hosted needs a research model with its "
        "provider's own web search, and RESEARCH_MODEL names the provider 'openai-compatible', which has none: set "
        "SEARCH_PROVIDER to a search API (searxng)."
    )
    assert searxng.returncode == 0, searxng.stderr
