"""SEARCH_PROVIDER=tavily|brave|exa: the keyed search APIs, each against a strict fake at its wire
(`tests/fakes/search_apis.py`): what is sent, what is read back, and each refusal named; and a research run
through each, its finding written from the pages the API found and its citations checked against them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date

import pytest
from pydantic import SecretStr

from datascraper.errors import (
    SearchAuthFailed,
    SearchNotConfigured,
    SearchQuotaExceeded,
    SearchRateLimited,
    SearchTimeout,
    SearchUnavailable,
)
from datascraper.models_config import ResearchConfig
from datascraper.schemas import Source
from datascraper.search import brave, tavily
from datascraper.search.base import SearchProvider
from datascraper.search.brave import BraveSearch
from datascraper.search.exa import ExaSearch
from datascraper.search.registry import search_provider
from datascraper.search.searxng import SearxngSearch
from datascraper.search.tavily import TavilySearch
from tests.datascraper.research_support import (
    of_type,
    requests_of,
    run,
    run_until_error,
    script_analysis,
    script_synthesis,
    steps,
    sub,
    summary_of,
)
from tests.fakes.openai_server import RecordedRequest, TextReply
from tests.fakes.page_server import FakePageServer, article
from tests.fakes.search_api_server import PLACEHOLDER_KEY, FakeSearchAPI, SearchHit
from tests.fakes.search_apis import FakeBrave, FakeExa, FakeTavily

QUESTION = "What revenue did Apple report for fiscal 2024?"
JUNE_12 = date(2025, 6, 12)


@dataclass(frozen=True)
class Api:
    name: str  # SEARCH_PROVIDER
    fake: type[FakeSearchAPI]
    provider: type[TavilySearch | BraveSearch | ExaSearch]
    key_setting: str
    url_setting: str
    dated: bool  # whether a general web search's results carry their day (Tavily's only for news)

    def search(self, fake: FakeSearchAPI, *, key: str = PLACEHOLDER_KEY, max_retries: int = 0) -> SearchProvider:
        return self.provider(SecretStr(key), fake.url, max_retries=max_retries)


APIS = [
    Api("tavily", FakeTavily, TavilySearch, "TAVILY_API_KEY", "TAVILY_BASE_URL", dated=False),
    Api("brave", FakeBrave, BraveSearch, "BRAVE_API_KEY", "BRAVE_BASE_URL", dated=True),
    Api("exa", FakeExa, ExaSearch, "EXA_API_KEY", "EXA_BASE_URL", dated=True),
]


@pytest.fixture(params=APIS, ids=[api.name for api in APIS])
def api(request: pytest.FixtureRequest) -> Api:
    return request.param


@pytest.fixture
def fake(api: Api) -> Iterator[FakeSearchAPI]:
    with api.fake() as server:
        yield server


def hits(count: int, published: date | None = JUNE_12) -> list[SearchHit]:
    return [SearchHit(f"https://example.com/{i}", f"Result {i}", f"Excerpt {i}", published) for i in range(count)]


# --- What each API is sent -------------------------------------------------------------------------------


async def test_tavily_is_sent_a_bearer_key_and_a_basic_search_without_answer_or_page_content():
    with FakeTavily() as fake:
        await TavilySearch(SecretStr(PLACEHOLDER_KEY), fake.url, max_retries=0).search(QUESTION, limit=5, timeout_s=5)

    [request] = fake.requests
    assert (request.method, request.path) == ("POST", "/search")
    assert request.headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"
    assert request.body == {
        "query": QUESTION,
        "max_results": 5,
        "search_depth": "basic",
        "include_answer": False,
        "include_raw_content": False,
    }


async def test_brave_is_sent_its_subscription_token_and_the_query_and_count():
    with FakeBrave() as fake:
        await BraveSearch(SecretStr(PLACEHOLDER_KEY), fake.url, max_retries=0).search(QUESTION, limit=5, timeout_s=5)

    [request] = fake.requests
    assert (request.method, request.path) == ("GET", "/res/v1/web/search")
    assert request.headers["x-subscription-token"] == PLACEHOLDER_KEY
    assert request.params == {"q": [QUESTION], "count": ["5"]}
    assert request.body is None


async def test_exa_is_sent_its_api_key_and_asks_for_no_page_contents():
    with FakeExa() as fake:
        await ExaSearch(SecretStr(PLACEHOLDER_KEY), fake.url, max_retries=0).search(QUESTION, limit=5, timeout_s=5)

    [request] = fake.requests
    assert (request.method, request.path) == ("POST", "/search")
    assert request.headers["x-api-key"] == PLACEHOLDER_KEY
    assert request.body == {"query": QUESTION, "numResults": 5, "type": "auto"}


@pytest.mark.parametrize("api", [a for a in APIS if a.name != "exa"], ids=["tavily", "brave"])
async def test_a_question_longer_than_the_api_takes_is_cut_between_words_rather_than_refused(api: Api):
    question = " ".join(["revenue"] * 1_000)  # 7,999 characters; the chat accepts 8,000
    with api.fake() as fake:
        fake.hits = hits(1)
        found = await api.search(fake).search(question, limit=5, timeout_s=5)

    assert len(found) == 1
    [request] = fake.requests
    sent = request.body["query"] if request.body else request.params["q"][0]
    assert len(sent) <= 400 and len(sent.split()) <= 50 and sent.endswith("revenue")


# --- What is read back -----------------------------------------------------------------------------------


async def test_results_keep_their_address_title_excerpt_and_day_in_the_apis_order(api: Api, fake: FakeSearchAPI):
    fake.hits = hits(3)

    found = await api.search(fake).search(QUESTION, limit=2, timeout_s=5)

    assert [(r.url, r.title) for r in found] == [
        ("https://example.com/0", "Result 0"),
        ("https://example.com/1", "Result 1"),
    ]
    assert [r.published for r in found] == ([JUNE_12] * 2 if api.dated else [None, None])
    if api.name != "exa":  # Exa sends an excerpt only when contents are asked for, and we ask for none
        assert [r.snippet for r in found] == ["Excerpt 0", "Excerpt 1"]


async def test_nothing_found_is_an_empty_list(api: Api, fake: FakeSearchAPI):
    assert await api.search(fake).search(QUESTION, limit=5, timeout_s=5) == []


def test_tavilys_published_date_is_read_as_an_http_date_or_iso_8601():
    results = tavily._results(
        {
            "results": [
                {
                    "url": "https://a.example/1",
                    "title": "A",
                    "content": "",
                    "published_date": "Thu, 12 Jun 2025 09:30:00 GMT",
                },
                {"url": "https://a.example/2", "title": "B", "content": "", "published_date": "2025-06-12T09:30:00Z"},
                {"url": "https://a.example/3", "title": "C", "content": "", "published_date": "yesterday"},
            ]
        }
    )
    assert [r.published for r in results] == [JUNE_12, JUNE_12, None]


async def test_brave_drops_its_highlight_marks_and_reads_a_calendar_age_when_there_is_no_page_age():
    with FakeBrave() as fake:
        fake.hits = [
            SearchHit("https://example.com/a", "<strong>Apple</strong> results", "<strong>Revenue</strong> rose")
        ]
        [found] = await BraveSearch(SecretStr(PLACEHOLDER_KEY), fake.url, max_retries=0).search(
            QUESTION, limit=5, timeout_s=5
        )

    assert (found.title, found.snippet) == ("Apple results", "Revenue rose")
    [aged] = brave._results(
        {"type": "search", "web": {"results": [{"url": "https://b.example", "age": "June 12, 2025"}]}}
    )
    [relative] = brave._results(
        {"type": "search", "web": {"results": [{"url": "https://c.example", "age": "2 days ago"}]}}
    )
    assert (aged.published, relative.published) == (JUNE_12, None)


# --- Refusals, each named ---------------------------------------------------------------------------------


async def test_a_wrong_key_is_named_with_the_setting_to_change_and_not_retried(api: Api, fake: FakeSearchAPI):
    wrong = "placeholder-key-wrong"

    with pytest.raises(SearchAuthFailed) as raised:
        await api.search(fake, key=wrong, max_retries=2).search(QUESTION, limit=5, timeout_s=5)

    assert raised.value.code == "provider_auth_failed"
    assert api.key_setting in raised.value.message
    assert wrong not in raised.value.message and wrong not in repr(raised.value.__cause__)
    assert len(fake.requests) == 1


@pytest.mark.parametrize("api", [a for a in APIS if a.name != "brave"], ids=["tavily", "exa"])
async def test_an_account_out_of_credit_is_named_and_not_retried(api: Api):
    with api.fake() as fake:
        assert isinstance(fake, FakeTavily | FakeExa)  # the fakes that answer an exhausted account
        fake.quota_exhausted = True
        with pytest.raises(SearchQuotaExceeded) as raised:
            await api.search(fake, max_retries=2).search(QUESTION, limit=5, timeout_s=5)

    assert raised.value.code == "provider_quota_exceeded" and api.key_setting in raised.value.message
    assert len(fake.requests) == 1


def test_a_missing_key_is_named_before_anything_is_sent(api: Api, fake: FakeSearchAPI):
    for key in (None, SecretStr("  ")):
        with pytest.raises(SearchNotConfigured) as raised:
            api.provider(key, fake.url, max_retries=0).ensure_configured()
        assert raised.value.code == "provider_not_configured" and api.key_setting in raised.value.message
    assert fake.requests == []


def test_a_base_url_that_is_not_http_is_named(api: Api):
    with pytest.raises(SearchNotConfigured) as raised:
        api.provider(SecretStr(PLACEHOLDER_KEY), "ftp://search.example", max_retries=0).ensure_configured()
    assert api.url_setting in raised.value.message


async def test_a_rate_limited_search_is_retried_then_named(api: Api, fake: FakeSearchAPI):
    fake.rate_limited = 5

    with pytest.raises(SearchRateLimited) as raised:
        await api.search(fake, max_retries=1).search(QUESTION, limit=5, timeout_s=10)

    assert raised.value.code == "rate_limited"
    assert len(fake.requests) == 2


async def test_a_search_rate_limited_once_answers_on_its_retry(api: Api, fake: FakeSearchAPI):
    fake.rate_limited = 1
    fake.hits = hits(1)

    found = await api.search(fake, max_retries=2).search(QUESTION, limit=5, timeout_s=10)

    assert [r.url for r in found] == ["https://example.com/0"]
    assert len(fake.requests) == 2


async def test_a_failing_api_is_retried_then_named(api: Api, fake: FakeSearchAPI):
    fake.failing = 5

    with pytest.raises(SearchUnavailable) as raised:
        await api.search(fake, max_retries=1).search(QUESTION, limit=5, timeout_s=10)

    assert raised.value.code == "upstream_error" and "HTTP 503" in raised.value.message
    assert len(fake.requests) == 2


async def test_an_api_that_does_not_answer_in_time_is_named(api: Api, fake: FakeSearchAPI):
    fake.stalled = 1

    with pytest.raises(SearchTimeout) as raised:
        await api.search(fake).search(QUESTION, limit=5, timeout_s=0.3)

    assert raised.value.code == "upstream_timeout"


async def test_an_unreachable_api_names_its_base_url_setting(api: Api, fake: FakeSearchAPI):
    url = fake.url
    fake.stop()

    with pytest.raises(SearchUnavailable) as raised:
        await api.provider(SecretStr(PLACEHOLDER_KEY), url, max_retries=0).search(QUESTION, limit=5, timeout_s=5)

    assert api.url_setting in raised.value.message


def test_each_search_provider_name_is_its_api_and_defaults_to_its_public_host():
    assert search_provider(ResearchConfig()) is None
    assert isinstance(search_provider(ResearchConfig(search_provider="searxng")), SearxngSearch)
    for api in APIS:
        provider = search_provider(ResearchConfig(search_provider=api.name, **{f"{api.name}_api_key": "k"}))
        assert isinstance(provider, api.provider) and provider.name == api.name
        provider.ensure_configured()  # the public host is a valid address


# --- A research run through each API ----------------------------------------------------------------------


def writes_from_passages(request: RecordedRequest) -> bool:
    return "Passages:" in request.input_text


def publish_apple_pages(fake: FakeSearchAPI, pages: FakePageServer) -> str:
    results = pages.add(
        "/apple-results",
        article("Apple results", "Apple reported revenue of $391.04 billion for fiscal 2024, up 2% on a year earlier."),
    )
    outlook = pages.add("/apple-outlook", article("Apple outlook", "Analysts expect services to keep growing."))
    fake.hits = [
        SearchHit(results, "Apple results - Example News", "Apple reported revenue...", JUNE_12),
        SearchHit(pages.url("/gone"), "A page that is gone"),
        SearchHit(outlook, "Apple outlook - Example News"),
    ]
    return results


async def test_a_sub_question_is_written_from_the_pages_the_api_found_and_checked_against_them(
    api: Api, fake: FakeSearchAPI, fake_openai, verifying, page_server
):
    verifying(
        SEARCH_PROVIDER=api.name,
        **{api.key_setting: PLACEHOLDER_KEY, api.url_setting: fake.url},
        RESEARCH_MAX_ITERATIONS="1",
    )
    results = publish_apple_pages(fake, page_server)
    script_analysis(fake_openai, sub(QUESTION))
    fake_openai.script(
        TextReply(["Apple reported revenue of $391.04 billion for fiscal 2024 [1]."]), when=writes_from_passages
    )
    script_synthesis(fake_openai, "Apple's fiscal 2024 revenue was $391.04 billion [1].")

    events = await run(QUESTION, mode="research")

    assert steps(events) == [("q1", "started", "web_search"), ("q1", "done", "web_search")]
    assert len(fake.requests) == 1
    assert not any(request.has_web_search for request in fake_openai.requests)
    [writing] = requests_of(fake_openai, writes_from_passages)
    assert "[1] Apple results - Example News" in writing.input_text and "$391.04 billion" in writing.input_text
    assert "[2] Apple outlook - Example News" in writing.input_text
    [sources] = of_type(events, "sources")
    assert sources.sources == [
        Source(
            n=1,
            title="Apple results - Example News",
            url=results,
            kind="web",
            published=JUNE_12 if api.dated else None,
            domain_type="other",
        )
    ]
    [verification] = of_type(events, "verification")
    assert [(check.n, check.status) for check in verification.citations] == [(1, "supported")]
    assert page_server.hits == {"/apple-results": 1, "/apple-outlook": 1, "/gone": 1}
    summary = summary_of(events)
    assert summary.answer.startswith("Apple's fiscal 2024 revenue was $391.04 billion [1].")
    assert summary.usage.search_calls == {api.name: 1}
    assert all(usage.web_search_calls == 0 for usage in summary.usage.by_model.values())


async def test_a_rejected_search_key_ends_the_run_naming_the_setting(
    api: Api, fake: FakeSearchAPI, fake_openai, verifying
):
    verifying(
        SEARCH_PROVIDER=api.name,
        **{api.key_setting: "placeholder-key-wrong", api.url_setting: fake.url},
        RESEARCH_MAX_ITERATIONS="1",
    )
    script_analysis(fake_openai, sub(QUESTION))

    _, error = await run_until_error(QUESTION, mode="research")

    assert isinstance(error, SearchAuthFailed) and api.key_setting in error.message
    assert error.summary is not None and error.summary.usage.search_calls == {}  # a refused search is not billed
    assert len(fake.requests) == 1
    assert requests_of(fake_openai, writes_from_passages) == []
