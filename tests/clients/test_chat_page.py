"""The chat page at `/`, driven in headless Chromium against the running app.

Runs are answered either by the real router talking to the fake OpenAI server, or by a scripted router
(a list of research events and gates) where a test needs to hold a run at a known point.
Skipped where Chromium or the playwright package is missing.
"""

from __future__ import annotations

import asyncio
import csv
import io
import os
import re
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from chat import views
from chat.models import ResearchRun
from chat.services import leases, runs
from datascraper.research_engine.charts import charts_for
from datascraper.research_engine.periods.fiscal_calendar import FiscalCalendar
from datascraper.research_engine.state import Finding
from datascraper.research_engine.trace import checked_confidence
from datascraper.schemas import (
    ChartEvent,
    ChartSeries,
    CitationCheck,
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
    VerificationEvent,
)
from datascraper.trace_schemas import Confidence, Contradiction, RunConfidence, TraceEntry
from tests.datascraper.conftest import market_data  # noqa: F401 (the fixture)
from tests.datascraper.research_support import gaps, script_analysis, script_gaps, script_synthesis, sub
from tests.datascraper.test_charts_and_as_of import statement_finding
from tests.fakes.openai_server import Sentence, TextReply, has_web_search
from tests.sse import SseEvent, parse_frames

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


class HandOver:
    """The process answering the run hands it over here, as a worker told to stop does; the run's next
    attempt (started here too) goes on with the steps after this one."""


Step = ResearchEvent | Gate | HandOver


@pytest.fixture
def scripted_router(monkeypatch) -> Iterator[Callable[..., None]]:
    """`scripted_router(event, gate, event, ...)`: runs started by the app replay these steps."""
    gates: list[Gate] = []
    execute_run = runs.execute_run
    next_attempts: set[asyncio.Task] = set()

    def use(*steps: Step) -> None:
        gates.extend(step for step in steps if isinstance(step, Gate))
        remaining = iter(steps)  # shared by a run's attempts: a resumed one goes on where the last stopped

        async def research(query: ResearchQuery, resume_from: dict | None = None) -> AsyncIterator[ResearchEvent]:
            for step in remaining:
                if isinstance(step, Gate):
                    await step.wait()
                elif isinstance(step, HandOver):
                    [handle] = leases.local_handles()
                    handle.stop("hand_over")
                    await asyncio.Event().wait()  # cancelled by the hand-over
                else:
                    yield step

        async def hand_over(run_id: uuid.UUID) -> None:
            task = asyncio.get_running_loop().create_task(execute(run_id))
            next_attempts.add(task)
            task.add_done_callback(next_attempts.discard)

        def execute(run_id: uuid.UUID):
            return execute_run(run_id, research=research, hand_over=hand_over)

        monkeypatch.setattr(runs, "execute_run", execute)

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


@pytest.fixture
def reconnects_replay_from_the_start(page, events_requests) -> None:
    """Every reconnection to a run's events gets all of them again, from the first (as after an id the
    server forgot, or a proxy that dropped the header). The browser adds Last-Event-ID below what a route
    sees or changes, so such a reconnection is answered here with the server's answer to a resume from the
    start, which waits for the run to end."""

    def replay_from_the_start(route: sync_api.Route) -> None:
        if len(events_requests) == 1:
            route.continue_()
            return
        run_id = route.request.url.split("/api/runs/")[1].split("/")[0]
        route.fulfill(response=route.fetch(headers={**route.request.headers, "last-event-id": f"run-{run_id}:0"}))

    page.route("**/api/runs/*/events*", replay_from_the_start)


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
    process = answer.locator("details.process")
    assert process.get_attribute("open") is None, "the process steps aside once the answer is written"
    assert process.locator(".process-summary").is_visible()
    assert process.locator(".phase-label").text_content(), "the phase the run went through is kept in the panel"
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
    answer.locator(".process-summary").click()
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


def test_replayed_events_after_a_reconnect_are_not_shown_twice(
    page, scripted_router, cut_first_stream, events_requests, reconnects_replay_from_the_start
):
    """A resume that restarts from the beginning (an id the server forgot, a proxy dropping the header)
    replays events the page has already shown; it must skip them."""
    scripted_router(
        StatusEvent(phase="synthesizing", label="Writing the answer"),
        DeltaEvent(text="Part one of the answer. "),
        DeltaEvent(text="Part two, after the drop [1]."),
        SourcesEvent(sources=[SOURCE_1]),
        SUMMARY,
    )

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


# --- layout: the composer and the research process ----------------------------------------------------


DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}

RESEARCH_QUESTION = "Compare Apple's and Microsoft's revenue growth over the last three quarters."
RESEARCH_PLAN = PlanEvent(
    needs_decomposition=True,
    sub_questions=[
        PlannedSubQuestion(id="q1", question="Apple's quarterly revenue, last three quarters", type="numerical", route="market_data"),
        PlannedSubQuestion(id="q2", question="Microsoft's quarterly revenue, last three quarters", type="numerical", route="market_data"),
        PlannedSubQuestion(id="q3", question="What drove Apple's Services growth?", type="qualitative", route="web_search"),
        PlannedSubQuestion(id="q4", question="Whose growth is more durable, and why?", type="analytical", route="synthesis"),
    ],
)
FOLLOW_UP = PlannedSubQuestion(
    id="q5", question="How fast did Azure grow in the latest quarter?", type="qualitative", route="web_search"
)
RESEARCH_SOURCES = [
    Source(
        n=1,
        title="AAPL income statement (quarterly)",
        url="https://finance.yahoo.com/quote/AAPL/financials",
        kind="market_data",
        as_of="2025-06-30",
    ),
    Source(
        n=2,
        title="MSFT income statement (quarterly)",
        url="https://finance.yahoo.com/quote/MSFT/financials",
        kind="market_data",
        as_of="2025-06-30",
    ),
    Source(n=3, title="Apple's Services hit a record - Reuters", url="https://www.reuters.com/technology/apple-services", kind="web"),
    Source(n=4, title="Microsoft FY25 Q4 earnings release", url="https://www.microsoft.com/en-us/investor/earnings", kind="web"),
]
RESEARCH_ANSWER = [
    "## Revenue growth over the last three quarters\n\n",
    "Microsoft grew faster than Apple in each of the last three quarters [1][2]. ",
    "Apple's growth came mostly from Services, which reached a record [3]; ",
    "Microsoft's from Azure, up 39% in the latest quarter [4].\n\n",
    "| Quarter | Apple revenue | Apple YoY | Microsoft revenue | Microsoft YoY |\n"
    "|---|---:|---:|---:|---:|\n"
    "| Q4 2024 | $124.3B | 4.0% | $69.6B | 12.3% |\n"
    "| Q1 2025 | $95.4B | 5.1% | $70.1B | 13.3% |\n"
    "| Q2 2025 | $94.0B | 9.6% | $76.4B | 18.1% |\n\n",
    "**Durability.** Microsoft's growth rests on cloud contracts that renew [4]; Apple's on an installed base "
    "that keeps paying for Services [3]. Both are recurring; Microsoft's is growing faster from a smaller base.\n\n",
]


REVENUE_CHART = ChartEvent(
    id="c1",
    title="Total Revenue (quarterly): AAPL vs MSFT",
    kind="bars",
    unit="USD",
    as_of="2025-06-30",
    source_n=1,
    series=[
        ChartSeries(name="AAPL", source_n=1, points=[("2024-Q4", 124.3e9), ("2025-Q1", 95.4e9), ("2025-Q2", 94.0e9)]),
        ChartSeries(name="MSFT", source_n=2, points=[("2024-Q4", 69.6e9), ("2025-Q1", 70.1e9), ("2025-Q2", 76.4e9)]),
    ],
)


COMPONENTS = {"coverage": 0.9, "credibility": 0.7, "diversity": 0.6, "evidence": 0.8, "consistency": 1.0}


def run_confidence(score: float, *, shallow: bool = False, summary: str = "Two rounds; margins remain uncertain.") -> RunConfidence:
    return RunConfidence(
        score=score,
        shallow=shallow,
        **COMPONENTS,
        threshold=0.75,
        rounds=2,
        progression=[0.5, score],
        refinements=1,
        uncertain=["margins"],
        summary=summary,
    )


# The research answer's markers, in order: [1][2], [3], [4], [4], [3]; its checks, as verification sends them.
RESEARCH_CHECKS = [
    CitationCheck(n=1, marker_index=0, status="supported", evidence="Total net sales $94.0 billion"),
    CitationCheck(n=2, marker_index=1, status="supported", evidence="Revenue was $76.4 billion"),
    CitationCheck(n=3, marker_index=2, status="supported", evidence="Services revenue reached an all-time high"),
    CitationCheck(n=4, marker_index=3, status="supported", evidence="Azure and other cloud services revenue grew 39%"),
    CitationCheck(n=4, marker_index=4, status="unreachable"),
    CitationCheck(n=3, marker_index=5, status="unsupported", evidence="Services revenue reached an all-time high"),
]


