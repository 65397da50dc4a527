"""The chat page at `/`, driven in headless Chromium against the running app.

Runs are answered either by the real router talking to the fake OpenAI server, or by a scripted router
(a list of research events and gates) where a test needs to hold a run at a known point.
Skipped where Chromium or the playwright package is missing.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chat import views
from chat.models import ResearchRun
from chat.services import runs
from datascraper.schemas import (
    DeltaEvent,
    PlanEvent,
    PlannedSubQuestion,
    ResearchEvent,
    ResearchQuery,
    RoundEvent,
    RunSummary,
    Source,
    SourcesEvent,
    StatusEvent,
    StepEvent,
)
from tests.fakes.openai_server import Sentence, TextReply, has_web_search

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"),
]

ANSWER = "#transcript article.assistant"


# --- fixtures -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[sync_api.Browser]:
    # Playwright's sync API keeps an event loop running in this thread while it is open; Django would then
    # refuse these tests' synchronous ORM calls and the database flush between tests.
    with pytest.MonkeyPatch.context() as env, sync_api.sync_playwright() as playwright:
        env.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page_errors() -> list[str]:
    """Uncaught exceptions and console errors of the page; a test removes those it provoked on purpose."""
    return []


@pytest.fixture
def page(browser, page_server_url, page_errors) -> Iterator[sync_api.Page]:
    """A fresh browser profile (so a new anonymous session) on the chat page; page errors fail the test."""
    context = browser.new_context(base_url=page_server_url)
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    page.on("console", lambda message: page_errors.append(message.text) if message.type == "error" else None)
    page.goto("/")
    yield page
    context.close()
    assert page_errors == [], f"the page logged errors: {page_errors}"


class Gate:
    """Holds a scripted run at a point until the test opens it (or the run is cancelled)."""

    def __init__(self) -> None:
        self._open = threading.Event()

    def open(self) -> None:
        self._open.set()

    async def wait(self) -> None:
        while not self._open.is_set():
            await asyncio.sleep(0.02)


Step = ResearchEvent | Gate


@pytest.fixture
def scripted_router(monkeypatch) -> Iterator[Callable[..., None]]:
    """`scripted_router(event, gate, event, ...)`: runs started by the app replay these steps."""
    gates: list[Gate] = []
    execute_run = runs.execute_run

    def use(*steps: Step) -> None:
        gates.extend(step for step in steps if isinstance(step, Gate))

        async def research(query: ResearchQuery, resume_from: dict | None = None) -> AsyncIterator[ResearchEvent]:
            for step in steps:
                if isinstance(step, Gate):
                    await step.wait()
                else:
                    yield step

        monkeypatch.setattr(runs, "execute_run", lambda run_id: execute_run(run_id, research=research))

    yield use
    for gate in gates:
        gate.open()


@pytest.fixture
def events_requests(page) -> list[sync_api.Request]:
    """Every request the page makes for a run's event stream, in order."""
    seen: list[sync_api.Request] = []
    page.on("request", lambda request: seen.append(request) if request.url.split("?")[0].endswith("/events") else None)
    return seen


@pytest.fixture
def cut_first_stream(monkeypatch) -> None:
    """The first event stream of each run breaks off after its first answer delta, as a dropped network
    connection would; the browser then reconnects by itself. Later connections are left alone."""
    stream_run_events = views.stream_run_events
    cut_channels: set[str] = set()

    async def cut_after_first_delta(channel: str, last_id: int, **options: Any) -> AsyncIterator[str]:
        frames = stream_run_events(channel, last_id, **options)
        try:
            async for frame in frames:
                yield frame
                if frame.startswith("event: delta"):
                    return
        finally:
            await frames.aclose()

    def stream(channel: str, last_id: int, **options: Any) -> AsyncIterator[str]:
        if channel in cut_channels:
            return stream_run_events(channel, last_id, **options)
        cut_channels.add(channel)
        return cut_after_first_delta(channel, last_id, **options)

    monkeypatch.setattr(views, "stream_run_events", stream)


def ask(page: sync_api.Page, question: str, mode: str = "auto") -> sync_api.Locator:
    page.fill("#question", question)
    page.select_option("#mode", mode)
    page.click("#ask")
    return page.locator(ANSWER).last


def wait_until_finished(answer: sync_api.Locator) -> None:
    answer.page.wait_for_function(
        "(el) => el.dataset.state !== 'running'", arg=answer.element_handle()
    )


