"""`manage.py doctor`: is this set-up able to answer a real question? One check per thing a question needs.

Each check is bounded in time, writes no user data, and ends as ok, warn (works, but something needs
doing soon), fail (questions will fail; `fix` says what to do in one sentence) or skip (not configured, or
an earlier check it depends on failed). The model checks spend a few tokens: they are real calls, since
only a real call shows that the key, the model and the hosted tools work together.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from pydantic import BaseModel, ValidationError

from datascraper.citations.fetcher import PageFetcher, PageUnreachable, any_address, is_public
from datascraper.errors import ResearchError, SearchFormatRefused, SearchNotConfigured
from datascraper.filings.config import FilingsConfig
from datascraper.filings.limiter import budget_sharing
from datascraper.market_data.errors import MarketDataError
from datascraper.model_ref import DEFAULT_PROVIDER, ModelRef, ProviderName, parse_model
from datascraper.models_config import (
    PROVIDER_REQUIREMENT,
    PROVIDER_SETTINGS,
    SEARCH_REQUIREMENT,
    ResearchConfig,
    SearchProviderName,
    get_research_config,
)
from datascraper.providers.availability import ConfigurationRefused, checked_configuration
from datascraper.providers.base import ModelListing
from datascraper.providers.lifecycle import judge_model, list_models_of
from datascraper.providers.structured import parse_structured
from datascraper.research_engine.data.market_data_client import get_market_data_client
from datascraper.schemas import UsageLedger
from datascraper.search.registry import search_provider
from datascraper.web_search import WebSearchStream

Status = Literal["ok", "warn", "fail", "skip"]

CHECK_TIMEOUT_S = 30.0
_STATUS_OF_LEVEL: dict[str, Status] = {"ok": "ok", "warning": "warn", "error": "fail"}
DEFAULT_PAGE_URL = "https://www.example.com/"
PROBE_SYMBOL = "AAPL"
SEARCH_PROBE = "SEC EDGAR company filings"
SETTINGS_CHECKS = ("Yahoo quote", "Yahoo statement", "SEC filings", "citation fetcher")
CONFIGURATION_FIX = "Change the setting the line names (.env or the environment; README, Configuration)."
YAHOO_FIX = "Yahoo may be rate limiting this address, or the network is down; try again later."
SEC_FIX = "The SEC may be throttling this address (10 requests a second from all processes); try again later."


@dataclass
class CheckResult:
    name: str
    status: Status
    detail: str
    fix: str | None = None
    latency_ms: int | None = None
    provider: str | None = None  # the model or search provider the check is about


@dataclass
class Doctor:
    """Runs the checks in order; later checks read what earlier ones found (the configuration, the model lists)."""

    page_url: str = DEFAULT_PAGE_URL
    timeout_s: float = CHECK_TIMEOUT_S
    results: list[CheckResult] = field(default_factory=list)
    _config: ResearchConfig | None = None
    _answering: set[ProviderName] = field(default_factory=set)  # key set and accepted
    _listings: dict[ProviderName, ModelListing] = field(default_factory=dict)
    _listing_ms: dict[ProviderName, int | None] = field(default_factory=dict)

    async def run(self) -> list[CheckResult]:
        await self._timed("configuration", self.check_configuration)
        if self._config is None:  # no provider, market data server or fetcher can be built from them
            for name in ("key", "structured output", "web search", "search provider", *SETTINGS_CHECKS):
                self.results.append(CheckResult(name, "skip", "needs valid settings (the configuration check)"))
        else:
            await self.run_provider_checks()
            await self._timed("Yahoo quote", self.check_quote)
            await self._timed("Yahoo statement", self.check_statement)
            await self._timed("SEC filings", self.check_sec)
            await self._timed("citation fetcher", self.check_page_fetch)
        await self._timed("database", self.check_database)
        await self._timed("Redis", self.check_redis)
        await self._timed("workers", self.check_workers)
        return self.results

    async def run_provider_checks(self) -> None:
        """Each model provider the settings name (its key, its model list), each configured model, one call of
        each kind a question makes, and the search provider."""
        for provider in dict.fromkeys(ref.provider for _, ref in self.config.model_settings()):
            await self._timed(key_check_name(provider), partial(self.check_provider, provider), provider=provider)
            self._listing_ms[provider] = self.results[-1].latency_ms  # the model checks come from this listing
        for setting, ref in self.config.model_settings():
            self.results.append(self.model_result(setting, ref))
        planner, research = (ref.provider for _, ref in self.config.model_settings()[:2])
        await self._timed("structured output", self.check_structured_output, provider=planner, needs_listing=True)
        await self._timed("web search", self.check_web_search, provider=research, needs_listing=True)
        await self._timed("search provider", self.check_search_provider, provider=self.config.search_provider)

    @property
    def config(self) -> ResearchConfig:
        assert self._config is not None, "the configuration check runs first"
        return self._config

    @property
    def failed(self) -> bool:
        return any(result.status == "fail" for result in self.results)

    async def _timed(
        self,
        name: str,
        check: Callable[[], Awaitable[CheckResult]],
        *,
        provider: str | None = None,
        needs_listing: bool = False,
    ) -> None:
        if needs_listing and provider not in self._answering:
            self.results.append(CheckResult(name, "skip", "needs a working key", provider=provider))
            return
        started = time.monotonic()
        try:
            async with asyncio.timeout(self.timeout_s):
                result = await check()
        except TimeoutError:
            result = CheckResult(
                name, "fail", f"no answer within {self.timeout_s:g} s", fix="See the next lines of the log."
            )
        result.name, result.provider = name, provider
        result.latency_ms = round((time.monotonic() - started) * 1000)
        self.results.append(result)

    # --- the configuration and the model providers ---------------------------------------------------

    async def check_configuration(self) -> CheckResult:
        """The settings as the app's start judges them; a problem that would stop every other command fails
        here, and the checks it leaves possible run (with no readable settings: those of no provider)."""
        try:
            self._config = checked_configuration()
        except ConfigurationRefused as exc:
            self._config = _readable_configuration()
            return CheckResult("configuration", "fail", str(exc), fix=CONFIGURATION_FIX)
        models = ", ".join(f"{setting}={ref}" for setting, ref in self.config.model_settings())
        return CheckResult("configuration", "ok", f"{models}, SEARCH_PROVIDER={self.config.search_provider}")

    async def check_provider(self, provider: ProviderName) -> CheckResult:
        """The provider's key (its address, for a compatible server) set and accepted: its model list read."""
        listed, listing = await list_models_of(self.config, provider, timeout_s=self.timeout_s)
        key, base_url = PROVIDER_SETTINGS[provider]
        if listed.error_code == "provider_not_configured":
            required = PROVIDER_REQUIREMENT[provider][1]
            fix = f"Put {required}=... in .env or the environment."
            return CheckResult("", "fail", f"{required} is not set", fix=fix)
        if listed.error_code == "provider_auth_failed":
            return CheckResult("", "fail", "the provider rejected the key", fix=f"Create a new key and set {key}.")
        if listed.level == "warning":  # it answers, and keeps no model list: the models go unchecked
            self._answering.add(provider)
            return CheckResult("", "warn", listed.message)
        if listing is None:
            return CheckResult("", "fail", listed.message, fix=f"Check {base_url} and the network.")
        self._answering.add(provider)
        self._listings[provider] = listing
        return CheckResult("", "ok", "accepted")

    def model_result(self, setting: str, ref: ModelRef) -> CheckResult:
        """One configured model against its provider's list: live, retiring (warn) or not served (fail)."""
        name = f"model {setting}"
        listing = self._listings.get(ref.provider)
        if listing is None:
            why = "the provider lists no models" if ref.provider in self._answering else "needs a working key"
            return CheckResult(name, "skip", why, provider=ref.provider)
        check = judge_model(setting, ref, listing, datetime.now(UTC).date())
        status = _STATUS_OF_LEVEL[check.level]
        detail = str(ref) + (
            f", shuts down {check.shutdown_date}" if check.shutdown_date else ", no shutdown announced"
        )
        fix = f"Set {setting} to a current model (docs/providers.md)." if status == "fail" else None
        latency = self._listing_ms.get(ref.provider)
        return CheckResult(name, status, detail if status == "ok" else check.message, fix, latency, ref.provider)

    async def check_structured_output(self) -> CheckResult:
        model = self.config.planner_model
        try:
            probe = await parse_structured(
                model,
                "Answer with the JSON the schema asks for.",
                "Is 2 + 2 equal to 4?",
                ArithmeticProbe,
                UsageLedger(),
                timeout_s=self.timeout_s,
            )
        except ResearchError as exc:
            fix = _fix_for(exc, "RESEARCH_PLANNER_MODEL", model)
            return CheckResult("", "fail", f"{_named(model)}: {exc.code}: {exc.message}", fix=fix)
        if not probe.answer:
            return CheckResult("", "warn", f"{_named(model)} answered in shape but wrongly (2 + 2 = 4 is true)")
        return CheckResult("", "ok", f"{_named(model)} answered in the strict schema")

    async def check_web_search(self) -> CheckResult:
        if self.config.search_provider != "hosted":
            return CheckResult("", "skip", f"SEARCH_PROVIDER={self.config.search_provider}: no hosted search is used")
        model = self.config.research_model
        search = WebSearchStream("What is the address of the U.S. SEC's website? Cite your source.", model=model)
        try:
            async for _ in search:
                pass
        except ResearchError as exc:
            return CheckResult(
                "", "fail", f"{_named(model)}: {exc.code}: {exc.message}", fix=_fix_for(exc, "RESEARCH_MODEL", model)
            )
        sources = search.result.sources
        if not sources:
            return CheckResult(
                "",
                "warn",
                f"{_named(model)} answered without a url_citation",
                fix="Answers will lack web citations: try another RESEARCH_MODEL.",
            )
        return CheckResult("", "ok", f"{_named(model)} searched and cited {len(sources)} page(s)")

    async def check_search_provider(self) -> CheckResult:
        """One bounded search through the search API SEARCH_PROVIDER names (the search registry's)."""
        name = self.config.search_provider
        if name == "hosted":
            return CheckResult("", "skip", "SEARCH_PROVIDER=hosted: the research model searches (the web search check)")
        try:
            search = search_provider(self.config)
            assert search is not None
            search.ensure_configured()
            found = await search.search(
                SEARCH_PROBE, limit=3, timeout_s=min(self.config.request_timeout_s, self.timeout_s)
            )
        except ResearchError as exc:
            return CheckResult("", "fail", f"{name}: {exc.code}: {exc.message}", fix=_search_fix(exc, name))
        if not found:
            return CheckResult(
                "", "warn", f"{name} answered with no result", fix="Check the search provider's own settings."
            )
        return CheckResult("", "ok", f"{name} found {len(found)} result(s) for {SEARCH_PROBE!r}")

    # --- data sources --------------------------------------------------------------------------------

    async def check_quote(self) -> CheckResult:
        outcome = await self._tool("get_quote", {"symbol": PROBE_SYMBOL}, fix=YAHOO_FIX)
        if isinstance(outcome, CheckResult):
            return outcome
        return CheckResult("", "ok", f"{PROBE_SYMBOL} {outcome['price']} {outcome.get('currency') or ''}".rstrip())

    async def check_statement(self) -> CheckResult:
        arguments = {"symbol": PROBE_SYMBOL, "statement": "income", "frequency": "quarterly"}
        outcome = await self._tool("get_financial_statement", arguments, fix=YAHOO_FIX)
        if isinstance(outcome, CheckResult):
            return outcome
        return CheckResult("", "ok", f"{PROBE_SYMBOL} quarterly income statement, {len(outcome['periods'])} periods")

    async def check_sec(self) -> CheckResult:
        # How this environment's processes share the SEC's budget (the market data server gets the same one).
        sharing = budget_sharing(FilingsConfig.from_env())
        outcome = await self._tool("get_filings", {"ticker": PROBE_SYMBOL, "limit": 1}, fix=SEC_FIX)
        if isinstance(outcome, CheckResult):
            if outcome.detail.startswith(f"get_filings({PROBE_SYMBOL}): not_configured"):
                return CheckResult("", "skip", "SEC_USER_AGENT not set: the filing tools answer not_configured")
            outcome.detail = f"{outcome.detail}; {sharing}"
            return outcome
        newest = outcome["filings"][0] if outcome["filings"] else None
        if newest is None:
            return CheckResult("", "warn", f"the SEC lists no filings of {PROBE_SYMBOL}; {sharing}", fix=SEC_FIX)
        return CheckResult(
            "", "ok", f"{PROBE_SYMBOL}'s latest filing: {newest['form']} filed {newest['filed']}; {sharing}"
        )

    async def _tool(self, tool: str, arguments: dict[str, Any], *, fix: str) -> dict[str, Any] | CheckResult:
        """The tool's structured result, or the failed check saying why (the tool's own `code: sentence`)."""
        try:
            result = await get_market_data_client().call_tool(tool, arguments, timeout_s=self.timeout_s)
        except MarketDataError as exc:
            return CheckResult(
                "", "fail", f"{exc.code}: {exc.message}", fix="Check the market data server (MARKET_DATA_MCP_URL)."
            )
        if result.is_error or not result.structured_content:
            text = " ".join(getattr(part, "text", "") for part in result.content)[:160]
            return CheckResult("", "fail", f"{tool}({PROBE_SYMBOL}): {text or 'no data'}", fix=fix)
        return result.structured_content

    async def check_page_fetch(self) -> CheckResult:
        fetcher = PageFetcher(
            timeout_s=min(self.config.citation_fetch_timeout_s, self.timeout_s),
            max_bytes=self.config.citation_page_max_bytes,
            is_allowed=any_address if self.config.citation_fetch_allow_private else is_public,
        )
        try:
            page = await fetcher.fetch(self.page_url)
        except PageUnreachable as exc:
            return CheckResult(
                "",
                "fail",
                f"{self.page_url}: {exc}",
                fix="Cited pages cannot be checked: allow outbound HTTPS, or set CITATION_VERIFY=0.",
            )
        finally:
            await fetcher.aclose()
        return CheckResult("", "ok", f"read {len(page.html):,} bytes of {page.url}")

    # --- the app's own services ----------------------------------------------------------------------

    async def check_database(self) -> CheckResult:
        pending = await sync_to_async(_unapplied_migrations, thread_sensitive=False)()
        vendor = connections[DEFAULT_DB_ALIAS].vendor
        if pending:
            return CheckResult(
                "", "fail", f"{vendor}: {len(pending)} migration(s) not applied", fix="Run: python manage.py migrate"
            )
        return CheckResult("", "ok", f"{vendor}, migrations applied")

    async def check_redis(self) -> CheckResult:
        if not settings.REDIS_URL:
            return CheckResult(
                "", "skip", "REDIS_URL not set (events and limits stay in this process and the database)"
            )
        from redis.exceptions import RedisError

        from chat.redis_client import redis_client

        try:
            await redis_client().ping()
        except RedisError as exc:
            return CheckResult("", "fail", f"{type(exc).__name__}: {exc}", fix="Start Redis, or check REDIS_URL.")
        return CheckResult("", "ok", "answered PING")

    async def check_workers(self) -> CheckResult:
        if settings.RUNS_BACKEND != "queue":
            return CheckResult("", "skip", "RUNS_BACKEND=inprocess: web processes answer the runs")
        from chat.services.admission import live_workers

        alive = await live_workers()
        if not alive:
            return CheckResult("", "fail", "no worker alive", fix="Start one: python manage.py runworker")
        return CheckResult("", "ok", f"{alive} worker(s) alive")