def research_events(*, before_answer: Gate | None = None, answer_paragraphs: int = 0) -> list[Step]:
    """A two-round research run with an analytical sub-question and a revenue chart; `answer_paragraphs`
    lengthens the answer."""
    extra = [f"Further detail, paragraph {i + 1}: revenue, margins and guidance compared [1][2].\n\n" for i in range(answer_paragraphs)]
    return [
        StatusEvent(phase="analyzing", label="Analyzing the question"),
        RESEARCH_PLAN,
        StatusEvent(phase="researching", label="Researching 3 sub-questions", detail="Round 1"),
        StepEvent(sub_question_id="q1", state="started", route="market_data"),
        StepEvent(sub_question_id="q2", state="started", route="market_data"),
        StepEvent(sub_question_id="q3", state="started", route="web_search", model="openai:gpt-5.4"),
        StepEvent(sub_question_id="q1", state="done", route="market_data", elapsed_ms=140),
        StepEvent(sub_question_id="q2", state="done", route="market_data", elapsed_ms=160),
        StepEvent(sub_question_id="q3", state="done", route="web_search", elapsed_ms=2300, model="openai:gpt-5.4"),
        StatusEvent(phase="evaluating", label="Checking the findings for gaps", detail="Round 1"),
        RoundEvent(
            n=1,
            complete=False,
            gaps=["Azure's growth in the latest quarter"],
            follow_ups=[FOLLOW_UP.question],
            confidence=0.58,
            weak_areas=["Azure's growth in the latest quarter"],
        ),
        PlanEvent(needs_decomposition=True, sub_questions=[*RESEARCH_PLAN.sub_questions, FOLLOW_UP]),
        StatusEvent(phase="researching", label="Researching 1 sub-question", detail="Round 2"),
        StepEvent(sub_question_id="q5", state="started", route="web_search", model="anthropic:claude-sonnet-4-5"),
        StepEvent(
            sub_question_id="q5", state="done", route="web_search", elapsed_ms=1900, model="anthropic:claude-sonnet-4-5"
        ),
        StatusEvent(phase="evaluating", label="Checking the findings for gaps", detail="Round 2"),
        RoundEvent(n=2, complete=True, confidence=0.81, stop_reason="complete"),
        StatusEvent(phase="synthesizing", label="Writing the answer", detail="From 4 findings and 4 sources"),
        REVENUE_CHART,
        *([before_answer] if before_answer else []),
        *(DeltaEvent(text=text) for text in RESEARCH_ANSWER + extra),
        SourcesEvent(sources=RESEARCH_SOURCES),
        VerificationEvent(citations=RESEARCH_CHECKS),
        RunSummary(
            mode="research", answer="", sources=RESEARCH_SOURCES, verification=RESEARCH_CHECKS, confidence=run_confidence(0.81)
        ),
    ]


IN_VIEWPORT = """(el) => {
    const box = el.getBoundingClientRect();
    const inside = box.top >= 0 && box.left >= 0 && box.bottom <= innerHeight && box.right <= innerWidth;
    return inside && el.contains(document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2));
}"""


def in_viewport(locator: sync_api.Locator) -> bool:
    """Wholly inside the window, and on top there (not covered by anything)."""
    return locator.evaluate(IN_VIEWPORT)


def comes_into_view(locator: sync_api.Locator) -> bool:
    """`in_viewport` soon: the transcript follows the answer's last growth a frame later (its ResizeObserver),
    which may be after the answer says it is done. The bound is generous (a loaded 2-core CI machine once
    took over a second for that frame); a transcript that never follows still fails."""
    try:
        locator.page.wait_for_function(IN_VIEWPORT, arg=locator.element_handle(), timeout=5000)
    except sync_api.TimeoutError:
        return False
    return True


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_composer_stays_in_view_after_a_long_research_answer(page, scripted_router, viewport):
    page.set_viewport_size(viewport)
    scripted_router(*research_events(answer_paragraphs=20))

    answer = ask(page, RESEARCH_QUESTION, mode="research")

    wait_until_finished(answer)
    assert answer.get_attribute("data-state") == "done"
    assert in_viewport(page.locator("#question")) and in_viewport(page.locator("#ask"))
    assert page.evaluate("() => document.scrollingElement.scrollHeight <= innerHeight"), "only the transcript scrolls"
    transcript = page.locator("#transcript")
    assert transcript.evaluate("(el) => el.scrollHeight > el.clientHeight"), "the answer is longer than the window"
    assert comes_into_view(answer.locator(".sources")), "the transcript followed the answer to its end"
    assert answer.locator(".answer table td").first.inner_text() == "Q4 2024"
    if shots := os.environ.get("CHAT_PAGE_SCREENSHOTS"):
        answer.page.wait_for_function("(el) => el.dataset.trust === 'loaded'", arg=answer.element_handle())
        # To look at: the question, the top of its answer with the process panel closed, then opened.
        Path(shots).mkdir(parents=True, exist_ok=True)
        size = f"{viewport['width']}x{viewport['height']}"
        page.locator(".turn.user").evaluate("(el) => el.scrollIntoView({block: 'start'})")
        page.screenshot(path=str(Path(shots) / f"research-answer-{size}.png"))
        answer.locator(".process-summary").click()
        page.screenshot(path=str(Path(shots) / f"research-process-{size}.png"))


def test_process_panel_collapses_when_the_answer_starts_and_reopens_on_click(page, scripted_router):
    before_answer, mid_answer = Gate(), Gate()
    steps = research_events(before_answer=before_answer)
    first_delta = next(i for i, step in enumerate(steps) if isinstance(step, DeltaEvent))
    steps.insert(first_delta + 1, mid_answer)
    scripted_router(*steps)

    answer = ask(page, RESEARCH_QUESTION, mode="research")

    process = answer.locator("details.process")
    summary = process.locator(".process-summary")
    sync_api.expect(answer.locator(".phase-label")).to_have_text("Writing the answer — From 4 findings and 4 sources")
    assert process.get_attribute("open") is not None, "open while the research runs"
    assert answer.locator('.steps li[data-sub-question-id="q5"] .step-question').is_visible()
    assert summary.inner_text() == "Research: 2 rounds, 5 sub-questions · Writing the answer"

    before_answer.open()
    sync_api.expect(answer.locator(".answer h2")).to_have_text("Revenue growth over the last three quarters")
    assert process.get_attribute("open") is None, "closed at the answer's first delta"
    assert answer.locator(".steps").is_hidden() and answer.locator(".rounds").is_hidden()
    assert summary.inner_text() == "Research: 2 rounds, 5 sub-questions"
    assert answer.get_attribute("data-state") == "running"

    summary.click()
    assert process.get_attribute("open") is not None
    assert answer.locator(".rounds li").all_inner_texts() == [
        "Round 1: gaps: Azure's growth in the latest quarter (weak: Azure's growth in the latest quarter)",
        "Round 2: complete (stopped: complete)",
    ]
    # Each web step names the model that answered it, with its provider, as its step events say.
    assert answer.locator(".steps li .step-route").all_inner_texts() == [
        "market data",
        "market data",
        "web · openai:gpt-5.4",
        "analysis",
        "web · anthropic:claude-sonnet-4-5",
    ]
    assert answer.locator('.steps li[data-sub-question-id="q3"] .step-time').inner_text() == "2.3 s"
    mid_answer.open()
    wait_until_finished(answer)
    assert process.get_attribute("open") is not None, "a panel opened by the reader stays open"

    summary.click()
    assert process.get_attribute("open") is None and answer.locator(".steps").is_hidden()


def test_analytical_sub_question_is_answered_by_the_synthesis_not_left_pending(page, scripted_router):
    before_answer, mid_answer = Gate(), Gate()
    steps = research_events(before_answer=before_answer)
    first_delta = next(i for i, step in enumerate(steps) if isinstance(step, DeltaEvent))
    steps.insert(first_delta + 1, mid_answer)
    scripted_router(*steps)

    answer = ask(page, RESEARCH_QUESTION, mode="research")

    analytical = answer.locator('.steps li[data-sub-question-id="q4"]')
    sync_api.expect(answer.locator(".phase-label")).to_have_text("Writing the answer — From 4 findings and 4 sources")
    assert analytical.get_attribute("data-state") == "pending"
    assert analytical.locator(".step-state").inner_text() == "pending: answered in the synthesis"

    before_answer.open()
    sync_api.expect(analytical).to_have_attribute("data-state", "started")
    assert analytical.locator(".step-state").text_content() == "being answered in the synthesis"

    mid_answer.open()
    wait_until_finished(answer)
    assert analytical.get_attribute("data-state") == "done"
    assert analytical.locator(".step-state").text_content() == "answered in the synthesis"
    states = answer.locator(".steps li").evaluate_all("(items) => items.map((li) => li.dataset.state)")
    assert states == ["done"] * 5


def test_steps_still_open_when_a_run_is_cancelled_are_marked_not_finished(page, scripted_router):
    never = Gate()
    scripted_router(
        StatusEvent(phase="analyzing", label="Analyzing the question"),
        RESEARCH_PLAN,
        StatusEvent(phase="researching", label="Researching 3 sub-questions", detail="Round 1"),
        StepEvent(sub_question_id="q1", state="started", route="market_data"),
        StepEvent(sub_question_id="q1", state="done", route="market_data", elapsed_ms=140),
        StepEvent(sub_question_id="q3", state="started", route="web_search"),
        never,
        SUMMARY,
    )
    answer = ask(page, RESEARCH_QUESTION, mode="research")
    sync_api.expect(answer.locator('.steps li[data-sub-question-id="q3"]')).to_have_attribute("data-state", "started")

    page.click("#cancel")

    wait_until_finished(answer)
    assert answer.get_attribute("data-error-code") == "cancelled"
    states = answer.locator(".steps li").evaluate_all("(items) => items.map((li) => [li.dataset.subQuestionId, li.dataset.state])")
    assert states == [["q1", "done"], ["q2", "stopped"], ["q3", "stopped"], ["q4", "stopped"]]
    assert answer.locator('.steps li[data-sub-question-id="q4"] .step-state').inner_text() == "not finished"


def test_a_resumed_attempt_discards_the_answer_text_received_before_it(page, scripted_router):
    scripted_router(
        StatusEvent(phase="synthesizing", label="Writing the answer"),
        DeltaEvent(text="Text from the worker that died, "),
        SourcesEvent(sources=[SOURCE_2]),
        HandOver(),
        StatusEvent(phase="synthesizing", label="Writing the answer"),
        DeltaEvent(text="Revenue was $391B [1]."),
        SourcesEvent(sources=[SOURCE_1]),
        SUMMARY,
    )

    answer = ask(page, "How did Apple do?")

    wait_until_finished(answer)
    assert answer.get_attribute("data-state") == "done"
    assert answer.locator(".answer").inner_text() == "Revenue was $391B [1]."
    assert answer.locator(".sources li a").all_inner_texts() == ["Apple 10-K"]
    assert answer.locator(".attempt-note").text_content() == "Resumed (attempt 2): the answer is being written again."
    assert ResearchRun.objects.get().attempt == 2


