"""An 8-K item read with the exhibit it refers to: item 2.02's text says the earnings release is attached as
Exhibit 99.1, and the figures are there. Through the real MCP client and SEC client over the fake SEC, whose
filing index page has EDGAR's layout; and the index page's parsing on its own."""

from __future__ import annotations

import re
from typing import Any

import pytest

from datascraper.filings.schemas import FilingSection
from datascraper.filings.sections import document_name, exhibit_list, exhibits_named, exhibits_to_read, filing_documents
from tests.datascraper.market_data.support import InMemoryMCP
from tests.fakes.sec_server import FIXTURES, FakeSecServer

pytestmark = pytest.mark.timeout(30)

FOLDER = "/Archives/edgar/data/320193/000032019325000007/"
INDEX = f"{FOLDER}0000320193-25-000007-index.htm"
EXHIBIT = f"{FOLDER}a8-kex991q1202512282024.htm"
INDEX_HTML = (FIXTURES / INDEX.lstrip("/")).read_bytes()


async def section(mcp_client: InMemoryMCP, **arguments: Any) -> FilingSection:
    result = await mcp_client.call_tool("get_filing_section", {"ticker": "AAPL", "section": "2.02", **arguments})
    assert not result.is_error, result.content
    return FilingSection.model_validate(result.structured_content)


def without_exhibit_row(html: bytes) -> bytes:
    """The index page with its EX-99.1 row taken out: an 8-K whose exhibit was not filed as one."""
    row = re.compile(rb'<tr class="evenRow">\s*<td scope="row">2</td>.*?</tr>', re.DOTALL)
    changed, count = row.subn(b"", html)
    assert count == 1
    return changed


async def test_an_earnings_item_is_followed_by_its_exhibit_and_the_exhibits_url(
    mcp_client: InMemoryMCP, fake_sec: FakeSecServer
) -> None:
    found = await section(mcp_client)

    [exhibit] = found.exhibits
    url = f"{fake_sec.www_url}{EXHIBIT}"
    assert (exhibit.number, exhibit.type, exhibit.url) == ("99.1", "EX-99.1", url)
    assert exhibit.description == "Press release issued by Apple Inc. on January 30, 2025."  # from its Item 9.01
    item, rest = found.text[: exhibit.starts_at], found.text[exhibit.starts_at :]
    assert item.startswith("On January 30, 2025, Apple Inc.") and "attached hereto as Exhibit 99.1" in item
    assert rest.startswith(f"[Exhibit 99.1, Press release issued by Apple Inc. on January 30, 2025: {url}]\n")
    assert "Apple reports first quarter results" in rest
    assert "quarterly revenue of $124.3 billion, up 4 percent year over year" in rest
    assert "quarterly diluted earnings per share of $2.40, up 10 percent year over year" in rest
    assert len(rest) == len(rest.split("\n", 1)[0]) + 1 + exhibit.total_chars
    assert found.url == f"{fake_sec.www_url}{FOLDER}aapl-20250130.htm"  # the citation stays the 8-K
    assert found.heading == "Item 2.02 Results of Operations and Financial Condition."
    assert found.total_chars == len(found.text) and not found.truncated and found.exhibit_note is None
    assert url in found.summary_text() and "$124.3 billion" in found.summary_text()


async def test_an_index_page_without_the_exhibit_gives_the_item_alone(
    mcp_client: InMemoryMCP, fake_sec: FakeSecServer
) -> None:
    fake_sec.serve(f"/www.sec.gov{INDEX}", without_exhibit_row(INDEX_HTML))

    found = await section(mcp_client)

    assert found.exhibits == []
    assert found.text.endswith("Section 18 of the Securities Exchange Act of 1934.")
    assert "$124.3 billion" not in found.text
    assert found.exhibit_note == "The filing's index lists no document for Exhibit 99.1, so it is not included."
    assert found.exhibit_note in found.summary_text()
    assert EXHIBIT not in fake_sec.paths()


@pytest.mark.parametrize(("path", "read"), [(INDEX, False), (EXHIBIT, True)])
async def test_an_index_page_or_exhibit_the_sec_does_not_serve_gives_the_item_alone(
    mcp_client: InMemoryMCP, fake_sec: FakeSecServer, path: str, read: bool
) -> None:
    fake_sec.serve(f"/www.sec.gov{path}", b"<html><body>Not Found</body></html>", status=404)

    found = await section(mcp_client)

    assert found.exhibits == [] and "$124.3 billion" not in found.text
    assert "attached hereto as Exhibit 99.1" in found.text
    assert found.exhibit_note is not None and "(not_found)" in found.exhibit_note
    assert (EXHIBIT in fake_sec.paths()) is read
    assert fake_sec.paths(404) == [path]