SOURCE_1 = Source(n=1, title="Apple 10-K", url="https://investor.apple.com/10k", kind="web")
SOURCE_2 = Source(n=2, title="AAPL quote", url="https://finance.yahoo.com/quote/AAPL", kind="market_data")
PLAN = PlanEvent(
    needs_decomposition=True,
    sub_questions=[
        PlannedSubQuestion(id="q1", question="What was Apple's FY2024 revenue?", type="numerical", route="market_data"),
        PlannedSubQuestion(id="q2", question="Why did services grow?", type="qualitative", route="web_search"),
    ],
)
SUMMARY = RunSummary(mode="research", answer="", sources=[SOURCE_1])


# --- asking and streaming -----------------------------------------------------------------------------


def test_answer_streams_in_with_rendered_markdown_citations_and_sources(page, fake_openai):
    fake_openai.script(
        TextReply(
            [
                Sentence("**Apple** grew revenue 6%.", cites=[("https://www.reuters.com/apple-q4", "Apple Q4 - Reuters")]),
                Sentence("Services reached a record.", cites=[("https://www.example.com/services", "Services - Example")]),
            ],
            chunk_chars=3,
            delta_delay=0.05,
        ),
        when=has_web_search,
    )

    answer = ask(page, "How did Apple do last quarter?")

    page.wait_for_function(
        """(el) => el.dataset.state === 'running' && el.querySelector('.answer').textContent.length > 0""",
        arg=answer.element_handle(),
    )
    wait_until_finished(answer)
    assert answer.get_attribute("data-state") == "done"
    assert answer.locator(".answer").inner_text() == "Apple grew revenue 6%. [1] Services reached a record. [2]"
    assert answer.locator(".answer strong").inner_text() == "Apple"
    assert answer.locator(".phase-label").inner_text(), "the phase the run went through is shown"
    citation = answer.locator(".answer a.citation").first
    assert citation.inner_text() == "[1]"
    assert citation.get_attribute("href") == "https://www.reuters.com/apple-q4"
    assert citation.get_attribute("target") == "_blank"
    assert "noopener" in citation.get_attribute("rel")
    sources = answer.locator(".sources li a")
    assert sources.all_inner_texts() == ["Apple Q4 - Reuters", "Services - Example"]
    assert page.locator(".turn.user .bubble").inner_text() == "How did Apple do last quarter?"
    assert page.locator("#conversations button").all_inner_texts() == ["How did Apple do last quarter?"]


def test_phases_and_sub_question_progress_are_shown_live(page, scripted_router):
    researching = Gate()
    scripted_router(
        StatusEvent(phase="analyzing", label="Understanding the question"),
        PLAN,
        StatusEvent(phase="researching", label="Researching", detail="2 sub-questions"),
        StepEvent(sub_question_id="q1", state="started", route="market_data"),
        StepEvent(sub_question_id="q1", state="done", route="market_data", elapsed_ms=80),
        StepEvent(sub_question_id="q2", state="started", route="web_search"),
        researching,
        StepEvent(sub_question_id="q2", state="fallback", route="web_search", elapsed_ms=900),
        RoundEvent(n=1, complete=True),
        StatusEvent(phase="synthesizing", label="Writing the answer"),
        DeltaEvent(text="Revenue was $391B [1]."),
        SourcesEvent(sources=[SOURCE_1]),
        SUMMARY,
    )

    answer = ask(page, "How did Apple do?", mode="research")

    q2 = answer.locator('.steps li[data-sub-question-id="q2"]')
    sync_api.expect(q2).to_have_attribute("data-state", "started")
    assert answer.locator(".phases li.current").inner_text() == "researching"
    assert answer.locator(".phases li.passed").all_inner_texts() == ["analyzing"]
    assert answer.locator(".phase-label").inner_text() == "Researching — 2 sub-questions"
    assert answer.locator(".steps li .step-question").all_inner_texts() == [
        "What was Apple's FY2024 revenue?",
        "Why did services grow?",
    ]
    assert answer.locator('.steps li[data-sub-question-id="q1"]').get_attribute("data-state") == "done"
    assert answer.get_attribute("data-state") == "running"
    assert page.locator("#cancel").is_visible() and page.locator("#ask").is_disabled()

    researching.open()
    wait_until_finished(answer)
    assert q2.get_attribute("data-state") == "fallback"
    assert answer.locator(".phases li.current").inner_text() == "synthesizing"
    assert answer.locator(".rounds li").all_inner_texts() == ["Round 1: complete"]
    assert answer.locator(".answer").inner_text() == "Revenue was $391B [1]."
    assert page.locator("#cancel").is_hidden() and page.locator("#ask").is_enabled()