# --- the question box: what cannot be sent, and what the server refuses ---------------------------------


@pytest.fixture
def posts(page) -> list[sync_api.Request]:
    """Every POST the page makes, in order."""
    seen: list[sync_api.Request] = []
    page.on("request", lambda request: seen.append(request) if request.method == "POST" else None)
    return seen


def test_over_long_question_is_not_sent_and_says_its_length(page, posts):
    question = "  " + "x" * 9000 + "\n"

    page.fill("#question", question)

    hint = page.locator("#question-hint")
    assert hint.inner_text() == "9,000 characters — the limit is 8,000."
    assert page.get_attribute("#question", "aria-invalid") == "true"
    page.click("#ask")
    sync_api.expect(page.locator("#form-error")).to_have_text(
        "9,000 characters — the limit is 8,000. Shorten the question to ask it."
    )
    assert hint.is_hidden(), "the count is said once"
    assert page.input_value("#question") == question, "nothing is cut from what was typed"
    assert posts == []
    assert page.locator(ANSWER).count() == 0

    page.fill("#question", "x" * 7999)
    assert hint.inner_text() == "7,999 of 8,000 characters"
    assert page.locator("#form-error").is_hidden(), "once edited, the live count takes over from the complaint"


def test_question_at_the_limit_counted_as_the_api_counts_is_sent(page, scripted_router, posts):
    """8,000 emoji are 16,000 UTF-16 units in the browser but 8,000 characters to the API: they fit."""
    scripted_router(DeltaEvent(text="Noted."), SUMMARY)
    question = "\N{CHART WITH UPWARDS TREND}" * 8000

    page.fill("#question", question)
    assert page.locator("#question-hint").inner_text() == "8,000 of 8,000 characters"
    answer = ask(page, question)

    wait_until_finished(answer)
    assert answer.get_attribute("data-state") == "done"
    sent = [request for request in posts if request.url.endswith("/messages")]
    assert len(sent) == 1 and sent[0].post_data_json["content"] == question
    assert page.locator("#form-error").is_hidden()


def test_whitespace_only_question_gets_a_message_and_is_not_sent(page, posts):
    page.fill("#question", "   \n\t  ")
    page.click("#ask")

    sync_api.expect(page.locator("#form-error")).to_have_text("Type a question first: this one is empty or only spaces.")
    assert posts == []
    assert page.locator(ANSWER).count() == 0
    assert page.evaluate("() => document.activeElement.id") == "question"


def test_question_over_the_rate_is_refused_in_words_and_ask_waits(page, page_errors, scripted_router, limits):
    limits(CHAT_RATE_LIMIT="1/m")
    scripted_router(DeltaEvent(text="Revenue was $391B [1]."), SourcesEvent(sources=[SOURCE_1]), SUMMARY)
    wait_until_finished(ask(page, "How did Apple do?"))

    page.fill("#question", "And Microsoft?")
    page.click("#ask")

    error = page.locator("#form-error")
    sync_api.expect(error).to_have_text(re.compile(r"^Too many questions \(the limit is 1/m\); try again in \d+ s\.$"))
    assert page.locator("#ask").is_disabled(), "Ask waits out the Retry-After"
    assert page.input_value("#question") == "And Microsoft?", "the refused question stays in the box"
    assert page.locator(ANSWER).count() == 1
    page_errors.remove("Failed to load resource: the server responded with a status of 429 (Too Many Requests)")


def test_question_past_the_runs_in_flight_is_refused_in_words_until_retry_after(page, page_errors, scripted_router, limits):
    """Two tabs of one session: the second asks while the first one's answer is still being written."""
    limits(CHAT_MAX_CONCURRENT_RUNS=1)
    never = Gate()
    scripted_router(StatusEvent(phase="synthesizing", label="Writing the answer"), never, SUMMARY)
    first = ask(page, "How did Apple do?")
    sync_api.expect(first.locator(".phase-label")).to_have_text("Writing the answer")

    second_tab = page.context.new_page()
    second_tab.on("console", lambda message: page_errors.append(message.text) if message.type == "error" else None)
    second_tab.goto("/")
    second_tab.fill("#question", "And Microsoft?")
    second_tab.click("#ask")

    sync_api.expect(second_tab.locator("#form-error")).to_have_text(
        "1 of your answers are already in progress; wait for one to finish, or cancel one."
    )
    assert second_tab.locator("#ask").is_disabled()
    sync_api.expect(second_tab.locator("#ask")).to_be_enabled(timeout=10_000)  # after Retry-After (5 s)
    assert ResearchRun.objects.count() == 1
    page.click("#cancel")
    wait_until_finished(first)
    page_errors.remove("Failed to load resource: the server responded with a status of 429 (Too Many Requests)")


# --- CSRF ---------------------------------------------------------------------------------------------


def test_every_post_carries_the_sessions_csrf_token(page, scripted_router, posts):
    scripted_router(StatusEvent(phase="synthesizing", label="Writing the answer"), Gate(), SUMMARY)
    answer = ask(page, "How did Apple do?")
    sync_api.expect(answer.locator(".phase-label")).to_have_text("Writing the answer")
    page.click("#cancel")
    wait_until_finished(answer)

    cookie = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    assert [request.url.rsplit("/", 1)[-1] for request in posts] == ["conversations", "messages", "cancel"]
    assert [request.headers.get("x-csrftoken") for request in posts] == [cookie] * 3


# --- figures: the run's market data drawn, and as a table ---------------------------------------------

MARKET_QUESTION = "How have Apple's shares done over the last month, and how does its quarterly revenue compare with Microsoft's?"
APPLE_MONTH = sub("How did Apple's share price move over the last month?", "numerical", ["AAPL"], "price_history")
REVENUES = sub(
    "Apple's and Microsoft's quarterly revenue, last three quarters",
    "numerical",
    ["AAPL", "MSFT"],
    "income_statement",
    frequency="quarterly",
    periods=3,
)
OPEN_GAPS = ["Azure's growth in the latest quarter", "Apple's Services margin"]
MARKET_ANSWER = [
    "Apple closed at 196.45 USD on 2025-06-13 [1].",
    "Microsoft's quarterly revenue was larger than Apple's in each of the last three quarters [2][3].",
]


def script_market_data_run(fake_openai, research_env, answer: list[str] = MARKET_ANSWER) -> None:
    """The next research question is answered by the real router from the fake yfinance: a month of AAPL
    prices and AAPL and MSFT quarterly revenue (so a line chart and a bar chart), in one round that leaves
    gaps open, with `answer` as the synthesis."""
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, APPLE_MONTH, REVENUES)
    script_gaps(fake_openai, gaps(6, missing=OPEN_GAPS))
    script_synthesis(fake_openai, *answer)


@pytest.fixture
def market_data_run(fake_openai, market_data, research_env) -> None:  # noqa: F811
    """`script_market_data_run` with the usual answer."""
    script_market_data_run(fake_openai, research_env)


def ask_market_question(page: sync_api.Page) -> sync_api.Locator:
    answer = ask(page, MARKET_QUESTION, mode="research")
    wait_until_finished(answer)
    assert answer.get_attribute("data-state") == "done"
    return answer


def run_events(page: sync_api.Page, answer: sync_api.Locator) -> list[SseEvent]:
    """The events of the answer's run, as a late subscriber gets them (the stream ends with the run)."""
    response = page.request.get(f"/api/runs/{answer.get_attribute('data-run-id')}/events")
    assert response.ok
    return parse_frames(response.text())


def charts_of(events: list[SseEvent]) -> dict[str, dict]:
    return {event.data["kind"]: event.data for event in events if event.type == "chart"}


def sources_of(events: list[SseEvent]) -> list[dict]:
    return next(event.data["sources"] for event in events if event.type == "sources")


# The pixels of a figure's chart pane: its own canvas, the largest (the axes have theirs), as RGBA bytes.
PANE_PIXELS_JS = """
    const canvases = [...figure.querySelectorAll('.figure-chart canvas')];
    const pane = canvases.reduce((a, b) => (b.width * b.height > a.width * a.height ? b : a));
    const { width, height } = pane;
    const pixels = pane.getContext('2d').getImageData(0, 0, width, height).data;
"""

BARS_JS = "(figure) => {" + PANE_PIXELS_JS + """
    const colours = [...figure.querySelectorAll('.figure-legend .swatch')]
        .map((swatch) => getComputedStyle(swatch).backgroundColor.match(/\\d+/g).map(Number));
    // Bars are solid fills: a bar is a run of columns holding its colour; its height, the most rows of it.
    const bars = [];
    colours.forEach(([r, g, b], series) => {
        let bar = null;
        for (let x = 0; x < width; x += 1) {
            let rows = 0;
            for (let y = 0; y < height; y += 1) {
                const i = (y * width + x) * 4;
                if (pixels[i] === r && pixels[i + 1] === g && pixels[i + 2] === b && pixels[i + 3] === 255) rows += 1;
            }
            if (rows > 0 && bar === null) bar = { series, left: x, height: 0 };
            if (rows > 0) bar.height = Math.max(bar.height, rows);
            if (rows === 0 && bar !== null) { bars.push(bar); bar = null; }
        }
        if (bar !== null) bars.push(bar);
    });
    return bars.sort((a, b) => a.left - b.left).map(({ series, height }) => [series, height]);
}
"""

