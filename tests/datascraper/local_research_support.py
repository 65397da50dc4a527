"""A fully local set-up's far ends, for the tests that run a question through it: the pages SearxNG finds,
and which call a request to the compatible server is."""

from __future__ import annotations

from tests.fakes.chat_completions_server import ChatRequest
from tests.fakes.page_server import FakePageServer, article
from tests.fakes.searxng_server import FakeSearxng, searx_result

QUESTION = "How did Apple's revenue and services business do in fiscal 2024?"
REVENUE = "What revenue did Apple report for fiscal 2024?"
SERVICES = "How fast did Apple's services revenue grow in fiscal 2024?"


def writes_from_passages(request: ChatRequest) -> bool:
    return "Passages:" in request.input_text


def asks_json_of(request: ChatRequest, field: str) -> bool:
    """A structured call asked in the prompt (no response_format) whose schema has `field`: the analyzer's
    (`needs_decomposition`) or the gap detector's (`follow_up_queries`, which the analyzer's lacks)."""
    rules = request.instructions
    if "response_format" in request.body or "JSON schema" not in rules:
        return False
    return f'"{field}"' in rules and (field == "follow_up_queries" or '"follow_up_queries"' not in rules)


def publish(searx: FakeSearxng, pages: FakePageServer) -> tuple[str, str]:
    revenue = pages.add(
        "/apple-fy24",
        article("Apple results", "Apple reported revenue of $391.04 billion for fiscal 2024, up 2% on a year earlier."),
    )
    services = pages.add(
        "/apple-services", article("Apple services", "Services revenue grew 13% to $96.17 billion in fiscal 2024.")
    )
    searx.results = [
        searx_result(revenue, "Apple results - Example News", published="2024-10-31T00:00:00"),
        searx_result(services, "Apple services - Example Research", published="2024-11-01T00:00:00"),
    ]
    return revenue, services