# --- reconnecting -------------------------------------------------------------------------------------


def test_dropped_stream_resumes_by_itself_without_duplicating_text(page, scripted_router, cut_first_stream, events_requests):
    scripted_router(
        StatusEvent(phase="synthesizing", label="Writing the answer"),
        DeltaEvent(text="Part one of the answer. "),
        DeltaEvent(text="Part two, after the drop [1]."),
        SourcesEvent(sources=[SOURCE_1]),
        SUMMARY,
    )

    answer = ask(page, "How did Apple do?")

    wait_until_finished(answer)
    assert answer.get_attribute("data-state") == "done"
    assert answer.locator(".answer").inner_text() == "Part one of the answer. Part two, after the drop [1]."
    first, resumed = events_requests
    assert "last-event-id" not in first.all_headers()
    assert re.fullmatch(r"run-[0-9a-f-]+:2", resumed.all_headers()["last-event-id"]), "resumes after the first delta"


def test_replayed_events_after_a_reconnect_are_not_shown_twice(page, scripted_router, cut_first_stream, events_requests):
    """A resume that restarts from the beginning (an id the server forgot, a proxy dropping the header)
    replays events the page has already shown; it must skip them."""
    scripted_router(
        StatusEvent(phase="synthesizing", label="Writing the answer"),
        DeltaEvent(text="Part one of the answer. "),
        DeltaEvent(text="Part two, after the drop [1]."),
        SourcesEvent(sources=[SOURCE_1]),
        SUMMARY,
    )

    def forget_last_event_id(route: sync_api.Route) -> None:
        headers = {k: v for k, v in route.request.headers.items() if k.lower() != "last-event-id"}
        route.continue_(headers=headers)

    page.route("**/api/runs/*/events*", forget_last_event_id)
    answer = ask(page, "How did Apple do?")

    wait_until_finished(answer)
    assert len(events_requests) == 2, "the page reconnected once"
    assert answer.locator(".answer").inner_text() == "Part one of the answer. Part two, after the drop [1]."


def test_server_error_on_reconnect_is_retried_from_the_last_event_shown(
    page, page_errors, scripted_router, cut_first_stream
):
    """An HTTP error makes EventSource give up for good; the page then reconnects on its own."""
    scripted_router(
        StatusEvent(phase="synthesizing", label="Writing the answer"),
        DeltaEvent(text="Part one of the answer. "),
        DeltaEvent(text="Part two, after the drop [1]."),
        SourcesEvent(sources=[SOURCE_1]),
        SUMMARY,
    )
    attempts: list[str] = []

    def fail_the_first_reconnect(route: sync_api.Route) -> None:
        attempts.append(route.request.url)
        if len(attempts) == 2:
            route.fulfill(status=502, body="")
        else:
            route.continue_()

    page.route("**/api/runs/*/events*", fail_the_first_reconnect)
    answer = ask(page, "How did Apple do?")

    wait_until_finished(answer)
    assert answer.get_attribute("data-state") == "done"
    assert answer.locator(".answer").inner_text() == "Part one of the answer. Part two, after the drop [1]."
    assert len(attempts) == 3
    assert re.search(r"\?lastEventId=run-[0-9a-f-]+%3A2$", attempts[2]), attempts[2]
    page_errors.remove("Failed to load resource: the server responded with a status of 502 (Bad Gateway)")


def test_reloading_the_page_picks_up_the_running_answer(page, scripted_router):
    later = Gate()
    scripted_router(
        StatusEvent(phase="synthesizing", label="Writing the answer"),
        DeltaEvent(text="Written before the reload. "),
        later,
        DeltaEvent(text="Written after it [1]."),
        SourcesEvent(sources=[SOURCE_1]),
        SUMMARY,
    )
    sync_api.expect(ask(page, "How did Apple do?").locator(".answer")).to_have_text("Written before the reload.")

    page.reload()
    answer = page.locator(ANSWER)
    sync_api.expect(answer.locator(".answer")).to_have_text("Written before the reload.")
    later.open()

    wait_until_finished(answer)
    assert answer.locator(".answer").inner_text() == "Written before the reload. Written after it [1]."
    assert page.locator(".turn.user .bubble").all_inner_texts() == ["How did Apple do?"]