LINE_JS = "(figure, points) => {" + PANE_PIXELS_JS + """
    const [r, g, b] = getComputedStyle(figure.querySelector('.figure-legend .swatch')).backgroundColor.match(/\\d+/g).map(Number);
    const onLine = (x, y) => {
        const i = (y * width + x) * 4;
        return pixels[i + 3] > 200 && Math.abs(pixels[i] - r) < 40 && Math.abs(pixels[i + 1] - g) < 40 && Math.abs(pixels[i + 2] - b) < 40;
    };
    let left = width, right = -1;
    for (let x = 0; x < width; x += 1) for (let y = 0; y < height; y += 1) if (onLine(x, y)) { left = Math.min(left, x); right = Math.max(right, x); }
    // Points are evenly spaced from the first to the last: where the line crosses each point's column.
    return Array.from({ length: points }, (_, k) => {
        const x = Math.round(left + ((right - left) * k) / (points - 1));
        const ys = [];
        for (let y = 0; y < height; y += 1) if (onLine(x, y)) ys.push(y);
        return ys.length ? ys.reduce((sum, y) => sum + y, 0) / ys.length : null;
    });
}
"""


def periods_in_order(chart: dict) -> list[str]:
    """A chart event's periods, oldest first by the ends its series give beside their points (an event
    without ends: its ISO dates or calendar-quarter labels, which sort as text)."""
    ends: dict[str, str] = {}
    for series in chart["series"]:
        xs = [x for x, _ in series["points"]]
        for x, end in zip(xs, series.get("ends") or xs, strict=True):
            ends.setdefault(x, end)
    return sorted(ends, key=lambda x: ends[x])


def assert_bars_drawn_from(figure: sync_api.Locator, chart: dict) -> None:
    """One bar per series and period (none where a series lacks the period), side by side in period order,
    each as tall as its figure."""
    # A chart paints on the animation frame after it is shown or resized.
    figure.page.wait_for_function(f"(figure) => ({BARS_JS})(figure).length > 0", arg=figure.element_handle())
    bars = figure.evaluate(BARS_JS)
    periods = periods_in_order(chart)
    values = [dict(series["points"]) for series in chart["series"]]
    expected = [(s, values[s][period]) for period in periods for s in range(len(values)) if period in values[s]]
    assert [series for series, _ in bars] == [series for series, _ in expected], bars
    pixels_per_unit = [height / value for (_, height), (_, value) in zip(bars, expected, strict=True)]
    assert max(pixels_per_unit) / min(pixels_per_unit) < 1.03, bars


def assert_line_drawn_from(figure: sync_api.Locator, chart: dict) -> None:
    """The line passes each point's column at a height linear in the point's value, higher for more."""
    [series] = chart["series"]
    values = [y for _, y in series["points"]]
    heights = figure.evaluate(LINE_JS, len(values))
    assert None not in heights, heights
    n = len(values)
    mean_v, mean_h = sum(values) / n, sum(heights) / n
    slope = sum((v - mean_v) * (h - mean_h) for v, h in zip(values, heights, strict=True)) / sum((v - mean_v) ** 2 for v in values)
    assert slope < 0, "a higher close is drawn higher up"
    residuals = [abs(h - (mean_h + slope * (v - mean_v))) for v, h in zip(values, heights, strict=True)]
    assert max(residuals) < 3, (residuals, heights)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_market_data_answer_draws_its_charts_above_the_text_from_the_events_points(page, market_data_run, viewport):
    page.set_viewport_size(viewport)
    answer = ask_market_question(page)

    events = run_events(page, answer)
    charts, sources = charts_of(events), sources_of(events)
    figures = answer.locator(".figures figure")
    assert figures.evaluate_all("(fs) => fs.map((f) => f.dataset.chartId)") == ["c1", "c2"]
    assert answer.evaluate(
        "(el) => el.querySelector('.figures').compareDocumentPosition(el.querySelector('.answer')) & Node.DOCUMENT_POSITION_FOLLOWING"
    ), "the figures come before the text"
    line, bars = answer.locator('figure[data-kind="line"]'), answer.locator('figure[data-kind="bars"]')
    assert line.locator(".figure-title").inner_text() == charts["line"]["title"] == "AAPL closing price"
    assert line.locator(".figure-meta").inner_text() == "USD · as of 2025-06-13"
    assert bars.locator(".figure-title").inner_text() == charts["bars"]["title"]
    assert bars.locator(".figure-meta").inner_text() == f"USD billions · as of {charts['bars']['as_of']}"
    assert bars.locator(".figure-legend li").all_text_contents() == ["AAPL[2]", "MSFT[3]"]
    assert_line_drawn_from(line, charts["line"])
    assert_bars_drawn_from(bars, charts["bars"])

    # Each series' source number leads to its entry in the answer's source list.
    msft = bars.locator(".figure-legend a.source-ref").nth(1)
    target = msft.get_attribute("href")
    listed = answer.locator(f".sources li{target}")
    assert listed.locator("a").get_attribute("href") == next(s["url"] for s in sources if s["n"] == 3)
    assert msft.get_attribute("title") == next(s["title"] for s in sources if s["n"] == 3)
    assert listed.locator(".source-kind").inner_text() == "market data, as of 2025-03-31"
    credit = line.locator(".figure-credit a")
    assert credit.get_attribute("href") == "https://www.tradingview.com/", "the licence's attribution is shown"
    if shots := os.environ.get("CHAT_PAGE_SCREENSHOTS"):
        # To look at: the question and its answer's figures, then the bar chart as a table.
        Path(shots).mkdir(parents=True, exist_ok=True)
        size = f"{viewport['width']}x{viewport['height']}"
        page.locator(".turn.user").evaluate("(el) => el.scrollIntoView({block: 'start'})")
        page.screenshot(path=str(Path(shots) / f"market-data-answer-{size}.png"))
        bars.locator("button.figure-table-toggle").click()
        bars.evaluate("(el) => el.scrollIntoView({block: 'start'})")
        page.screenshot(path=str(Path(shots) / f"market-data-table-{size}.png"))


def test_a_chart_toggles_to_a_table_of_the_same_figures_right_aligned_with_units_and_periods(page, market_data_run):
    answer = ask_market_question(page)
    charts = charts_of(run_events(page, answer))
    chart = charts["bars"]
    bars = answer.locator('figure[data-kind="bars"]')

    bars.locator("button.figure-table-toggle").click()

    table = bars.locator("table.figure-data")
    assert bars.locator(".figure-chart").is_hidden() and table.is_visible()
    periods = periods_in_order(chart)
    assert table.locator("thead th").all_inner_texts() == ["USD billions", *periods]
    for row, series in zip(table.locator("tbody tr").all(), chart["series"], strict=True):
        assert row.locator("th").inner_text() == f"{series['name']}[{series['source_n']}]"
        assert row.locator("td").all_inner_texts() == [f"{y / 1e9:,.2f}" for _, y in series["points"]]
    alignments = table.locator("td").evaluate_all("(cells) => cells.map((td) => getComputedStyle(td).textAlign)")
    assert set(alignments) == {"right"}
    assert table.locator("thead th").nth(1).evaluate("(th) => getComputedStyle(th).textAlign") == "right"

    line = answer.locator('figure[data-kind="line"]')
    line.locator("button.figure-table-toggle").click()
    points = charts["line"]["series"][0]["points"]
    assert line.locator("table.figure-data thead th").all_inner_texts() == ["Date", "AAPL, USD[1]"]
    assert line.locator("tbody tr").count() == len(points)
    assert line.locator("tbody tr").last.locator("th, td").all_inner_texts() == [points[-1][0], f"{points[-1][1]:,.2f}"]

    bars.locator("button.figure-table-toggle").click()
    assert table.is_hidden() and bars.locator(".figure-chart").is_visible()
    assert_bars_drawn_from(bars, chart)


LONDON_QUESTION = "How did Vodafone's shares trade from 2025-06-09 to 2025-06-12?"
LONDON_WEEK = sub(LONDON_QUESTION, "numerical", ["VOD.L"], "price_history", start="2025-06-09", end="2025-06-12")


def test_a_london_price_chart_reads_in_pence_with_pounds_beside_them(page, fake_openai, market_data, research_env):  # noqa: F811
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, LONDON_WEEK)
    script_gaps(fake_openai, gaps(6, missing=OPEN_GAPS))
    script_synthesis(fake_openai, "Vodafone's shares moved little that week [1].")
    answer = ask(page, LONDON_QUESTION, mode="research")
    wait_until_finished(answer)
    [chart] = charts_of(run_events(page, answer)).values()
    figure = answer.locator('figure[data-kind="line"]')

    assert figure.locator(".figure-meta").inner_text() == f"pence (GBp), GBP in brackets · as of {chart['as_of']}"
    assert_line_drawn_from(figure, chart)
    figure.locator("button.figure-table-toggle").click()
    [(day, pounds)] = chart["series"][0]["points"][-1:]
    assert figure.locator("table.figure-data thead th").all_inner_texts() == ["Date", "VOD.L, pence (GBp), GBP in brackets[1]"]
    assert figure.locator("tbody tr").last.locator("th, td").all_inner_texts() == [day, f"{pounds * 100:,.2f}p (£{pounds:,.4f})"]


def test_charts_resize_with_the_layout_down_to_a_phone(page, market_data_run):
    answer = ask_market_question(page)
    chart = charts_of(run_events(page, answer))["bars"]
    bars = answer.locator('figure[data-kind="bars"]')
    drawn_width = "(f) => f.querySelector('.figure-chart .tv-lightweight-charts').getBoundingClientRect().width"
    desktop_width = bars.evaluate(drawn_width)

    page.set_viewport_size(PHONE)

    page.wait_for_function(
        "(f) => Math.abs(f.querySelector('.figure-chart .tv-lightweight-charts').getBoundingClientRect().width"
        " - f.querySelector('.figure-chart').clientWidth) < 1",
        arg=bars.element_handle(),
    )
    phone_width = bars.evaluate(drawn_width)
    assert phone_width < PHONE["width"] < desktop_width
    assert page.evaluate("() => document.scrollingElement.scrollWidth <= innerWidth"), "nothing sticks out sideways"
    assert_bars_drawn_from(bars, chart)


