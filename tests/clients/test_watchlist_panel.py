"""The chat page's watchlist panel, driven in headless Chromium against the running app.

Symbols are checked by the fake Yahoo and the changes found in the fake SEC's filings (tests/chat/
test_briefs.py's fixtures); the one model call of a brief written by a run goes to the fake OpenAI server.
A brief "now" finds nothing in the fakes' 2025 data, so it is answered at once with no run; a brief whose
window ends on 2025-01-31 finds Apple's 8-K and 10-Q and is written by a research run.
"""

from __future__ import annotations

import asyncio
import re
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from django.core import mail

from chat.models import Brief, Delivery, Watchlist
from chat.services.briefs import start_brief
from datascraper.schemas import DeltaEvent, SourcesEvent, StatusEvent
from tests.clients.test_chat_page import (  # noqa: F401 (the fixtures)
    CHROMIUM,
    SOURCE_1,
    SUMMARY,
    Gate,
    browser,
    page_errors,
    scripted_router,
    sync_api,
)
from tests.datascraper.conftest import filed, sec_server  # noqa: F401 (the fixtures)
from tests.datascraper.research_support import script_synthesis

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"),
]

BROWSER_TIMEZONE = "Europe/Paris"
HEADLINE = "Apple reports first quarter results"
BRIEF_ANSWER = (
    "Apple filed its 10-Q for the period ending 2024-12-28 on 2025-01-31 [1]. ",
    f'Its 8-K of 2025-01-30 carried the release "{HEADLINE}" [3]. ',
    "AAPL closed at 149.56 USD on 2025-01-30 [4].",
)
PANEL = "#watchlists"
BRIEFS = "#briefs > li.brief"


@pytest.fixture
def page(browser, page_server_url, page_errors) -> Iterator[sync_api.Page]:  # noqa: F811
    """The chat page in a fresh profile whose time zone is Paris's; page errors fail the test."""
    context = browser.new_context(base_url=page_server_url, timezone_id=BROWSER_TIMEZONE)
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    page.on("console", lambda message: page_errors.append(message.text) if message.type == "error" else None)
    page.goto("/")
    yield page
    context.close()
    assert page_errors == [], f"the page logged errors: {page_errors}"


def fill_in(panel: sync_api.Locator, fields: dict[str, str]) -> None:
    for label, value in fields.items():
        panel.get_by_label(label, exact=True).fill(value)


class BriefWriter(threading.Thread):
    """A brief of the window ending 2025-01-31 12:00 UTC, started and written to the end, its deliveries
    settled, on an event loop of its own (the test's thread holds Playwright's), as the scheduler would
    start it. `started` is set once the brief is stored with its run."""

    def __init__(self, watchlist_id: uuid.UUID) -> None:
        super().__init__(name="brief-writer")
        self.watchlist_id = watchlist_id
        self.started = threading.Event()
        self.brief_id: uuid.UUID | None = None

    def run(self) -> None:
        asyncio.run(self.write())

    async def write(self) -> None:
        watchlist = await Watchlist.objects.aget(pk=self.watchlist_id)
        brief = await start_brief(watchlist, until=datetime(2025, 1, 31, 12, tzinfo=UTC))
        self.brief_id = brief.pk
        self.started.set()
        unsettled = Delivery.objects.filter(brief=brief, status__in=[Delivery.Status.PENDING, Delivery.Status.RETRYING])
        async with asyncio.timeout(30):
            while (await Brief.objects.aget(pk=brief.pk)).status == Brief.Status.RUNNING or await unsettled.aexists():
                await asyncio.sleep(0.05)


def open_panel(page: sync_api.Page) -> sync_api.Locator:
    page.get_by_role("button", name="Watchlists").click()
    return page.locator(PANEL)


def create_watchlist(panel: sync_api.Locator, fields: dict[str, str]) -> sync_api.Locator:
    """Made through the form, by the fields' labels; the watchlist's button in the list."""
    fill_in(panel, fields)
    panel.get_by_role("button", name="Create").click()
    pick = panel.locator("#watchlist-list button", has_text=fields["Name"])
    sync_api.expect(pick).to_have_attribute("aria-current", "true")
    return pick