# --- cancelling ---------------------------------------------------------------------------------------


def test_cancel_stops_the_run_and_keeps_the_partial_answer(page, scripted_router):
    never = Gate()
    scripted_router(
        StatusEvent(phase="synthesizing", label="Writing the answer"),
        DeltaEvent(text="The first half"),
        never,
        DeltaEvent(text=" never arrives."),
        SUMMARY,
    )
    answer = ask(page, "How did Apple do?")
    sync_api.expect(answer.locator(".answer")).to_have_text("The first half")

    page.click("#cancel")

    wait_until_finished(answer)
    assert answer.get_attribute("data-state") == "error"
    assert answer.get_attribute("data-error-code") == "cancelled"
    assert answer.locator(".run-error").inner_text() == "Cancelled."
    assert answer.locator(".answer").inner_text() == "The first half"
    run = ResearchRun.objects.get()
    assert run.status == "cancelled"
    assert page.locator("#ask").is_enabled()


# --- untrusted content --------------------------------------------------------------------------------


HOSTILE_ANSWER = (
    "Revenue rose. <script>window.__pwned = 'script'</script>\n\n"
    '<img src="x" onerror="window.__pwned = \'img\'">\n\n'
    "[a link](javascript:window.__pwned='link') and <a href=\"javascript:window.__pwned='a'\">another</a>\n\n"
    '<div onmouseover="window.__pwned = \'hover\'">hover me</div>'
)


def assert_nothing_ran_and_no_active_markup(page: sync_api.Page, answer: sync_api.Locator) -> None:
    answer.locator(".answer").hover()
    assert page.evaluate("() => window.__pwned") is None
    assert answer.locator(".answer script, .answer img, .answer iframe").count() == 0
    handlers = answer.locator(".answer").evaluate(
        "(el) => [...el.querySelectorAll('*')].flatMap((n) => n.getAttributeNames().filter((a) => a.startsWith('on')))"
    )
    assert handlers == []
    hrefs = answer.locator(".answer a[href]").evaluate_all("(links) => links.map((a) => a.href)")
    assert all(href.startswith(("http://", "https://")) for href in hrefs), hrefs


def test_model_answer_cannot_run_script(page, fake_openai):
    fake_openai.script(TextReply([HOSTILE_ANSWER]), when=has_web_search)

    answer = ask(page, "Show me something nasty")

    wait_until_finished(answer)
    assert answer.get_attribute("data-state") == "done"
    assert "Revenue rose." in answer.locator(".answer").inner_text()
    assert_nothing_ran_and_no_active_markup(page, answer)


def test_hostile_sources_are_shown_as_text_and_never_linked_unless_http(page, scripted_router):
    hostile = Source(n=1, title='<img src=x onerror="window.__pwned=1">', url="javascript:window.__pwned=2", kind="web")
    scripted_router(
        DeltaEvent(text="See [1] and [2]."),
        SourcesEvent(sources=[hostile, SOURCE_2]),
        RunSummary(mode="quick", answer="", sources=[hostile, SOURCE_2]),
    )

    answer = ask(page, "How did Apple do?")

    wait_until_finished(answer)
    assert answer.locator(".sources li").first.inner_text().startswith('<img src=x onerror="window.__pwned=1">')
    assert answer.locator(".sources li").first.locator("a").count() == 0
    assert answer.locator(".answer .citation").all_inner_texts() == ["[1]", "[2]"]
    assert answer.locator(".answer a.citation").evaluate_all("(links) => links.map((a) => a.href)") == [SOURCE_2.url]
    assert_nothing_ran_and_no_active_markup(page, answer)


# --- conversations ------------------------------------------------------------------------------------


def test_earlier_conversation_reopens_with_its_rendered_answer(page, scripted_router):
    scripted_router(DeltaEvent(text="Revenue was **$391B** [1]."), SourcesEvent(sources=[SOURCE_1]), SUMMARY)
    wait_until_finished(ask(page, "How did Apple do?"))

    page.click("#new-chat")
    assert page.locator(ANSWER).count() == 0
    page.click("#conversations button >> text=How did Apple do?")

    answer = page.locator(ANSWER)
    sync_api.expect(answer.locator(".answer")).to_have_text("Revenue was $391B [1].")
    assert answer.locator(".answer a.citation").get_attribute("href") == SOURCE_1.url
    assert answer.locator(".sources li a").all_inner_texts() == ["Apple 10-K"]