def test_a_reopened_market_data_answer_draws_its_charts_badge_and_marks_from_its_run(
    page, fake_openai, market_data, research_env  # noqa: F811
):
    # 250.01 is in no payload: a flagged number; citations checked: marks on the markers.
    script_market_data_run(fake_openai, research_env, ["Apple closed at 250.01 USD on 2025-06-13 [1].", MARKET_ANSWER[1]])
    research_env(CITATION_VERIFY="1")
    live = ask_market_question(page)
    page.wait_for_function("(el) => el.dataset.trust === 'loaded'", arg=live.element_handle())
    run_id = live.get_attribute("data-run-id")
    charts = charts_of(run_events(page, live))
    live_badge = live.locator(".trust .confidence-badge")
    live_answer, live_badge_title = live.locator(".answer").inner_html(), live_badge.get_attribute("title")
    run_reads = []
    page.on("request", lambda request: run_reads.append(request.url) if request.url.endswith(f"/api/runs/{run_id}") else None)

    page.reload()
    page.locator("#conversations button").first.click()  # the newest: this one

    answer = page.locator(ANSWER)
    page.wait_for_function("(el) => el.dataset.trust === 'loaded'", arg=answer.element_handle())
    assert answer.get_attribute("data-run-id") == run_id
    assert answer.locator(".figures figure").evaluate_all("(fs) => fs.map((f) => f.dataset.chartId)") == ["c1", "c2"]
    assert_line_drawn_from(answer.locator('figure[data-kind="line"]'), charts["line"])
    assert_bars_drawn_from(answer.locator('figure[data-kind="bars"]'), charts["bars"])
    badge = answer.locator(".trust .confidence-badge")
    stored_score = page.evaluate(f"fetch('/api/runs/{run_id}').then((r) => r.json()).then((run) => run.confidence.score)")
    assert badge.get_attribute("data-score") == str(stored_score) == live_badge.get_attribute("data-score")
    assert badge.get_attribute("title") == live_badge_title
    # Citation marks and flagged numbers as the live answer showed them.
    assert answer.locator(".answer mark.flagged-number").all_inner_texts() == ["250.01", "250.01"]  # the sentence and the note under the answer
    assert answer.locator(".answer .citation.checked").count() == 3
    assert answer.locator(".answer").inner_html() == live_answer
    assert answer.locator("button.download-report").is_visible()
    assert len(run_reads) == 2, "the page read the run once; the test once"


def test_charts_survive_a_dropped_stream_and_a_replay_from_the_start_drawn_once(
    page, scripted_router, cut_first_stream, events_requests, reconnects_replay_from_the_start
):
    drawn = Gate()
    steps = research_events(before_answer=drawn)  # the chart comes before the gate, the answer after it
    scripted_router(*steps)

    answer = ask(page, RESEARCH_QUESTION, mode="research")
    figure = answer.locator(".figures figure")
    sync_api.expect(figure).to_have_count(1)
    figure.evaluate("(el) => { el.dataset.drawnBeforeTheDrop = 'yes'; }")
    drawn.open()  # the stream breaks after the first delta; the page reconnects and is sent everything again

    wait_until_finished(answer)
    assert len(events_requests) == 2, "the page reconnected once, and was sent every event again"
    assert figure.count() == 1 and figure.get_attribute("data-drawn-before-the-drop") == "yes", "not drawn again"
    assert answer.locator("canvas").count() == figure.locator("canvas").count()
    assert_bars_drawn_from(figure, REVENUE_CHART.payload())
    assert answer.locator(".answer h2").inner_text() == "Revenue growth over the last three quarters"


def test_a_reloaded_page_draws_the_running_answers_chart_again(page, scripted_router):
    later = Gate()
    steps = research_events()
    first_delta = next(i for i, step in enumerate(steps) if isinstance(step, DeltaEvent))
    steps.insert(first_delta + 1, later)
    scripted_router(*steps)
    answer = ask(page, RESEARCH_QUESTION, mode="research")
    sync_api.expect(answer.locator(".answer h2")).to_have_text("Revenue growth over the last three quarters")

    page.reload()
    answer = page.locator(ANSWER)
    sync_api.expect(answer.locator(".answer h2")).to_have_text("Revenue growth over the last three quarters")
    later.open()

    wait_until_finished(answer)
    assert answer.locator(".figures figure").count() == 1
    assert_bars_drawn_from(answer.locator("figure"), REVENUE_CHART.payload())


def test_a_resumed_attempt_replaces_the_charts_received_before_it(page, scripted_router):
    earlier = REVENUE_CHART.model_copy(update={"id": "c2", "title": "From the worker that died"})
    scripted_router(
        StatusEvent(phase="synthesizing", label="Writing the answer"),
        earlier,
        DeltaEvent(text="Text from the worker that died, "),
        HandOver(),
        StatusEvent(phase="synthesizing", label="Writing the answer"),
        REVENUE_CHART,
        DeltaEvent(text="Revenue was $391B [1]."),
        SourcesEvent(sources=RESEARCH_SOURCES),
        SUMMARY,
    )

    answer = ask(page, "How did Apple do?")

    wait_until_finished(answer)
    assert answer.locator(".figures .figure-title").all_inner_texts() == [REVENUE_CHART.title]


# --- follow-ups ---------------------------------------------------------------------------------------


def test_suggested_questions_come_from_the_last_rounds_gaps_once_the_run_is_done(page, scripted_router):
    before_done = Gate()
    scripted_router(
        RoundEvent(n=1, complete=False, gaps=["Apple's revenue"], follow_ups=["What was Apple's revenue?"]),
        RoundEvent(n=2, complete=False, gaps=["Azure's growth in the latest quarter"], follow_ups=["How fast did Azure grow?"]),
        DeltaEvent(text="Revenue was $391B [1]."),
        SourcesEvent(sources=[SOURCE_1]),
        before_done,
        SUMMARY,
    )
    answer = ask(page, "How did Apple and Microsoft do?", mode="research")
    sync_api.expect(answer.locator(".answer")).to_have_text("Revenue was $391B [1].")
    assert answer.locator(".follow-ups").is_hidden(), "not while the answer is being written"

    before_done.open()

    wait_until_finished(answer)
    assert answer.locator("button.follow-up").all_inner_texts() == [
        "How fast did Azure grow?",
        "Dig deeper: Azure's growth in the latest quarter",
    ]


def test_a_complete_run_suggests_nothing(page, scripted_router):
    scripted_router(RoundEvent(n=1, complete=True), DeltaEvent(text="Revenue was $391B [1]."), SourcesEvent(sources=[SOURCE_1]), SUMMARY)

    answer = ask(page, "How did Apple do?", mode="research")

    wait_until_finished(answer)
    assert answer.locator(".follow-ups").is_hidden()
    assert answer.locator("button.follow-up").count() == 0


def test_clicking_a_suggested_question_asks_it_in_the_same_conversation(page, market_data_run, scripted_router, posts):
    ask_market_question(page)
    suggestions = page.locator(ANSWER).first.locator("button.follow-up")
    assert suggestions.all_inner_texts() == [f"Dig deeper: {gap}" for gap in OPEN_GAPS]
    page.fill("#question", "a draft the click leaves alone")
    writing = Gate()
    scripted_router(
        StatusEvent(phase="synthesizing", label="Writing the answer"), writing, DeltaEvent(text="Azure grew 39% [1]."), SourcesEvent(sources=[SOURCE_1]), SUMMARY
    )

    suggestions.first.click()

    second = page.locator(ANSWER).nth(1)
    sync_api.expect(second.locator(".phase-label")).to_have_text("Writing the answer")
    assert suggestions.first.is_disabled() and page.locator("#ask").is_disabled(), "one question at a time"
    writing.open()
    wait_until_finished(second)
    assert second.locator(".answer").inner_text() == "Azure grew 39% [1]."
    [conversation_post, first_question, follow_up] = posts
    assert conversation_post.url.endswith("/api/conversations")
    assert follow_up.url == first_question.url, "posted to the same conversation"
    assert follow_up.post_data_json["content"] == "Dig deeper: Azure's growth in the latest quarter"
    assert page.locator(".turn.user .bubble").all_inner_texts() == [MARKET_QUESTION, "Dig deeper: Azure's growth in the latest quarter"]
    assert page.locator("#conversations button").count() == 1
    assert page.input_value("#question") == "a draft the click leaves alone"
    assert suggestions.first.is_enabled()


# --- exports ------------------------------------------------------------------------------------------


def test_copy_puts_the_answer_and_its_numbered_sources_on_the_clipboard_as_markdown(page, market_data_run, page_server_url):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=page_server_url)
    answer = ask_market_question(page)
    events = run_events(page, answer)

    answer.locator("button.copy-markdown").click()

    sync_api.expect(answer.locator(".action-note")).to_have_text("Copied.")
    text = "".join(event.data["text"] for event in events if event.type == "delta")
    listed = [f"- [{s['n']}] [{s['title']}]({s['url']}) — market data, as of {s['as_of']}" for s in sources_of(events)]
    assert page.evaluate("() => navigator.clipboard.readText()") == f"{text}\n\nSources:\n" + "\n".join(listed) + "\n"
    assert text.startswith(MARKET_ANSWER[0])