def _named(model: str) -> str:
    """A model with its provider beside it (`openai:gpt-5.4`), as a model setting may be written."""
    return str(parse_model(model))


def key_check_name(provider: ProviderName) -> str:
    """`key` for the default provider, as the check was named before there were others; `key anthropic`..."""
    return "key" if provider == DEFAULT_PROVIDER else f"key {provider}"


def _readable_configuration() -> ResearchConfig | None:
    """The settings when they can be read at all (a provider not available yet still leaves them readable)."""
    try:
        return get_research_config()
    except ValidationError:
        return None


class ArithmeticProbe(BaseModel):
    answer: bool


def _fix_for(exc: ResearchError, setting: str, model: str) -> str:
    provider = parse_model(model).provider
    fixes = {
        "model_unavailable": f"Set {setting} to a current model (docs/providers.md).",
        "provider_auth_failed": f"Create a new key and set {PROVIDER_SETTINGS[provider][0]}.",
        "provider_quota_exceeded": "Add credit to the key's account, or use another key.",
        "rate_limited": "The key is rate limited: wait, or raise its limits.",
    }
    return fixes.get(exc.code, "See the provider's status page, then try again.")


def _search_fix(exc: ResearchError, name: SearchProviderName) -> str:
    setting = SEARCH_REQUIREMENT[name][1] if name in SEARCH_REQUIREMENT else "SEARCH_PROVIDER"
    if isinstance(exc, SearchFormatRefused):
        return "Add json to search.formats in the instance's settings.yml, then restart it."
    if isinstance(exc, SearchNotConfigured):
        return f"Set {setting} (docs/providers.md#search-providers)."
    if exc.code == "provider_auth_failed":
        return f"The search API refused the key: check {setting}."
    return f"Check that {name} ({setting}) is running and reachable from this machine."


def _unapplied_migrations() -> list[object]:
    connection = connections[DEFAULT_DB_ALIAS]
    try:
        executor = MigrationExecutor(connection)
        return executor.migration_plan(executor.loader.graph.leaf_nodes())
    finally:
        connection.close()
