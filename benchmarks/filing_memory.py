"""What a big filing costs to read: `python benchmarks/filing_memory.py [--megabytes 29.9]`.

The fake SEC (in this process) serves a dense 10-K just under the client's 30 MB cap as Apple's latest 10-K
(`tests/fakes/sec_documents.py`: inline-XBRL tables, the densest markup a filing has). A fresh child process
then asks for its risk factors as the filing tool does (`FilingsService.filing_section` over the real SEC
client: streamed under the cap, parsed in a worker thread, the text cached) and prints the peak of its
resident set over what it held before the call, and the CPU the call took. For comparison, another child
builds the same document's lxml tree, as its text was read before. Linux only (`tests/memory.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.sec_documents import dense_ten_k  # noqa: E402
from tests.fakes.sec_server import FakeSecServer  # noqa: E402

TEN_K = "/www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"


async def read_section(data_url: str, www_url: str) -> None:
    """In the child: one cold section call, measured from just before it."""
    from datascraper.filings.client import SecClient
    from datascraper.filings.config import FilingsConfig
    from datascraper.filings.service import FilingsService
    from tests.memory import peak_kb, start_measuring

    config = FilingsConfig(user_agent="Benchmark ops@example.com", data_url=data_url, www_url=www_url)
    client = SecClient(config)
    service = FilingsService(client)
    before = start_measuring()
    cpu = time.process_time()
    section = await service.filing_section("AAPL", "risk_factors")
    cpu = time.process_time() - cpu
    print(before, peak_kb(), f"{cpu:.2f}", section.total_chars)
    await client.aclose()


def build_tree(path: str) -> None:
    """In the child: the document's lxml tree, measured from just before it is built."""
    import lxml.html

    from tests.memory import peak_kb, start_measuring

    html = Path(path).read_bytes()
    before = start_measuring()
    cpu = time.process_time()
    lxml.html.document_fromstring(html).text_content()
    print(before, peak_kb(), f"{time.process_time() - cpu:.2f}", 0)


def child(*args: str) -> tuple[float, float, str]:
    completed = subprocess.run(
        [sys.executable, __file__, *args], cwd=ROOT, capture_output=True, text=True, check=False, timeout=300
    )
    if completed.returncode != 0:
        raise SystemExit(f"the child failed:\n{completed.stderr[-3000:]}")
    before, peak, cpu, _ = completed.stdout.split()
    return int(before) / 1024, int(peak) / 1024, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=29.9)
    parser.add_argument("--child", nargs=2, metavar=("DATA_URL", "WWW_URL"), help=argparse.SUPPRESS)
    parser.add_argument("--tree", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        asyncio.run(read_section(*args.child))
        return
    if args.tree:
        build_tree(args.tree)
        return
    document = dense_ten_k(int(args.megabytes * 1_000_000))
    with FakeSecServer(max_per_second=1_000_000) as fake:
        fake.serve(TEN_K, document)
        before, peak, cpu = child("--child", fake.data_url, fake.www_url)
    print(f"a dense 10-K of {len(document) / 1e6:.1f} MB, its risk factors read as the tool reads them:")
    print(f"  peak RSS {peak:.0f} MB, {peak - before:.0f} MB over the {before:.0f} MB before the call; CPU {cpu} s")
    with tempfile.TemporaryDirectory() as folder:
        saved = Path(folder) / "dense-10k.htm"
        saved.write_bytes(document)
        before, peak, cpu = child("--tree", str(saved))
    print(f"  for comparison, its lxml tree (how the text was read before): {peak - before:.0f} MB; CPU {cpu} s")


if __name__ == "__main__":
    main()