def test_the_report_download_holds_answer_sources_figures_trace_and_facts(page, market_data_run):
    answer = ask_market_question(page)
    events = run_events(page, answer)
    run = page.request.get(f"/api/runs/{answer.get_attribute('data-run-id')}").json()
    assert run["facts"], "the run computed facts from its market data"

    with page.expect_download() as downloading:
        answer.locator("button.download-report").click()

    download = downloading.value
    assert download.suggested_filename.endswith("-report.md")
    report = Path(download.path()).read_text(encoding="utf-8")
    text = "".join(event.data["text"] for event in events if event.type == "delta")
    assert report.startswith(f"# {MARKET_QUESTION}\n")
    assert f"## Answer\n\n{text}\n\n## Sources\n\n" in report
    for source in sources_of(events):
        assert f"- [{source['n']}] [{source['title']}]({source['url']}) — market data, as of {source['as_of']}" in report
    chart = charts_of(events)["bars"]
    assert f"### {chart['title']}" in report
    for series in chart["series"]:
        cells = " | ".join(f"{y / 1e9:,.2f}" for _, y in series["points"])
        assert f"| {series['name']} \\[{series['source_n']}\\] | {cells} |" in report
    assert f"1. **q1** (numerical, market data): {APPLE_MONTH.question}" in report
    assert f"2. **q2** (numerical, market data): {REVENUES.question}" in report
    assert "- **Round 1**: incomplete · score 6/10 · sub-questions q1, q2" in report
    assert f"  - Gaps: {'; '.join(OPEN_GAPS)}" in report
    for fact in run["facts"]:
        assert f"**{fact['id']}: {fact['label']}**" in report
        assert f"  - Formula: {fact['formula']}" in report


def test_a_charts_figures_download_as_csv_rows_with_their_sources(page, market_data_run):
    answer = ask_market_question(page)
    events = run_events(page, answer)
    chart = charts_of(events)["bars"]
    urls = {source["n"]: source["url"] for source in sources_of(events)}

    with page.expect_download() as downloading:
        answer.locator('figure[data-kind="bars"] button.figure-csv').click()

    download = downloading.value
    assert download.suggested_filename == "total-revenue-quarterly-aapl-vs-msft.csv"
    rows = list(csv.reader(io.StringIO(Path(download.path()).read_text(encoding="utf-8"))))
    assert rows[0] == ["series", "period", "value", "unit", "as_of", "source_n", "source_title", "source_url"]
    assert [(r[0], r[1], float(r[2]), r[3], r[4], int(r[5]), r[7]) for r in rows[1:]] == [
        (series["name"], x, y, "USD", chart["as_of"], series["source_n"], urls[series["source_n"]])
        for series in chart["series"]
        for x, y in series["points"]
    ]


MSFT_QUARTERS = ["Q3 FY2026 (Jan–Mar 2026)", "Q4 FY2026 (Apr–Jun 2026)", "Q1 FY2027 (Jul–Sep 2026)"]
MSFT_FINANCIALS = "https://finance.yahoo.com/quote/MSFT/financials"


def fiscal_quarters_chart(*more: Finding) -> ChartEvent:
    """The chart the server draws of Microsoft's revenue in Q3 FY2026, Q4 FY2026 and Q1 FY2027 (its fiscal
    year ends in June, so the last is Jul-Sep 2026), and of `more` findings' statements beside it."""
    june = FiscalCalendar(year_end_month=6)
    msft = statement_finding(
        "MSFT", [date(2026, 9, 30), date(2026, 6, 30), date(2026, 3, 31)], [80e9, 76e9, 70e9], fiscal_calendars={"MSFT": june}
    )
    for finding in more:
        msft.market_data.results += finding.market_data.results
        msft.fiscal_calendars |= finding.fiscal_calendars
    sources = [
        Source(n=n, title=result.title, url=result.url, kind="market_data")
        for n, result in enumerate(msft.market_data.results, start=1)
    ]
    [chart] = charts_for([msft], sources)
    return chart


def ask_for_chart(page: sync_api.Page, scripted_router, chart: ChartEvent) -> sync_api.Locator:
    sources = [
        Source(n=one.source_n, title="t", url=f"https://finance.yahoo.com/quote/{one.name}/financials", kind="market_data")
        for one in chart.series
    ]
    summary = RunSummary(mode="research", answer="", sources=sources, charts=[chart])
    scripted_router(chart, DeltaEvent(text="Revenue rose each quarter [1]."), SourcesEvent(sources=sources), summary)
    answer = ask(page, "Microsoft's revenue over its last three quarters", mode="research")
    wait_until_finished(answer)
    return answer


def csv_of(figure: sync_api.Locator) -> list[list[str]]:
    with figure.page.expect_download() as downloading:
        figure.locator("button.figure-csv").click()
    return list(csv.reader(io.StringIO(Path(downloading.value.path()).read_text(encoding="utf-8"))))


def test_fiscal_quarters_across_a_fiscal_year_are_drawn_tabled_and_exported_oldest_first(page, scripted_router):
    chart = fiscal_quarters_chart()
    answer = ask_for_chart(page, scripted_router, chart)
    figure = answer.locator('figure[data-kind="bars"]')

    # Drawn left to right Q3 FY2026, Q4 FY2026, Q1 FY2027: bars as tall as 70, 76 and 80 billion.
    assert_bars_drawn_from(figure, chart.payload())
    assert periods_in_order(chart.payload()) == MSFT_QUARTERS
    figure.locator("button.figure-table-toggle").click()
    assert figure.locator("table.figure-data thead th").all_inner_texts() == ["USD billions", *MSFT_QUARTERS]
    assert figure.locator("table.figure-data tbody td").all_inner_texts() == ["70.00", "76.00", "80.00"]
    rows = csv_of(figure)
    assert [(row[0], row[1], float(row[2])) for row in rows[1:]] == [
        ("MSFT", MSFT_QUARTERS[0], 70e9), ("MSFT", MSFT_QUARTERS[1], 76e9), ("MSFT", MSFT_QUARTERS[2], 80e9)
    ]

    # Reopened from storage: the run's stored chart, drawn in the same order.
    page.reload()
    page.locator("#conversations button").first.click()
    reopened = page.locator(ANSWER)
    page.wait_for_function("(el) => el.dataset.trust === 'loaded'", arg=reopened.element_handle())
    figure = reopened.locator('figure[data-kind="bars"]')
    assert_bars_drawn_from(figure, chart.payload())
    figure.locator("button.figure-table-toggle").click()
    assert figure.locator("table.figure-data thead th").all_inner_texts() == ["USD billions", *MSFT_QUARTERS]


def test_a_comparisons_periods_are_merged_in_the_order_of_their_ends_not_of_the_series(page, scripted_router):
    # ADP's fiscal year also ends in June; its series starts a quarter before Microsoft's and stops before
    # Q1 FY2027. Merging the two series in the order they list periods would put Q2 FY2026 last.
    adp = statement_finding(
        "ADP", [date(2026, 6, 30), date(2026, 3, 31), date(2025, 12, 31)], [51e9, 55e9, 50e9],
        fiscal_calendars={"ADP": FiscalCalendar(year_end_month=6)},
    )  # fmt: skip
    chart = fiscal_quarters_chart(adp)
    assert [series.name for series in chart.series] == ["MSFT", "ADP"]
    answer = ask_for_chart(page, scripted_router, chart)
    figure = answer.locator('figure[data-kind="bars"]')

    figure.locator("button.figure-table-toggle").click()

    periods = ["Q2 FY2026 (Oct–Dec 2025)", *MSFT_QUARTERS]
    assert figure.locator("table.figure-data thead th").all_inner_texts() == ["USD billions", *periods]
    assert [row.locator("td").all_inner_texts() for row in figure.locator("table.figure-data tbody tr").all()] == [
        ["—", "70.00", "76.00", "80.00"],
        ["50.00", "55.00", "51.00", "—"],
    ]
    figure.locator("button.figure-table-toggle").click()
    assert_bars_drawn_from(figure, chart.payload())


# --- trust at a glance ----------------------------------------------------------------------------------

def trusted_answer(answer: sync_api.Locator) -> None:
    """Wait for the run to end and the page to have read the stored run's confidence and signals."""
    wait_until_finished(answer)
    answer.page.wait_for_function("(el) => el.dataset.trust === 'loaded'", arg=answer.element_handle())


def test_the_confidence_badge_follows_the_rounds_then_the_stored_run_with_its_components_on_hover_and_focus(page, scripted_router):
    before_done = Gate()
    scripted_router(
        RoundEvent(n=1, complete=False, gaps=["margins"], confidence=0.5),
        RoundEvent(n=2, complete=True, confidence=0.88),
        DeltaEvent(text="Revenue was $391B [1]."),
        SourcesEvent(sources=[SOURCE_1]),
        before_done,
        RunSummary(mode="research", answer="", sources=[SOURCE_1], confidence=run_confidence(0.82)),
    )
    answer = ask(page, "How did Apple do?", mode="research")
    badge = answer.locator(".trust .confidence-badge")
    sync_api.expect(badge).to_have_attribute("data-score", "0.88")
    assert " ".join(badge.inner_text().split()) == "Confidence 0.88"
    assert "low" not in badge.get_attribute("class")

    before_done.open()
    trusted_answer(answer)

    assert badge.get_attribute("data-score") == "0.82", "the stored run's confidence replaces the last round's"
    assert " ".join(badge.inner_text().split()) == "Confidence 0.82"
    title = badge.get_attribute("title")
    assert "Coverage 0.90" in title and "Source diversity 0.60" in title and "threshold 0.75" in title
    popover = badge.locator(".confidence-components")
    assert popover.is_hidden()
    badge.hover()
    sync_api.expect(popover).to_be_visible()
    rows = popover.locator("dl > div")
    assert [row.get_attribute("data-component") for row in rows.all()] == list(COMPONENTS)
    assert rows.locator("dd").all_inner_texts() == ["0.90", "0.70", "0.60", "0.80", "1.00"]
    assert popover.locator(".confidence-summary").inner_text() == "Two rounds; margins remain uncertain."
    if shots := os.environ.get("CHAT_PAGE_SCREENSHOTS"):
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / "confidence-components-1366x900.png"))
    page.mouse.move(0, 0)
    sync_api.expect(popover).to_be_hidden()
    # Keyboard: the badge is in the tab order, and focus shows the same popover.
    page.locator("#question").focus()
    for _ in range(12):
        if badge.evaluate("(el) => el === document.activeElement"):
            break
        page.keyboard.press("Shift+Tab")
    assert badge.evaluate("(el) => el === document.activeElement"), "the badge is reachable with the keyboard"
    sync_api.expect(popover).to_be_visible()
    assert badge.get_attribute("aria-describedby") == popover.get_attribute("id")


