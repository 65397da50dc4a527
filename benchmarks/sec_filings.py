"""SEC filing tools against the fake SEC on loopback: `python benchmarks/sec_filings.py [--samples N]`.

Figures:
- company facts, cold (empty cache: the ticker map and the facts file fetched and parsed) and warm (both
  from the in-process cache), for the fixture's facts and for a facts file of a real large filer's size
  (~4 MB, made here by adding filler concepts to the fixture: Apple's real file has ~500 concepts);
- section extraction of the 10-K fixture (HTML to text, then the Item 1A heading and its span), and of a
  ~2 MB document made by repeating the fixture's body (real 10-K primary documents run 1-10 MB);
- a warm section call (the document's text comes from the cache; only the heading search runs).

The fake's own rate limit is lifted and each new client gets a request budget of its own (a fresh
`limiter_dir`): this measures our side, not the SEC's pacing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from datascraper.filings.client import SecClient  # noqa: E402
from datascraper.filings.config import FilingsConfig  # noqa: E402
from datascraper.filings.sections import document_text, find_section  # noqa: E402
from datascraper.filings.service import FilingsService  # noqa: E402
from tests.fakes.sec_server import FIXTURES, FakeSecServer  # noqa: E402

TEN_K = FIXTURES / "Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"
FACTS_PATH = "/data.sec.gov/api/xbrl/companyfacts/CIK0000320193.json"
BUDGETS = tempfile.TemporaryDirectory()


def fresh_config(fake: FakeSecServer) -> FilingsConfig:
    """A client's settings, with a request budget of its own, as on a machine of its own."""
    return FilingsConfig(
        user_agent="Benchmark ops@example.com",
        data_url=fake.data_url,
        www_url=fake.www_url,
        limiter_dir=tempfile.mkdtemp(dir=BUDGETS.name),
    )


def real_size_facts() -> bytes:
    """The Apple fixture plus 200 filler concepts of 100 facts each: about the size of a large filer's file."""
    payload = json.loads((FIXTURES / "companyfacts/CIK0000320193.json").read_text())
    template = payload["facts"]["us-gaap"]["RevenueFromContractWithCustomerExcludingAssessedTax"]["units"]["USD"]
    for n in range(200):
        payload["facts"]["us-gaap"][f"FillerConcept{n}"] = {
            "label": f"Filler concept {n}",
            "description": "A concept added to bring the file to a real filer's size. " * 3,
            "units": {"USD": [dict(row, val=row["val"] + n) for row in template * 13][:100]},
        }
    return json.dumps(payload).encode()


def real_size_document() -> bytes:
    html = TEN_K.read_text()
    head, _, rest = html.partition('<div id="i1a">')
    body, _, tail = rest.partition('<div><span style="font-weight:700">Item 1B.')
    filler = body.split("</div>", 2)[2]  # the risk factors' paragraphs, without their heading
    return (
        head + '<div id="i1a">' + body + filler * 900 + '<div><span style="font-weight:700">Item 1B.' + tail
    ).encode()


def ms(seconds: list[float]) -> str:
    return f"p50 {statistics.median(seconds) * 1000:7.2f} ms, max {max(seconds) * 1000:7.2f} ms"


async def facts_timings(fake: FakeSecServer, samples: int) -> tuple[list[float], list[float]]:
    cold: list[float] = []
    warm: list[float] = []
    for _ in range(samples):
        client = SecClient(fresh_config(fake))  # a new client: an empty cache and budget
        service = FilingsService(client)
        started = time.perf_counter()
        await service.reported_figures("AAPL", "revenue", frequency="quarterly")
        cold.append(time.perf_counter() - started)
        started = time.perf_counter()
        await service.reported_figures("AAPL", "revenue", frequency="quarterly")
        warm.append(time.perf_counter() - started)
        await client.aclose()
    return cold, warm


def extraction_timings(html: bytes, samples: int) -> list[float]:
    timings = []
    for _ in range(samples):
        started = time.perf_counter()
        find_section(document_text(html), "risk_factors")
        timings.append(time.perf_counter() - started)
    return timings


async def warm_section_timings(fake: FakeSecServer, samples: int) -> list[float]:
    client = SecClient(fresh_config(fake))
    service = FilingsService(client)
    await service.filing_section("AAPL", "risk_factors")
    timings = []
    for _ in range(samples):
        started = time.perf_counter()
        await service.filing_section("AAPL", "risk_factors")
        timings.append(time.perf_counter() - started)
    await client.aclose()
    return timings


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    with FakeSecServer(max_per_second=1_000_000) as fake:
        small_cold, small_warm = await facts_timings(fake, args.samples)
        big = real_size_facts()
        fake.serve(FACTS_PATH, big)
        big_cold, big_warm = await facts_timings(fake, args.samples)
        section_warm = await warm_section_timings(fake, args.samples)
    document = real_size_document()
    small_doc = extraction_timings(TEN_K.read_bytes(), args.samples)
    big_doc = extraction_timings(document, max(3, args.samples // 4))
    print(f"company facts, fixture ({(FIXTURES / 'companyfacts/CIK0000320193.json').stat().st_size / 1e3:.0f} kB):")
    print(f"  cold  {ms(small_cold)}")
    print(f"  warm  {ms(small_warm)}")
    print(f"company facts, real size ({len(big) / 1e6:.1f} MB):")
    print(f"  cold  {ms(big_cold)}")
    print(f"  warm  {ms(big_warm)}")
    print("section extraction (HTML to text, then Item 1A):")
    print(f"  10-K fixture ({TEN_K.stat().st_size / 1e3:.0f} kB)  {ms(small_doc)}")
    print(f"  real size ({len(document) / 1e6:.1f} MB)     {ms(big_doc)}")
    print(f"  warm section call (text cached)  {ms(section_warm)}")


if __name__ == "__main__":
    asyncio.run(main())