async def test_max_chars_bounds_the_item_and_exhibit_together_and_an_offset_reads_on(
    mcp_client: InMemoryMCP,
) -> None:
    whole = await section(mcp_client, max_chars=40_000)
    first = await section(mcp_client, max_chars=500)
    rest = await section(mcp_client, offset=500, max_chars=40_000)
    [exhibit] = whole.exhibits
    at_exhibit = await section(mcp_client, offset=exhibit.starts_at, max_chars=500)

    assert exhibit.starts_at < 500 < whole.total_chars  # the first page runs from the item into the exhibit
    assert len(first.text) == 500 and first.truncated and first.total_chars == whole.total_chars
    assert first.text + rest.text == whole.text and not rest.truncated
    assert at_exhibit.text.startswith("[Exhibit 99.1") and len(at_exhibit.text) == 500
    assert first.exhibits == rest.exhibits == whole.exhibits  # where each starts, whatever the page


async def test_the_index_page_and_exhibit_are_fetched_once_then_served_from_the_cache(
    mcp_client: InMemoryMCP, fake_sec: FakeSecServer
) -> None:
    first = await section(mcp_client)
    sent = list(fake_sec.paths())

    again = await section(mcp_client, offset=100)

    assert sent.count(INDEX) == 1 and sent.count(EXHIBIT) == 1
    assert sent[-2:] == [INDEX, EXHIBIT]  # after the 8-K's own document
    assert fake_sec.paths() == sent  # the second call asked the SEC nothing
    assert again.text == first.text[100:] and again.exhibits == first.exhibits


async def test_a_10k_section_reads_no_index_page(mcp_client: InMemoryMCP, fake_sec: FakeSecServer) -> None:
    result = await mcp_client.call_tool("get_filing_section", {"ticker": "AAPL", "section": "risk_factors"})

    assert FilingSection.model_validate(result.structured_content).exhibits == []
    assert not any(path.endswith("-index.htm") for path in fake_sec.paths())


# --- the parsing on its own ----------------------------------------------------------------------------------


def test_the_index_pages_document_table_gives_each_documents_type_and_link() -> None:
    documents = filing_documents(INDEX_HTML)

    assert [(d["seq"], d["description"], d["type"]) for d in documents] == [
        ("1", "8-K", "8-K"),
        ("2", "EX-99.1", "EX-99.1"),
        ("", "Complete submission text file", ""),
    ]  # the "Data Files" table (XBRL) is not among them
    assert documents[0]["href"] == f"/ix?doc={FOLDER}aapl-20250130.htm"
    assert documents[1]["href"] == EXHIBIT


def test_the_columns_are_found_by_their_headers() -> None:
    page = (
        b'<table class="tableFile" summary="Document Format Files"><tr><th>Seq</th><th>Type</th><th>Document</th>'
        b"<th>Description</th></tr><tr><td>2</td><td>EX-99.2</td><td><a href='slides.htm'>slides.htm</a></td>"
        b"<td>INVESTOR PRESENTATION</td></tr></table>"
    )

    assert filing_documents(page) == [
        {"seq": "2", "description": "INVESTOR PRESENTATION", "type": "EX-99.2", "href": "slides.htm"}
    ]


@pytest.mark.parametrize(
    ("href", "name"),
    [
        (f"{FOLDER}a8-kex991q1202512282024.htm", "a8-kex991q1202512282024.htm"),
        (f"/ix?doc={FOLDER}aapl-20250130.htm", "aapl-20250130.htm"),
        (f"https://www.sec.gov{FOLDER}ex99.htm", "ex99.htm"),
        ("ex991.htm", "ex991.htm"),
        ("/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm", None),  # another filing's
        ("../000032019324000123/aapl-20240928.htm", None),
        (f"{FOLDER}aapl-20250130.xsd", None),
        (f"{FOLDER}image.jpg", None),
    ],
)
def test_only_a_text_document_of_the_filing_itself_is_followed(href: str, name: str | None) -> None:
    assert document_name(href, FOLDER) == name


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("A copy of the press release is attached hereto as Exhibit 99.1.", ["99.1"]),
        ("furnished as Exhibits 99.1 and 99.2 to this report", ["99.1", "99.2"]),
        ("filed as Exhibit No. 10.1, and the press release as Exhibit 99.1", ["10.1", "99.1"]),
        ("The Company issued a press release on its results.", []),
    ],
)
def test_the_exhibits_an_item_names_are_read_from_its_words(text: str, numbers: list[str]) -> None:
    assert exhibits_named(text) == numbers


def test_only_the_99_series_is_read_and_an_earnings_item_may_name_none() -> None:
    assert exhibits_to_read("1.01", "The agreement is filed as Exhibit 10.1.") == ([], False)
    assert exhibits_to_read("5.02", "See the press release filed as Exhibit 99.1.") == (["99.1"], False)
    assert exhibits_to_read("2.02", "The press release is furnished as an exhibit to this report.") == ([], True)
    assert exhibits_to_read("2.02", "The Company reported its results.") == ([], False)


def test_an_8ks_exhibit_list_gives_each_exhibits_description() -> None:
    text = "(d) Exhibits.\nExhibit Number Exhibit Description\n99.1 Press release issued by Apple Inc.\n104 Cover Page"

    assert exhibit_list(text) == {"99.1": "Press release issued by Apple Inc.", "104": "Cover Page"}