def test_a_confidence_lowered_by_the_citation_check_shows_low_with_the_reason_in_its_title(page, scripted_router):
    checked = run_confidence(0.61).model_copy(update={"evidence_score": 0.89, "citation_support": 0.375})
    scripted_router(
        RoundEvent(n=1, complete=True, confidence=0.89),
        DeltaEvent(text="Revenue was $391B [1]."),
        SourcesEvent(sources=[SOURCE_1]),
        RunSummary(mode="research", answer="", sources=[SOURCE_1], confidence=checked),
    )
    answer = ask(page, "How did Apple do?", mode="research")
    trusted_answer(answer)

    badge = answer.locator(".trust .confidence-badge")
    sync_api.expect(badge).to_have_attribute("data-score", "0.61")
    assert " ".join(badge.inner_text().split()) == "Low confidence 0.61"
    title = badge.get_attribute("title")
    assert "Citations supported 0.38" in title and "lowered from 0.89 by the citation check" in title


PAYWALLED_SOURCES = [
    Source(n=n, title=title, url=url, kind="web", domain_type="major_news")
    for n, (title, url) in enumerate(
        [
            ("Apple's Services hit a record - Reuters", "https://www.reuters.com/technology/apple-services"),
            ("Apple's margins - FT", "https://www.ft.com/content/apple-margins"),
            ("Apple's buyback - Bloomberg", "https://www.bloomberg.com/news/apple-buyback"),
            ("Apple and China - WSJ", "https://www.wsj.com/tech/apple-china"),
            ("Apple's guidance - Reuters", "https://www.reuters.com/technology/apple-guidance"),
        ],
        start=1,
    )
]


def test_citations_that_could_not_be_checked_leave_the_confidence_and_the_badge_and_sources_say_why(
    page, scripted_router
):
    # The run: evidence 0.975, citing five pages the checker could not fetch.
    checks = [
        CitationCheck(n=n, marker_index=n - 1, status="unreachable", reason=reason)
        for n, reason in enumerate(["http_403", "http_403", "http_401", "timeout", "http_403"], start=1)
    ]
    confidence = checked_confidence(run_confidence(0.975), checks)
    scripted_router(
        RoundEvent(n=1, complete=True, confidence=0.975),
        DeltaEvent(text="Services hit a record [1]. Margins held [2]. Buybacks went on [3]. China slowed [4]. Guidance rose [5]."),
        SourcesEvent(sources=PAYWALLED_SOURCES),
        VerificationEvent(citations=checks),
        RunSummary(mode="research", answer="", sources=PAYWALLED_SOURCES, verification=checks, confidence=confidence),
    )
    answer = ask(page, "How did Apple do?", mode="research")
    trusted_answer(answer)

    badge = answer.locator(".trust .confidence-badge")
    assert badge.get_attribute("data-score") == "0.975"
    assert "low" not in badge.get_attribute("class")
    assert " ".join(badge.inner_text().split()) == "Confidence 0.98 5 unchecked"
    why = "5 citations could not be checked (3 HTTP 403, 1 HTTP 401, 1 timeout); they leave the confidence as it was"
    assert why in badge.get_attribute("title")
    badge.hover()
    sync_api.expect(badge.locator(".confidence-unchecked-why")).to_have_text(f"{why}.")
    assert answer.locator(".sources .source-verification").all_inner_texts() == [
        "citations: 1 could not be checked (HTTP 403)",
        "citations: 1 could not be checked (HTTP 403)",
        "citations: 1 could not be checked (HTTP 401)",
        "citations: 1 could not be checked (timeout)",
        "citations: 1 could not be checked (HTTP 403)",
    ]
    assert answer.locator(".answer .citation").nth(3).get_attribute("title") == (
        "Apple and China - WSJ — source could not be read to check (timeout)"
    )
    run = page.request.get(f"/api/runs/{answer.get_attribute('data-run-id')}").json()
    assert run["confidence"]["score"] == 0.975 and run["confidence"]["evidence_score"] is None
    assert run["confidence"]["citations_unchecked"] == 5
    assert run["confidence"]["unchecked_reasons"] == {"http_403": 3, "http_401": 1, "timeout": 1}
    assert [check["reason"] for check in run["verification"]] == ["http_403", "http_403", "http_401", "timeout", "http_403"]
    page.mouse.move(0, 0)  # the badge's popover off the buttons
    with page.expect_download() as downloading:
        answer.locator("button.download-report").click()
    report = Path(downloading.value.path()).read_text(encoding="utf-8")
    assert "- Score: 0.975 (threshold 0.75)\n" in report
    assert f"- Unchecked citations: {why}\n" in report
    assert "- Marker 4 [4]: unreachable (timeout)\n" in report


@pytest.mark.parametrize(
    ("round_score", "stored", "why"),
    [(0.41, run_confidence(0.41), "below the threshold"), (0.9, run_confidence(0.9, shallow=True), "shallow evidence")],
    ids=["below-threshold", "shallow"],
)
def test_low_confidence_marks_the_badge_as_a_warning(page, scripted_router, round_score, stored, why):
    scripted_router(
        RoundEvent(n=1, complete=True, confidence=round_score, shallow=stored.shallow),
        DeltaEvent(text="Revenue was $391B [1]."),
        DeltaEvent(text="\n\nNote: low confidence in the evidence behind this answer."),
        SourcesEvent(sources=[SOURCE_1]),
        RunSummary(mode="research", answer="", sources=[SOURCE_1], confidence=stored),
    )
    answer = ask(page, "How did Apple do?", mode="research")
    trusted_answer(answer)

    badge = answer.locator(".trust .confidence-badge")
    assert "low" in badge.get_attribute("class").split(), why
    assert badge.locator(".confidence-label").inner_text() == "Low confidence"
    assert badge.evaluate("(el) => getComputedStyle(el.querySelector('.confidence-label'), '::before').content") == '"⚠ "'
    assert badge.is_visible()
    assert (badge.locator(".confidence-shallow").count() == 1) == stored.shallow
    # The backend's note stays the one place that words the warning: the badge does not repeat it.
    assert answer.get_by_text("low confidence in the evidence").count() == 1


def test_a_quick_answer_shows_no_badge(page, scripted_router):
    scripted_router(DeltaEvent(text="Apple closed at $196.45 [1]."), SourcesEvent(sources=[SOURCE_2]), RunSummary(mode="quick", answer="", sources=[SOURCE_2]))

    answer = ask(page, "Apple's price?", mode="quick")
    trusted_answer(answer)

    assert answer.locator(".confidence-badge").count() == 0
    assert answer.locator(".trust").is_hidden()


CONTRADICTION = Contradiction(
    claim_a="Services revenue rose 14%", finding_a="q2", claim_b="Services revenue rose 9%", finding_b="q3", severity=0.8
)


def test_contradictions_are_listed_in_the_process_panel_and_flagged_by_the_answer(page, scripted_router):
    minor = Contradiction(claim_a="Guidance was raised", finding_a="q1", claim_b="Guidance was kept", finding_b="q3", severity=0.3)
    scripted_router(
        RoundEvent(n=1, complete=False, gaps=["margins"], confidence=0.6, contradictions=[CONTRADICTION]),
        RoundEvent(n=2, complete=True, confidence=0.8, contradictions=[CONTRADICTION, minor], stop_reason="complete"),
        DeltaEvent(text="Services grew [1]."),
        SourcesEvent(sources=[SOURCE_1]),
        SUMMARY,
    )
    answer = ask(page, "How did Apple's Services do?", mode="research")
    wait_until_finished(answer)

    listed = answer.locator(".process .contradictions li")
    assert listed.all_text_contents() == [
        "“Services revenue rose 14%” (q2) vs “Services revenue rose 9%” (q3), severity 0.80",
        "“Guidance was raised” (q1) vs “Guidance was kept” (q3), severity 0.30",
    ], "each once, though the second round reports the first again"
    assert answer.locator(".rounds li").last.text_content() == "Round 2: complete (stopped: complete)"
    process = answer.locator("details.process")
    assert process.get_attribute("open") is None
    flag = answer.locator(".trust button.contradictions-flag")
    assert flag.inner_text() == "⚠ 2 contradictions between findings"

    flag.click()

    assert process.get_attribute("open") is not None
    sync_api.expect(listed.first).to_be_visible()


CHECKED_SOURCES = [
    Source(n=1, title="Apple 10-K", url="https://investor.apple.com/10k", kind="web", domain_type="company_ir", published=date(2024, 11, 1)),
    Source(n=2, title="A blog on Apple", url="https://blog.example.com/apple", kind="web", domain_type="blog"),
    SOURCE_2.model_copy(update={"n": 3, "as_of": "2025-06-13"}),
]
CHECKS = [
    CitationCheck(n=1, marker_index=0, status="supported", evidence="Total net sales were $391.0 billion"),
    CitationCheck(n=2, marker_index=1, status="unsupported", evidence="Apple sold more phones"),
    CitationCheck(n=1, marker_index=2, status="unreachable"),
    CitationCheck(n=3, marker_index=3, status="supported", evidence="Close 196.45"),
]


