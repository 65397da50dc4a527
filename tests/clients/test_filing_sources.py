"""Sources from SEC filings on the chat page: each is listed with its form, period and filing day, live and
when its conversation is reopened, and the copied Markdown and the downloaded report say the same.

Driven in headless Chromium as `test_chat_page` drives the page (its fixtures), with a scripted router.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from datascraper.schemas import DeltaEvent, RunSummary, SourcesEvent
from tests.chat.test_filing_sources import ANNUAL, INSIDER, QUARTERLY, SOURCES, WEB
from tests.clients.test_chat_page import (  # noqa: F401 (fixtures)
    ANSWER,
    CHROMIUM,
    ask,
    browser,
    page,
    page_errors,
    scripted_router,
    sync_api,
    trusted_answer,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"),
]

TEXT = "Revenue was $391.0 billion in fiscal 2024 [1] and $124.3 billion in Q1 FY2025 [2]; Cook sold shares [3][4]."
QUESTION = "How did Apple do, and did insiders sell?"
SHOWN = [
    "SEC filing · 10-K · FY2024 · filed 2024-11-01",
    "SEC filing · 10-Q · Q1 FY2025 · filed 2025-01-31",
    "SEC filing · Form 4 · trade 2025-04-01 · filed 2025-04-03",
    "web",
]
LISTED = [
    f"- [1] [{ANNUAL.title}]({ANNUAL.url}) — SEC filing, 10-K, FY2024, filed 2024-11-01",
    f"- [2] [{QUARTERLY.title}]({QUARTERLY.url}) — SEC filing, 10-Q, Q1 FY2025, filed 2025-01-31",
    f"- [3] [{INSIDER.title}]({INSIDER.url}) — SEC filing, Form 4, trade 2025-04-01, filed 2025-04-03",
    f"- [4] [{WEB.title}]({WEB.url}) — web",
]


@pytest.fixture
def filing_answer(page, scripted_router) -> sync_api.Locator:
    """The page asked a question whose answer cites three filings and a web page; its run has ended."""
    scripted_router(
        DeltaEvent(text=TEXT), SourcesEvent(sources=SOURCES), RunSummary(mode="quick", answer="", sources=SOURCES)
    )
    answer = ask(page, QUESTION)
    trusted_answer(answer)
    return answer


def test_a_filing_source_shows_its_form_period_and_filing_day_live_and_reopened(page, filing_answer):
    assert filing_answer.locator(".sources .source-kind").all_inner_texts() == SHOWN
    assert filing_answer.locator(".sources li a").all_inner_texts() == [s.title for s in SOURCES]
    assert filing_answer.locator(".answer a.citation").first.get_attribute("href") == ANNUAL.url
    if shots := os.environ.get("CHAT_PAGE_SCREENSHOTS"):  # to look at: the answer and its source list
        Path(shots).mkdir(parents=True, exist_ok=True)
        filing_answer.locator(".sources").scroll_into_view_if_needed()
        page.screenshot(path=str(Path(shots) / "filing-sources.png"))

    page.click("#new-chat")
    page.click(f"#conversations button >> text={QUESTION}")

    reopened = page.locator(ANSWER)
    sync_api.expect(reopened.locator(".sources .source-kind")).to_have_text(SHOWN)


def test_the_copied_markdown_and_the_report_list_a_filings_form_period_and_filing_day(
    page, filing_answer, page_server_url
):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=page_server_url)
    filing_answer.locator("button.copy-markdown").click()
    sync_api.expect(filing_answer.locator(".action-note")).to_have_text("Copied.")
    assert page.evaluate("() => navigator.clipboard.readText()") == f"{TEXT}\n\nSources:\n" + "\n".join(LISTED) + "\n"

    with page.expect_download() as downloading:
        filing_answer.locator("button.download-report").click()
    report = Path(downloading.value.path()).read_text(encoding="utf-8")

    assert "\n## Sources\n\n" + "\n".join(LISTED) + "\n" in report
