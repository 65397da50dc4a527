"""`manage.py doctor` checks the live set-up: against the fakes, each check passes, and each broken piece
is one ✗ line with its fix and a non-zero exit status."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from datascraper.cache import TTLCache
from datascraper.filings.client import SecClient
from datascraper.filings.config import FilingsConfig
from datascraper.filings.service import FilingsService
from datascraper.market_data.yahoo import YahooFinanceAdapter
from datascraper.mcp_server import build_server
from datascraper.research_engine.data.market_data_client import set_market_data_client
from datascraper.research_engine.data.session import MarketDataClient
from tests.datascraper.conftest import MARKET_NOW, market_data, market_data_down  # noqa: F401  (the fixtures)
from tests.fakes.openai_server import NO_CREDIT, JsonReply, wants_structured_output
from tests.fakes.page_server import FakePageServer, article
from tests.fakes.searxng_server import FakeSearxng, searx_result
from tests.fakes.sec_server import FakeSecServer
from tests.fakes.yfinance import FakeYahoo

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def provider(fake_openai):
    """The fake's planner answers the doctor's probe (2 + 2 = 4) correctly, as a working model does."""
    fake_openai.script(JsonReply({"answer": True}), when=wants_structured_output, times=None)
    return fake_openai


@pytest.fixture
def public_page(verifying) -> str:
    with FakePageServer() as server:
        yield server.add("/about", article("About", "A public page the citation fetcher can read."))


def doctor(*args: str) -> tuple[str, int]:
    out = StringIO()
    try:
        call_command("doctor", *args, stdout=out)
    except CommandError as exc:
        return out.getvalue(), exc.returncode
    return out.getvalue(), 0


def lines_by_name(output: str) -> dict[str, str]:
    return {line[2:].split("  ")[0].strip(): line for line in output.splitlines() if line[:1] in "✓!✗-"}


def test_every_check_passes_against_a_working_set_up(provider, market_data, public_page):
    output, status = doctor("--page-url", public_page)

    lines = lines_by_name(output)
    assert status == 0, output
    for name in ("key", "model RESEARCH_PLANNER_MODEL", "model RESEARCH_MODEL", "structured output", "web search",
                 "Yahoo quote", "Yahoo statement", "citation fetcher", "database"):
        assert lines[name].startswith("✓"), lines[name]
    assert "gpt-5.4 searched and cited 2 page(s)" in lines["web search"]
    assert "AAPL quarterly income statement" in lines["Yahoo statement"]
    assert lines["SEC filings"].startswith("-") and "SEC_USER_AGENT not set" in lines["SEC filings"]
    assert lines["workers"].startswith("-")  # in-process runs: no workers to check


def test_each_model_is_named_with_its_provider_however_its_setting_is_written(
    provider, market_data, public_page, research_env
):
    research_env(RESEARCH_MODEL="openai:gpt-5.4", RESEARCH_PLANNER_MODEL="gpt-5.4-mini")

    output, status = doctor("--page-url", public_page)

    lines = lines_by_name(output)
    assert status == 0, output
    assert "openai:gpt-5.4-mini, no shutdown announced" in lines["model RESEARCH_PLANNER_MODEL"]
    assert "openai:gpt-5.4, no shutdown announced" in lines["model RESEARCH_MODEL"]
    assert "openai:gpt-5.4-mini answered in the strict schema" in lines["structured output"]
    assert "openai:gpt-5.4 searched and cited 2 page(s)" in lines["web search"]


def test_a_retired_model_is_a_failure_naming_the_setting_to_change(provider, market_data, public_page, research_env):
    research_env(RESEARCH_MODEL="gpt-5.2-chat-latest")
    provider.today = date(2026, 11, 26)

    output, status = doctor("--page-url", public_page)

    lines = lines_by_name(output)
    assert status == 1
    assert lines["model RESEARCH_MODEL"].startswith("✗")
    assert "fix: Set RESEARCH_MODEL to a current model" in output
    assert lines["web search"].startswith("✗") and "model_unavailable" in lines["web search"]
    assert lines["structured output"].startswith("✓")


def test_an_account_without_credit_fails_both_model_calls_with_the_fix_to_add_credit(fake_openai, market_data, public_page):
    fake_openai.set_default(NO_CREDIT)  # the planner's call: a 429; the web search's: 200, then the error inside

    output, status = doctor("--page-url", public_page)

    lines = lines_by_name(output)
    assert status == 1
    for name in ("structured output", "web search"):
        assert lines[name].startswith("✗") and "provider_quota_exceeded" in lines[name], lines[name]
    assert output.count("fix: Add credit to the key's account, or use another key.") == 2


def test_a_retiring_model_is_a_warning_not_a_failure(provider, market_data, public_page, research_env):
    research_env(RESEARCH_PLANNER_MODEL="gpt-5-mini")
    provider.today = date(2026, 11, 26)

    output, status = doctor("--page-url", public_page)

    assert status == 0
    line = lines_by_name(output)["model RESEARCH_PLANNER_MODEL"]
    assert line.startswith("! model RESEARCH_PLANNER_MODEL") and "'gpt-5-mini' shuts down on 2026-12-11" in line


def test_without_a_key_the_key_fails_and_the_model_checks_are_skipped(monkeypatch, research_env, market_data, public_page):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    research_env()

    output, status = doctor("--page-url", public_page)

    lines = lines_by_name(output)
    assert status == 1
    assert lines["key"].startswith("✗") and "fix: Put OPENAI_API_KEY" in output
    assert all(lines[name].startswith("-") for name in ("structured output", "web search", "model RESEARCH_MODEL"))
    assert lines["Yahoo quote"].startswith("✓")


def test_unreachable_market_data_and_pages_fail_with_their_fixes(fake_openai, market_data_down, verifying):
    output, status = doctor("--page-url", "http://127.0.0.1:9/", "--timeout", "5")

    lines = lines_by_name(output)
    assert status == 1
    assert lines["Yahoo quote"].startswith("✗") and lines["citation fetcher"].startswith("✗")
    assert "fix: Cited pages cannot be checked" in output


def test_json_output_lists_every_check_for_scripts(provider, market_data, public_page):
    output, status = doctor("--json", "--page-url", public_page)

    report = json.loads(output)
    assert status == 0 and report["ok"] is True
    assert {check["status"] for check in report["checks"]} <= {"ok", "skip"}
    assert all(check["latency_ms"] is not None for check in report["checks"] if check["status"] == "ok")


def test_a_planner_that_answers_in_shape_but_wrongly_is_a_warning(fake_openai, market_data, public_page):
    fake_openai.script(JsonReply({"answer": False}), when=wants_structured_output)

    output, status = doctor("--page-url", public_page)

    assert status == 0
    assert lines_by_name(output)["structured output"].startswith("! structured output")



@pytest.mark.skipif(not settings.IS_POSTGRES, reason="the queue's tables need PostgreSQL")
def test_the_queue_without_a_live_worker_fails_with_the_command_to_start_one(provider, market_data, public_page, settings):
    settings.RUNS_BACKEND = "queue"

    output, status = doctor("--page-url", public_page)

    assert status == 1
    assert lines_by_name(output)["workers"].startswith("✗ workers") and "fix: Start one: python manage.py runworker" in output


@pytest.fixture
def market_data_with_sec() -> Iterator[FakeSecServer]:
    """The process-wide market data client, its filing tools pointed at the fake SEC."""
    with FakeSecServer() as sec:
        config = FilingsConfig(user_agent="Finance Research Tests ops@example.com", data_url=sec.data_url, www_url=sec.www_url)
        server = build_server(
            YahooFinanceAdapter(FakeYahoo().ticker, cache=TTLCache(), timeout_s=2, now=lambda: MARKET_NOW),
            FilingsService(SecClient(config, cache=TTLCache())),
        )
        client = MarketDataClient(server, call_timeout_s=10)
        previous = set_market_data_client(client)
        yield sec
        set_market_data_client(previous)
        client.close()


def test_the_sec_check_reads_a_filing_when_a_user_agent_is_set(provider, market_data_with_sec, public_page):
    output, status = doctor("--page-url", public_page)

    line = lines_by_name(output)["SEC filings"]
    assert status == 0
    assert line.startswith("✓ SEC filings") and "AAPL's latest filing: " in line


def test_the_sec_check_says_the_machine_s_processes_share_the_budget_without_redis(
    provider, market_data_with_sec, public_page, monkeypatch, tmp_path
):
    monkeypatch.setenv("SEC_LIMITER_DIR", str(tmp_path))
    monkeypatch.delenv("REDIS_URL", raising=False)

    output, _ = doctor("--page-url", public_page)

    line = lines_by_name(output)["SEC filings"]
    assert "SEC budget 10 requests per 2 s, shared through " in line
    assert f"{tmp_path}/sec-requests-" in line and "by this machine's processes" in line
    assert "REDIS_URL shares it across machines" in line


def test_the_sec_check_says_every_process_shares_the_budget_through_redis(
    provider, market_data_with_sec, public_page, monkeypatch
):
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/15")

    output, _ = doctor("--page-url", public_page)

    assert (
        "SEC budget 10 requests per 2 s, shared through Redis by every process" in lines_by_name(output)["SEC filings"]
    )


@pytest.fixture
def searx() -> Iterator[FakeSearxng]:
    with FakeSearxng() as server:
        server.results = [searx_result("https://www.sec.gov/edgar/search/", "EDGAR Full Text Search")]
        yield server


def test_with_searxng_one_bounded_search_is_checked_instead_of_the_hosted_search(
    provider, market_data, public_page, searx, research_env
):
    research_env(SEARCH_PROVIDER="searxng", SEARXNG_URL=searx.url)

    output, status = doctor("--page-url", public_page)

    lines = lines_by_name(output)
    assert status == 0, output
    assert lines["search provider"].startswith("✓") and "searxng found 1 result(s)" in lines["search provider"]
    assert lines["web search"].startswith("-") and "SEARCH_PROVIDER=searxng" in lines["web search"]
    assert [query["format"] for query in searx.queries] == [["json"]]
    assert not any(request.has_web_search for request in provider.requests)


def test_a_searxng_instance_without_the_json_format_fails_with_the_setting_to_change(
    provider, market_data, public_page, searx, research_env
):
    research_env(SEARCH_PROVIDER="searxng", SEARXNG_URL=searx.url)
    searx.formats = ("html",)

    output, status = doctor("--page-url", public_page)

    assert status == 1
    assert lines_by_name(output)["search provider"].startswith("✗")
    assert "fix: Add json to search.formats in the instance's settings.yml, then restart it." in output


def test_with_the_hosted_search_the_search_provider_check_is_skipped(provider, market_data, public_page):
    output, _ = doctor("--page-url", public_page)

    assert lines_by_name(output)["search provider"].startswith("- search provider")


def checks_by_name(output: str) -> dict[str, dict[str, object]]:
    return {check["name"]: check for check in json.loads(output)["checks"]}


def test_json_lists_a_check_for_each_model_provider_and_the_search_provider(
    provider, fake_anthropic, market_data, public_page, searx, research_env
):
    research_env(EVAL_JUDGE_MODEL="anthropic:claude-sonnet-4-6", SEARCH_PROVIDER="searxng", SEARXNG_URL=searx.url)

    output, status = doctor("--json", "--page-url", public_page)

    checks = checks_by_name(output)
    assert status == 0, output
    assert (checks["key"]["status"], checks["key"]["provider"]) == ("ok", "openai")
    assert (checks["key anthropic"]["status"], checks["key anthropic"]["provider"]) == ("ok", "anthropic")
    judge = checks["model EVAL_JUDGE_MODEL"]
    assert (judge["status"], judge["provider"]) == ("ok", "anthropic")
    assert judge["detail"] == "anthropic:claude-sonnet-4-6, no shutdown announced"
    assert checks["model RESEARCH_MODEL"]["provider"] == "openai"
    search = checks["search provider"]
    assert (search["status"], search["provider"]) == ("ok", "searxng")
    assert len([r for r in provider.requests if r.path == "/v1/models"]) == 1
    assert [r.path for r in fake_anthropic.requests if r.path.startswith("/v1/models")][:1] == ["/v1/models"]
    assert not [r for r in fake_anthropic.requests if r.path == "/v1/messages"]  # the judge is listed, not asked


def test_a_provider_without_its_key_fails_its_own_check_naming_the_variable(
    provider, market_data, public_page, research_env
):
    research_env(EVAL_JUDGE_MODEL="anthropic:claude-sonnet-4-6", ANTHROPIC_API_KEY="")

    output, status = doctor("--page-url", public_page)

    lines = lines_by_name(output)
    assert status == 1
    assert lines["key anthropic"].startswith("✗") and "ANTHROPIC_API_KEY is not set" in lines["key anthropic"]
    assert "fix: Put ANTHROPIC_API_KEY=... in .env or the environment." in output
    assert lines["model EVAL_JUDGE_MODEL"].startswith("-")
    for name in ("key", "model RESEARCH_MODEL", "structured output", "web search"):  # the planner's provider works
        assert lines[name].startswith("✓"), lines[name]


def test_a_judge_model_its_provider_does_not_list_fails_naming_the_setting(
    provider, fake_anthropic, market_data, public_page, research_env
):
    research_env(EVAL_JUDGE_MODEL="anthropic:claude-old")

    output, status = doctor("--page-url", public_page)

    assert status == 1
    assert lines_by_name(output)["model EVAL_JUDGE_MODEL"].startswith("✗")
    assert "The provider does not list 'anthropic:claude-old'" in output and "set EVAL_JUDGE_MODEL" in output


def test_settings_that_stop_every_other_command_are_doctor_s_failing_configuration_check(
    provider, market_data, public_page, research_env
):
    research_env(RESEARCH_CONCURRENCY="1000")

    output, status = doctor("--page-url", public_page)

    lines = lines_by_name(output)
    assert status == 1
    assert lines["configuration"].startswith("✗ configuration")
    assert "Invalid research settings (concurrency): check the RESEARCH_* variables." in lines["configuration"]
    assert "fix: Change the setting the line names" in output
    for name in ("key", "structured output", "web search", "search provider", "Yahoo quote", "citation fetcher"):
        assert lines[name].startswith("-") and "needs valid settings" in lines[name], lines[name]
    assert lines["database"].startswith("✓")
    assert provider.requests == []


def test_hosted_search_without_a_model_that_searches_fails_the_configuration_check_and_the_rest_runs(
    provider, market_data, public_page, research_env
):
    research_env(EVAL_JUDGE_MODEL="openai-compatible:llama3.3", RESEARCH_MODEL="openai-compatible:llama3.3")

    output, status = doctor("--page-url", public_page)

    lines = lines_by_name(output)
    assert status == 1
    assert lines["configuration"].startswith("✗") and "SEARCH_PROVIDER=hosted needs a research model" in output
    assert lines["key openai-compatible"].startswith("✗") and "OPENAI_COMPATIBLE_BASE_URL is not set" in output
    for name in ("key", "model RESEARCH_PLANNER_MODEL", "structured output", "Yahoo quote", "database"):
        assert lines[name].startswith("✓"), lines[name]


def test_with_valid_settings_the_configuration_check_names_each_model_and_the_search(
    provider, market_data, public_page
):
    output, _ = doctor("--page-url", public_page)

    line = lines_by_name(output)["configuration"]
    assert line.startswith("✓ configuration")
    assert "RESEARCH_PLANNER_MODEL=openai:gpt-5.4-mini, RESEARCH_MODEL=openai:gpt-5.4, SEARCH_PROVIDER=hosted" in line