def test_a_watchlist_is_made_edited_and_refused_in_the_panel_and_its_briefs_read_as_research_answers(
    page,
    page_errors,  # noqa: F811
    filed,  # noqa: F811
    fake_openai,
    verifying,
):
    panel = open_panel(page)
    assert page.locator("#transcript").is_hidden() and page.locator("#ask-form").is_hidden()
    assert panel.get_by_label("Time zone").input_value() == BROWSER_TIMEZONE  # the browser's, by default

    # Created through the form, then listed and open for editing.
    pick = create_watchlist(
        panel, {"Name": "Morning", "Symbols": "aapl, MSFT", "Schedule": "30 7 * * 1-5", "E-mail": "me@example.com"}
    )
    sync_api.expect(pick).to_contain_text("AAPL, MSFT")
    watchlist = Watchlist.objects.get(name="Morning")
    assert (watchlist.symbols, watchlist.schedule, watchlist.timezone) == (
        ["AAPL", "MSFT"],
        "30 7 * * 1-5",
        BROWSER_TIMEZONE,
    )

    # Its settings opened, its symbols changed, then a schedule the API refuses: the message names the
    # field, which is marked.
    editor = panel.locator("#watchlist-form-title")
    sync_api.expect(editor).to_have_text("Edit Morning")
    editor.click()
    panel.get_by_label("Symbols").fill("AAPL")
    panel.get_by_role("button", name="Save changes").click()
    sync_api.expect(page.locator("#watchlist-meta")).to_contain_text("AAPL · 30 7 * * 1-5 (Europe/Paris)")
    watchlist.refresh_from_db()
    assert watchlist.symbols == ["AAPL"]
    panel.get_by_label("Schedule").fill("every morning")
    panel.get_by_role("button", name="Save changes").click()
    error = page.locator("#watchlist-error")
    sync_api.expect(error).to_contain_text("schedule: ")
    sync_api.expect(panel.get_by_label("Schedule")).to_have_attribute("aria-invalid", "true")
    watchlist.refresh_from_db()
    assert watchlist.schedule == "30 7 * * 1-5"
    page_errors.remove("Failed to load resource: the server responded with a status of 400 (Bad Request)")

    # Brief now: nothing material in the fakes' data today, said at once, no model call.
    panel.get_by_role("button", name="Brief now").click()
    first = page.locator(BRIEFS).first
    sync_api.expect(first).to_have_attribute("data-status", "done")
    sync_api.expect(first.locator("article.assistant .answer")).to_contain_text("Nothing material changed since")
    assert fake_openai.requests == []
    sync_api.expect(first.locator(".brief-deliveries")).to_have_text("Deliveries: e-mail delivered (1 attempt)")
    assert [message.to for message in mail.outbox] == [["me@example.com"]]

    # A brief with a run: listed first, its changes linked to their sources, its answer read as a research
    # answer is (the run's events, the citation checks, the confidence badge).
    script_synthesis(fake_openai, *BRIEF_ANSWER)
    writer = BriefWriter(watchlist.pk)
    writer.start()
    writer.join()
    brief_id = writer.brief_id
    pick.click()
    written = page.locator(BRIEFS).first
    sync_api.expect(written).to_have_attribute("data-brief-id", str(brief_id))
    sync_api.expect(page.locator(BRIEFS)).to_have_count(2)
    [stored] = [c for c in Brief.objects.get(pk=brief_id).changes if c["source"].get("form") == "8-K"]
    eight_k = written.locator(".brief-changes li[data-kind=filing]", has_text=stored["summary"])
    sync_api.expect(eight_k.locator("a.change-source")).to_have_attribute("href", stored["source"]["url"])
    written.get_by_role("button", name="Show the brief").click()
    answer = written.locator("article.assistant")
    sync_api.expect(answer).to_have_attribute("data-trust", "loaded")
    assert answer.get_attribute("data-state") == "done"
    sync_api.expect(answer.locator(".answer")).to_contain_text(f'carried the release "{HEADLINE}"')
    assert answer.locator("a.citation.supported").count() == 3
    sync_api.expect(answer.locator(".confidence-badge")).to_be_visible()
    sync_api.expect(answer.locator(".sources li", has_text="8-K")).not_to_have_count(0)
    assert answer.locator(".follow-ups button").count() == 0  # a brief is not a conversation to ask in

    # Deleted: gone from the list and from the database.
    page.once("dialog", lambda dialog: dialog.accept())
    panel.get_by_role("button", name="Delete watchlist").click()
    sync_api.expect(panel.locator("#watchlist-list button")).to_have_count(0)
    assert not Watchlist.objects.filter(pk=watchlist.pk).exists()


def test_a_brief_being_written_is_followed_as_it_is_written_and_its_status_and_delivery_settle(
    page,
    filed,  # noqa: F811
    scripted_router,  # noqa: F811
):
    later = Gate()
    scripted_router(
        StatusEvent(phase="synthesizing", label="Writing the brief"),
        DeltaEvent(text="Apple filed an 8-K. "),
        later,
        DeltaEvent(text="Its 10-Q followed [1]."),
        SourcesEvent(sources=[SOURCE_1]),
        SUMMARY,
    )
    panel = open_panel(page)
    pick = create_watchlist(
        panel, {"Name": "Filings", "Symbols": "AAPL", "Schedule": "0 8 * * *", "E-mail": "me@example.com"}
    )
    writer = BriefWriter(Watchlist.objects.get(name="Filings").pk)
    writer.start()
    assert writer.started.wait(timeout=30), "the brief was not started"

    pick.click()  # read the list again, as the panel does now and then
    brief = page.locator(BRIEFS).first
    sync_api.expect(brief).to_have_attribute("data-status", "running")
    brief.get_by_role("button", name="Show the brief").click()
    sync_api.expect(brief.locator(".answer")).to_have_text("Apple filed an 8-K.")
    later.open()

    sync_api.expect(brief).to_have_attribute("data-status", "done")
    sync_api.expect(brief.locator(".answer")).to_have_text("Apple filed an 8-K. Its 10-Q followed [1].")
    sync_api.expect(brief.locator(".sources li")).to_have_text([re.compile("^Apple 10-K")])
    sync_api.expect(brief.locator(".brief-deliveries")).to_have_text("Deliveries: e-mail delivered (1 attempt)")
    writer.join()
