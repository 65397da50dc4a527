"""What reading a filing may cost: a reply streamed under a byte cap (`too_large` past it, counted while
reading, decompressed bytes included), a bounded number of replies read and parsed at once, a document's text
extracted without building its tree, and redirects followed only within the SEC's hosts."""

from __future__ import annotations

import asyncio
import gzip
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from datascraper.cache import TTLCache
from datascraper.filings.client import SecClient
from datascraper.filings.config import FilingsConfig
from datascraper.filings.errors import FilingsUpstreamError, FilingTooLarge
from datascraper.filings.service import FilingsService
from datascraper.market_data.yahoo import YahooFinanceAdapter
from datascraper.mcp_server import build_server
from tests.datascraper.market_data.support import InMemoryMCP
from tests.fakes.sec_documents import dense_ten_k
from tests.fakes.sec_server import FakeSecServer
from tests.fakes.yfinance import FakeYahoo

pytestmark = pytest.mark.timeout(30)

TEN_K = "/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"
ROOT = Path(__file__).resolve().parents[3]


def client_with(sec_config: FilingsConfig, **settings: object) -> SecClient:
    return SecClient(sec_config.model_copy(update=settings), cache=TTLCache())


async def test_a_document_past_the_cap_is_a_too_large_tool_error(
    sec_config: FilingsConfig, fake_sec: FakeSecServer
) -> None:
    fake_sec.serve(f"/www.sec.gov{TEN_K}", b"<p>" + b"x" * 3_000_000 + b"</p>")
    client = client_with(sec_config, max_document_bytes=1_000_000)
    mcp = InMemoryMCP(build_server(YahooFinanceAdapter(FakeYahoo().ticker, cache=TTLCache()), FilingsService(client)))

    result = await mcp.call_tool("get_filing_section", {"ticker": "AAPL", "section": "risk_factors"})

    assert result.is_error
    assert result.content[0].text == (
        "too_large: The SEC document is larger than 1,000,000 bytes, the most this server reads."
    )
    await client.aclose()


async def test_a_body_without_end_is_cut_off_once_past_the_cap(
    sec_config: FilingsConfig, fake_sec: FakeSecServer
) -> None:
    fake_sec.stream_without_end(f"/www.sec.gov{TEN_K}")
    client = client_with(sec_config, max_document_bytes=1_000_000)

    with pytest.raises(FilingTooLarge):
        await client.get(f"{fake_sec.www_url}{TEN_K}")

    assert client.requests_sent == 1  # refused, not retried
    await client.aclose()


async def test_a_compressed_reply_counts_its_bytes_as_decompressed(
    sec_config: FilingsConfig, fake_sec: FakeSecServer
) -> None:
    bomb = gzip.compress(b"<p>" + b"0" * 20_000_000 + b"</p>")
    fake_sec.serve(f"/www.sec.gov{TEN_K}", bomb, headers={"content-encoding": "gzip"})
    client = client_with(sec_config, max_document_bytes=1_000_000)

    with pytest.raises(FilingTooLarge):
        await client.get(f"{fake_sec.www_url}{TEN_K}")

    assert len(bomb) < 1_000_000
    await client.aclose()


async def test_at_most_max_parallel_reads_replies_are_parsed_at_once(
    sec_config: FilingsConfig, fake_sec: FakeSecServer
) -> None:
    paths = [f"/Archives/edgar/data/320193/0000320193250000{n:02d}/form4.xml" for n in range(6)]
    for path in paths:
        fake_sec.serve(f"/www.sec.gov{path}", b"<ownershipDocument/>")
    client = client_with(sec_config, max_parallel_reads=2)
    lock = threading.Lock()
    parsing = [0]
    most = [0]

    def parse(body: bytes) -> int:
        with lock:
            parsing[0] += 1
            most[0] = max(most[0], parsing[0])
        time.sleep(0.1)  # long enough for every reply to arrive while the first are parsed
        with lock:
            parsing[0] -= 1
        return len(body)

    sizes = await asyncio.gather(
        *(client.document(f"{fake_sec.www_url}{path}", ttl_s=60, transform=parse) for path in paths)
    )

    assert sizes == [20] * 6
    assert most[0] == 2
    await client.aclose()


async def test_an_index_page_past_the_cap_of_a_document_parsed_as_a_tree_is_not_read(
    filings: FilingsService, fake_sec: FakeSecServer
) -> None:
    # An index page is parsed as a tree, some ten times its size: 2 MB is its cap, not the 30 MB of a 10-K.
    index = "/www.sec.gov/Archives/edgar/data/320193/000032019325000007/0000320193-25-000007-index.htm"
    fake_sec.serve(index, b"<table>" + b"<tr><td>row</td></tr>" * 150_000 + b"</table>")

    section = await filings.filing_section("AAPL", "2.02")

    assert section.section == "2.02" and section.text  # the item itself is still the answer
    assert section.exhibits == []
    assert section.exhibit_note is not None and "(too_large)" in section.exhibit_note


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="measures memory through Linux's /proc")
def test_a_dense_document_s_text_costs_a_fraction_of_its_tree(tmp_path: Path) -> None:
    # In a process of its own, measured from just before the parse: a tree of these 10 MB took 158 MB.
    document = tmp_path / "10-k.htm"
    document.write_bytes(dense_ten_k(10_000_000))
    script = (
        "import sys; from pathlib import Path\n"
        "from datascraper.filings.sections import document_text, find_section\n"
        "from tests.memory import peak_kb, start_measuring\n"
        "html = Path(sys.argv[1]).read_bytes()\n"
        "before = start_measuring()\n"
        "section = find_section(document_text(html), 'risk_factors')\n"
        "assert section.text.startswith('Risk factor 0:'), section.text[:80]\n"
        "print(peak_kb() - before)\n"
    )

    measured = subprocess.run(
        [sys.executable, "-c", script, str(document)], cwd=ROOT, capture_output=True, text=True, check=True
    )

    grown_kb = int(measured.stdout)
    assert grown_kb * 1024 < 3 * 10_000_000, f"reading 10 MB grew the process by {grown_kb / 1024:.0f} MB"


async def test_a_redirect_within_the_sec_is_followed_through_the_limiter(
    sec_config: FilingsConfig, fake_sec: FakeSecServer
) -> None:
    fake_sec.serve("/www.sec.gov/old-path.htm", b"", status=301, headers={"location": f"{fake_sec.www_url}{TEN_K}"})
    client = client_with(sec_config)

    body = await client.get(f"{fake_sec.www_url}/old-path.htm")

    assert b"Risk Factors" in body
    assert fake_sec.paths() == ["/old-path.htm", TEN_K]
    assert client.requests_sent == 2  # each hop took a slot of the SEC's budget
    await client.aclose()


@pytest.mark.parametrize("elsewhere", ["another host", "another path of the SEC's host"])
async def test_a_redirect_outside_the_sec_s_hosts_is_refused_and_never_sent(
    sec_config: FilingsConfig, fake_sec: FakeSecServer, elsewhere: str
) -> None:
    with FakeSecServer() as other:
        target = f"{other.www_url}{TEN_K}" if elsewhere == "another host" else f"{fake_sec.url}/internal/admin"
        fake_sec.serve(f"/www.sec.gov{TEN_K}", b"", status=302, headers={"location": target})
        client = client_with(sec_config)

        with pytest.raises(FilingsUpstreamError, match="outside its own hosts"):
            await client.get(f"{fake_sec.www_url}{TEN_K}")

        assert other.requests == []
        assert fake_sec.paths() == [TEN_K]
        await client.aclose()
