"""The SEC client at the wire, against the fake SEC: our User-Agent on every request, the shared limiter
keeping us under ten requests a second, the cache sparing repeat requests, and each failure named."""

from __future__ import annotations

import asyncio
import time

import pytest

from datascraper.cache import TTLCache
from datascraper.filings.client import SecClient
from datascraper.filings.companies import find_company
from datascraper.filings.config import FilingsConfig
from datascraper.filings.errors import FilingNotFound, FilingsRateLimited, FilingsTimeout, FilingsUpstreamError
from datascraper.filings.service import FilingsService
from tests.datascraper.filings.conftest import USER_AGENT, RecordedSleeps, most_in_any_second
from tests.fakes.sec_server import FakeSecServer

pytestmark = pytest.mark.timeout(30)

DOCUMENT = "/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"


async def test_every_request_carries_the_configured_user_agent(
    filings: FilingsService, fake_sec: FakeSecServer
) -> None:
    await filings.filing_section("AAPL", "risk_factors")
    await filings.reported_figures("AAPL", "revenue")

    assert {r.user_agent for r in fake_sec.requests} == {USER_AGENT}
    assert [r.host for r in fake_sec.requests] == ["www", "data", "www", "data"]


async def test_the_fake_refuses_a_user_agent_without_a_contact_as_the_sec_does(
    fake_sec: FakeSecServer, sleeps: RecordedSleeps
) -> None:
    # A configuration check catches this first (tests below); here the SEC's own answer is what is tested.
    config = FilingsConfig(user_agent="x ops@example.com", data_url=fake_sec.data_url, www_url=fake_sec.www_url)
    client = SecClient(config, sleep=sleeps)
    client._client().headers["User-Agent"] = "python-httpx2"

    with pytest.raises(FilingsRateLimited):
        await client.get(f"{fake_sec.www_url}/files/company_tickers.json")

    assert [r.status for r in fake_sec.requests] == [403, 403, 403]
    assert sleeps.seconds == [1.0, 2.0]  # backed off between attempts, doubling
    await client.aclose()


def test_a_user_agent_without_a_contact_address_counts_as_not_configured() -> None:
    assert FilingsConfig().problem is not None
    assert "contact e-mail" in (FilingsConfig(user_agent="Acme Research").problem or "")
    assert FilingsConfig(user_agent="Acme Research ops@acme.com").problem is None


def test_settings_come_from_the_environment_with_the_secs_hosts_by_default() -> None:
    default = FilingsConfig.from_env({})
    pointed = FilingsConfig.from_env(
        {
            "SEC_USER_AGENT": " Acme ops@acme.com ",
            "SEC_DATA_URL": "http://127.0.0.1:9/data/",
            "SEC_WWW_URL": "http://x/www",
        }
    )

    assert (default.user_agent, default.data_url, default.www_url) == (
        None,
        "https://data.sec.gov",
        "https://www.sec.gov",
    )
    assert (pointed.user_agent, pointed.data_url, pointed.www_url) == (
        "Acme ops@acme.com",
        "http://127.0.0.1:9/data",
        "http://x/www",
    )


async def test_a_429_is_retried_after_the_retry_after_the_sec_sends(
    sec_client: SecClient, fake_sec: FakeSecServer, sleeps: RecordedSleeps
) -> None:
    fake_sec.throttle(times=1, retry_after=3)

    company = await find_company(sec_client, "AAPL")

    assert company.cik == 320193
    assert sleeps.seconds == [3.0]
    assert [r.status for r in fake_sec.requests] == [429, 200]


async def test_a_404_is_not_found_at_once(sec_client: SecClient, fake_sec: FakeSecServer) -> None:
    with pytest.raises(FilingNotFound):
        await sec_client.data_json("/submissions/CIK0000000001.json", ttl_s=60)

    assert len(fake_sec.requests) == 1


async def test_a_slow_sec_is_a_named_timeout_after_bounded_retries(
    fake_sec: FakeSecServer, sleeps: RecordedSleeps
) -> None:
    fake_sec.delay_s = 0.5
    config = FilingsConfig(
        user_agent=USER_AGENT,
        data_url=fake_sec.data_url,
        www_url=fake_sec.www_url,
        request_timeout_s=0.1,
        max_retries=1,
    )
    client = SecClient(config, sleep=sleeps)

    with pytest.raises(FilingsTimeout):
        await client.get(f"{fake_sec.www_url}/files/company_tickers.json")

    assert client.requests_sent == 2
    await client.aclose()


async def test_an_unreachable_sec_is_an_upstream_error(sleeps: RecordedSleeps) -> None:
    config = FilingsConfig(
        user_agent=USER_AGENT, data_url="http://127.0.0.1:9", www_url="http://127.0.0.1:9", max_retries=1
    )
    client = SecClient(config, sleep=sleeps)

    with pytest.raises(FilingsUpstreamError):
        await client.get("http://127.0.0.1:9/files/company_tickers.json")
    await client.aclose()


async def test_repeat_questions_are_answered_from_the_cache(filings: FilingsService, fake_sec: FakeSecServer) -> None:
    await filings.reported_figures("NVDA", "revenue")
    await filings.filing_section("AAPL", "mdna")
    sent = len(fake_sec.requests)

    await filings.reported_figures("NVDA", "net_income", fiscal_year=2025)
    await filings.filing_section("AAPL", "risk_factors")

    assert len(fake_sec.requests) == sent == 4


async def test_concurrent_requests_stay_under_ten_a_second_at_the_sec(
    sec_config: FilingsConfig, fake_sec: FakeSecServer
) -> None:
    client = SecClient(sec_config, cache=TTLCache())
    started = time.monotonic()

    await asyncio.gather(*(client.get(f"{fake_sec.www_url}{DOCUMENT}") for _ in range(12)))

    # Ten at once, then two once the first leave the two-second window: however the network spreads the
    # first ten's arrival, no second at the SEC sees more than ten.
    assert time.monotonic() - started >= 1.9
    assert [r.status for r in fake_sec.requests] == [200] * 12
    assert most_in_any_second([r.at for r in fake_sec.requests]) <= 10
    await client.aclose()


async def test_after_a_block_the_cache_still_answers_and_requests_resume_after_the_cool_down(
    sec_config: FilingsConfig, fake_sec: FakeSecServer, sleeps: RecordedSleeps
) -> None:
    now = [1000.0]
    client = SecClient(sec_config, cache=TTLCache(), sleep=sleeps, clock=lambda: now[0])
    service = FilingsService(client)
    await service.filings("AAPL")  # the ticker map and Apple's submissions are now cached
    fake_sec.throttle(times=3)

    with pytest.raises(FilingsRateLimited):
        await service.filings("NVDA")
    cached = await service.filings("AAPL")
    now[0] += sec_config.rate_limit_cooldown_s + 1
    resumed = await service.filings("NVDA")

    assert cached.company == "Apple Inc." and resumed.company == "NVIDIA CORP"
    assert [r.status for r in fake_sec.requests] == [200, 200, 429, 429, 429, 200]
    await client.aclose()
