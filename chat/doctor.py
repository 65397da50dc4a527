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
from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from pydantic import BaseModel

from datascraper.citations.fetcher import PageFetcher, PageUnreachable, any_address, is_public
from datascraper.errors import ResearchError, SearchFormatRefused, SearchNotConfigured
from datascraper.filings.config import FilingsConfig
from datascraper.filings.limiter import budget_sharing
from datascraper.market_data.errors import MarketDataError
from datascraper.model_ref import parse_model
from datascraper.models_config import ResearchConfig, get_research_config
from datascraper.providers.lifecycle import ModelLifecycleReport, check_models
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
YAHOO_FIX = "Yahoo may be rate limiting this address, or the network is down; try again later."
SEC_FIX = "The SEC may be throttling this address (10 requests a second from all processes); try again later."


@dataclass
class CheckResult:
    name: str
    status: Status
    detail: str
    fix: str | None = None
    latency_ms: int | None = None


@dataclass
class Doctor:
    """Runs the checks in order; later checks read what earlier ones found (the key, the model list)."""

    config: ResearchConfig = field(default_factory=get_research_config)
    page_url: str = DEFAULT_PAGE_URL
    timeout_s: float = CHECK_TIMEOUT_S
    results: list[CheckResult] = field(default_factory=list)
    _models: ModelLifecycleReport | None = None

    async def run(self) -> list[CheckResult]:
        await self._timed("key", self.check_key)
        listing_ms = self.results[-1].latency_ms  # the models come from the key check's one listing
        for result in self.model_results():
            result.latency_ms = None if result.status == "skip" else listing_ms
            self.results.append(result)
        await self._timed("structured output", self.check_structured_output, needs_key=True)
        await self._timed("web search", self.check_web_search, needs_key=True)
        await self._timed("search provider", self.check_search_provider)
        await self._timed("Yahoo quote", self.check_quote)
        await self._timed("Yahoo statement", self.check_statement)
        await self._timed("SEC filings", self.check_sec)
        await self._timed("citation fetcher", self.check_page_fetch)
        await self._timed("database", self.check_database)
        await self._timed("Redis", self.check_redis)
        await self._timed("workers", self.check_workers)
        return self.results

    @property
    def failed(self) -> bool:
        return any(result.status == "fail" for result in self.results)

    async def _timed(self, name: str, check: Callable[[], Awaitable[CheckResult]], *, needs_key: bool = False) -> None:
        if needs_key and not self._key_works:
            self.results.append(CheckResult(name, "skip", "needs a working key"))
            return
        started = time.monotonic()
        try:
            async with asyncio.timeout(self.timeout_s):
                result = await check()
        except TimeoutError:
            result = CheckResult(
                name, "fail", f"no answer within {self.timeout_s:g} s", fix="See the next lines of the log."
            )
        result.name = name
        result.latency_ms = round((time.monotonic() - started) * 1000)
        self.results.append(result)

    @property
    def _key_works(self) -> bool:
        return self._models is not None and self._models.error_code is None

    # --- the provider ---------------------------------------------------------------------------------

    async def check_key(self) -> CheckResult:
        if not self.config.is_configured:
            return CheckResult(
                "key", "fail", "OPENAI_API_KEY is not set", fix="Put OPENAI_API_KEY=sk-... in .env or the environment."
            )
        self._models = await check_models(self.config, timeout_s=self.timeout_s)
        if self._models.error_code == "provider_auth_failed":
            return CheckResult(
                "key", "fail", "the provider rejected the key", fix="Create a new key and set OPENAI_API_KEY."
            )
        if self._models.error_code is not None:
            return CheckResult("key", "fail", self._models.error or "", fix="Check OPENAI_BASE_URL and the network.")
        return CheckResult("key", "ok", "accepted")

    def model_results(self) -> list[CheckResult]:
        if not self._key_works:
            return [
                CheckResult(f"model {setting}", "skip", "needs a working key")
                for setting in ("RESEARCH_PLANNER_MODEL", "RESEARCH_MODEL")
            ]
        assert self._models is not None
        results = []
        for check in self._models.checks:
            status = _STATUS_OF_LEVEL[check.level]
            detail = _named(check.model) + (
                f", shuts down {check.shutdown_date}" if check.shutdown_date else ", no shutdown announced"
            )
            fix = f"Set {check.setting} to a current model (docs/providers.md)." if status == "fail" else None
            results.append(
                CheckResult(f"model {check.setting}", status, detail if status == "ok" else check.message, fix)
            )
        return results

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
            return CheckResult(
                "", "fail", f"{_named(model)}: {exc.code}: {exc.message}", fix=_fix_for(exc, "RESEARCH_PLANNER_MODEL")
            )
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
                "", "fail", f"{_named(model)}: {exc.code}: {exc.message}", fix=_fix_for(exc, "RESEARCH_MODEL")
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
        if self.config.search_provider == "hosted":
            return CheckResult("", "skip", "SEARCH_PROVIDER=hosted: the research model searches (the web search check)")
        try:
            search = search_provider(self.config)
            assert search is not None
            search.ensure_configured()
            found = await search.search(
                SEARCH_PROBE, limit=3, timeout_s=min(self.config.request_timeout_s, self.timeout_s)
            )
        except ResearchError as exc:
            return CheckResult(
                "", "fail", f"{self.config.search_provider}: {exc.code}: {exc.message}", fix=_search_fix(exc)
            )
        if not found:
            return CheckResult(
                "", "warn", f"{search.name} answered with no result", fix="Enable a web search engine on the instance."
            )
        return CheckResult("", "ok", f"{search.name} found {len(found)} result(s) for {SEARCH_PROBE!r}")

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


class ArithmeticProbe(BaseModel):
    answer: bool


def _fix_for(exc: ResearchError, setting: str) -> str:
    fixes = {
        "model_unavailable": f"Set {setting} to a current model (docs/providers.md).",
        "provider_auth_failed": "Create a new key and set OPENAI_API_KEY.",
        "provider_quota_exceeded": "Add credit to the key's account, or use another key.",
        "rate_limited": "The key is rate limited: wait, or raise its limits.",
    }
    return fixes.get(exc.code, "See the provider's status page, then try again.")


def _search_fix(exc: ResearchError) -> str:
    if isinstance(exc, SearchFormatRefused):
        return "Add json to search.formats in the instance's settings.yml, then restart it."
    if isinstance(exc, SearchNotConfigured):
        return "Set SEARXNG_URL to the instance's root (http://localhost:8888, say)."
    return "Check that the instance at SEARXNG_URL is running and reachable from this machine."


def _unapplied_migrations() -> list[object]:
    connection = connections[DEFAULT_DB_ALIAS]
    try:
        executor = MigrationExecutor(connection)
        return executor.migration_plan(executor.loader.graph.leaf_nodes())
    finally:
        connection.close()
