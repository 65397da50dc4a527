"""Settings come from the environment; production refuses to start on development defaults."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_settings(**env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "REDIS_URL"))}
    environment.update(env, DJANGO_SETTINGS_MODULE="config.settings")
    code = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )


def test_production_without_a_secret_key_refuses_to_start():
    result = load_settings(DJANGO_DEBUG="0")

    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def test_production_with_a_secret_key_starts():
    result = load_settings(DJANGO_DEBUG="0", DJANGO_SECRET_KEY="x" * 50, DJANGO_ALLOWED_HOSTS="example.com")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def deploy_checks(**env: str) -> subprocess.CompletedProcess[str]:
    """`manage.py check --deploy` with production settings, failing on warnings."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    environment.update(DJANGO_DEBUG="0", DJANGO_SECRET_KEY=secrets.token_urlsafe(50), DJANGO_ALLOWED_HOSTS="example.com")
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


def test_the_deploy_checks_still_see_through_our_middleware():
    """Django's HSTS check depends on finding SecurityMiddleware: with ours in its place (config/middleware.py)
    it still runs."""
    result = deploy_checks(DJANGO_HSTS_SECONDS="0")

    assert result.returncode != 0
    assert "security.W004" in result.stderr


def test_invalid_research_settings_stop_the_app_at_start():
    result = load_settings(RESEARCH_CONCURRENCY="1000")

    assert result.returncode != 0
    assert "Invalid research settings (concurrency)" in result.stderr