def test_citations_are_marked_once_verification_arrives_and_summed_up_per_source(page, scripted_router):
    before_verification, before_done = Gate(), Gate()
    scripted_router(
        DeltaEvent(text="Revenue was $391B [1]. Services grew 20% [2]. Margins widened [1]. "),
        DeltaEvent(text="It closed at $196.45 [3]. Code like `[2]` is not a marker."),
        SourcesEvent(sources=CHECKED_SOURCES),
        before_verification,
        VerificationEvent(citations=CHECKS),
        before_done,
        RunSummary(mode="research", answer="", sources=CHECKED_SOURCES, verification=CHECKS),
    )
    answer = ask(page, "How did Apple do?", mode="research")
    markers = answer.locator(".answer .citation")
    sync_api.expect(markers).to_have_count(4)
    kinds = answer.locator(".sources .source-kind")
    assert kinds.all_inner_texts() == ["web · company IR · published 2024-11-01", "web · blog", "market data, as of 2025-06-13"]
    assert answer.locator(".answer .citation.checked").count() == 0, "nothing is marked before the checks come"

    before_verification.open()

    sync_api.expect(answer.locator(".answer .citation.checked")).to_have_count(4)
    assert answer.get_attribute("data-state") == "running", "marked from the event, before the run is done"
    assert [marker.get_attribute("data-verification") for marker in markers.all()] == [
        "supported", "unsupported", "unreachable", "supported"
    ]
    before_done.open()
    trusted_answer(answer)  # the last renders are done: the marks are read from the final text
    glyphs = [marker.evaluate("(el) => getComputedStyle(el, '::after').content") for marker in markers.all()]
    assert glyphs == ['"✓"', '"✗"', '"?"', '"✓"']
    assert markers.nth(0).get_attribute("title") == "Apple 10-K — supported by its source: “Total net sales were $391.0 billion”"
    assert markers.nth(1).get_attribute("title") == "A blog on Apple — not supported by its source: “Apple sold more phones”"
    assert markers.nth(2).get_attribute("title") == "Apple 10-K — source could not be read to check"
    assert answer.locator(".sources .source-verification").all_inner_texts() == [
        "citations: 1 supported, 1 could not be checked",
        "citations: 1 unsupported",
        "citations: 1 supported",
    ]
    assert "unsupported" in answer.locator(".sources li").nth(1).locator(".source-verification").get_attribute("class")
    if shots := os.environ.get("CHAT_PAGE_SCREENSHOTS"):
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / "citation-marks-1366x900.png"))
    assert answer.locator(".answer .citation.checked").count() == 4, "the marks survive the final render"


def test_a_check_whose_marker_is_not_the_rendered_one_is_not_put_on_another(page, scripted_router):
    # The second check names marker 1 as source 3, but marker 1 cites source 2: it is left unmarked.
    checks = [CHECKS[0], CitationCheck(n=3, marker_index=1, status="unsupported")]
    scripted_router(
        DeltaEvent(text="Revenue was $391B [1]. Services grew [2]."),
        SourcesEvent(sources=CHECKED_SOURCES),
        VerificationEvent(citations=checks),
        RunSummary(mode="research", answer="", sources=CHECKED_SOURCES, verification=checks),
    )
    answer = ask(page, "How did Apple do?", mode="research")
    trusted_answer(answer)

    markers = answer.locator(".answer .citation")
    assert markers.nth(0).get_attribute("data-verification") == "supported"
    assert markers.nth(1).get_attribute("data-verification") is None


def test_numbers_the_market_data_does_not_bear_out_are_marked_where_they_appear(page, scripted_router):
    signals = {"numbers": {"checked": 3, "computed": 0, "unmatched": 1, "unmatched_values": [{"value": "12.3%", "sources": [2]}]}}
    scripted_router(
        DeltaEvent(text="Margin was 12.3% [2] on revenue of $391.04 billion [2]; a rival's was 112.3% and 12.35%.\n\n"),
        DeltaEvent(text="| Year | Margin |\n|---|---:|\n| 2024 | 12.3% |\n"),
        SourcesEvent(sources=[SOURCE_2]),
        RunSummary(mode="research", answer="", sources=[SOURCE_2], signals=signals),
    )
    answer = ask(page, "Apple's margin?", mode="research")
    trusted_answer(answer)

    flagged = answer.locator(".answer mark.flagged-number")
    assert flagged.all_inner_texts() == ["12.3%", "12.3%"], "each whole occurrence, not inside 112.3% or 12.35%"
    assert {mark.get_attribute("title") for mark in flagged.all()} == {"not found in the market data"}
    assert answer.locator(".answer table mark.flagged-number").count() == 1
    assert answer.locator(".answer").inner_text().startswith("Margin was 12.3% [2] on revenue of $391.04 billion [2]")


HOSTILE_MARKDOWN = (
    "Revenue rose [1]. <script>window.__pwned=1</script>\n\n"
    '<img src=x onerror="window.__pwned=2"> See [the filing](javascript:window.__pwned=3), '
    "![chart](data:image/svg+xml;base64,PHN2Zz4=) and [Apple's 10-K](https://investor.apple.com/10k).\n\n"
    "[evil]: javascript:window.__pwned=4\n"
)


def test_the_report_escapes_the_answers_raw_html_and_drops_links_that_are_not_http(page, scripted_router):
    scripted_router(
        DeltaEvent(text=HOSTILE_MARKDOWN),
        SourcesEvent(sources=[SOURCE_1]),
        RunSummary(mode="quick", answer="", sources=[SOURCE_1]),
    )
    answer = ask(page, "How did Apple do?")
    trusted_answer(answer)

    with page.expect_download() as downloading:
        answer.locator("button.download-report").click()
    report = Path(downloading.value.path()).read_text(encoding="utf-8")
    answer_section = report.split("## Answer\n\n", 1)[1].split("\n\n## Sources", 1)[0]

    assert "<script" not in report and "<img" not in report
    assert "javascript:" not in report and "data:image" not in report
    assert "&lt;script>window.__pwned=1&lt;/script>" in answer_section
    assert "See the filing, chart and [Apple's 10-K](https://investor.apple.com/10k)." in answer_section
    assert answer_section.startswith("Revenue rose [1].")


def test_the_report_carries_confidence_the_trace_and_the_citation_checks(page, scripted_router):
    trace = [
        TraceEntry(
            n=1,
            confidence=Confidence(score=0.5, shallow=True, **COMPONENTS),
            new_sources=2,
            sources=2,
            weak_areas=["margins"],
            contradictions=[CONTRADICTION],
            goes_on_because="shallow",
        ),
        TraceEntry(n=2, confidence=Confidence(score=0.82, shallow=False, **COMPONENTS), new_sources=1, sources=3, stop_reason="complete"),
    ]
    scripted_router(
        RoundEvent(n=1, complete=False, confidence=0.5, shallow=True),
        RoundEvent(n=2, complete=True, confidence=0.82),
        DeltaEvent(text="Revenue was $391B [1]. Services grew 20% [2]. Margins widened [1]. It closed at $196.45 [3]."),
        SourcesEvent(sources=CHECKED_SOURCES),
        VerificationEvent(citations=CHECKS),
        RunSummary(mode="research", answer="", sources=CHECKED_SOURCES, verification=CHECKS, confidence=run_confidence(0.82), trace=trace),
    )
    answer = ask(page, "How did Apple do?", mode="research")
    trusted_answer(answer)

    with page.expect_download() as downloading:
        answer.locator("button.download-report").click()
    report = Path(downloading.value.path()).read_text(encoding="utf-8")

    assert "- [1] [Apple 10-K](https://investor.apple.com/10k) — web, company ir, published 2024-11-01" in report
    assert (
        "## Confidence\n\n- Score: 0.82 (threshold 0.75)\n"
        "- Components: coverage 0.9, credibility 0.7, diversity 0.6, evidence 0.8, consistency 1\n"
        "- Shallow evidence: no\n- Summary: Two rounds; margins remain uncertain.\n\n"
    ) in report
    assert (
        "## Citation checks\n\n"
        "- Marker 1 [1]: supported: “Total net sales were $391.0 billion”\n"
        "- Marker 2 [2]: unsupported: “Apple sold more phones”\n"
        "- Marker 3 [1]: unreachable\n"
        "- Marker 4 [3]: supported: “Close 196.45”\n"
    ) in report
    assert "### Evidence by round\n\n- **Round 1**: confidence 0.5 · 2 new sources (2 in all) · shallow · went on: shallow\n" in report
    assert "  - Weak areas: margins\n" in report
    assert "  - Contradiction (severity 0.8): Services revenue rose 14% (q2) vs Services revenue rose 9% (q3)\n" in report
    assert "- **Round 2**: confidence 0.82 · 1 new sources (3 in all) · stopped: complete" in report


def test_a_full_run_verifies_its_citations_and_the_page_marks_them(page, market_data_run, research_env):
    """The real pipeline from the fakes, with citation verification on: the `verification` event comes
    after the last delta and the page marks the very markers it names."""
    research_env(CITATION_VERIFY="1")
    answer = ask_market_question(page)
    trusted_answer(answer)
    events = run_events(page, answer)
    verification = [event.data for event in events if event.type == "verification"]
    assert verification, "the run sent a verification event"
    [checks] = [data["citations"] for data in verification]
    assert checks, "the answer's market data citations were checked"
    types = [event.type for event in events]
    assert types.index("verification") > max(i for i, kind in enumerate(types) if kind == "delta")
    markers = answer.locator(".answer .citation")
    sync_api.expect(answer.locator(".answer .citation.checked")).to_have_count(len(checks))
    for check in checks:
        marker = markers.nth(check["marker_index"])
        assert marker.get_attribute("data-n") == str(check["n"])
        assert marker.get_attribute("data-verification") == check["status"]
    run = page.request.get(f"/api/runs/{answer.get_attribute('data-run-id')}").json()
    assert run["verification"] == checks
