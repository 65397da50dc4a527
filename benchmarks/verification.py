"""How long citation verification takes after the answer: `python benchmarks/verification.py`.

The figure: the time from the answer's last `delta` to the `verification` event, for an answer citing 10
different pages, through `run_research` in quick mode (the fake OpenAI server writes the answer; its
`url_citation` annotations point at 10 pages served on 127.0.0.1). Each page answers after a set latency
(before its first byte) and is an article as news sites serve it: navigation, the article (the cited
figure and 40 paragraphs), related links, a footer, padded to its size with an inline script and a menu
of links (markup the extractor parses and throws away). Cases:
10 pages of 250 KB at 100 ms, 10 of 1 MiB (the default size cap) at 100 ms, and 10 of 50 KB at 20 ms.
Pages are fetched with the defaults (5 at once), private addresses allowed for the local server.

Options: `--runs` (runs per case, default 5). Prints the median and the range per case, and the statuses
of the last run (every citation should be `supported`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from datascraper.models_config import get_research_config  # noqa: E402
from datascraper.providers.openai.client import reset_openai_client  # noqa: E402
from datascraper.research_engine import run_research  # noqa: E402
from datascraper.schemas import ResearchQuery  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer, Sentence, TextReply  # noqa: E402
from tests.fakes.page_server import FakePageServer, article  # noqa: E402

PAGES = 10


@dataclass(frozen=True)
class Case:
    page_bytes: int
    latency_s: float

    def __str__(self) -> str:
        size = "1 MiB" if self.page_bytes == 1_048_576 else f"{self.page_bytes // 1000} KB"
        return f"{PAGES} pages of {size}, {self.latency_s * 1000:.0f} ms latency"


CASES = (Case(250_000, 0.1), Case(1_048_576, 0.1), Case(50_000, 0.02))


def page(i: int, size: int) -> bytes:
    """An article citing company `i`'s revenue, padded to `size` bytes: half inline script, half a menu of
    links (markup the extractor has to parse and throw away)."""
    body = article(
        f"Company {i} results",
        f"Company {i} reported revenue of ${i + 1}.{i}5 billion for the year, up {i + 3}% from a year earlier.",
        filler_paragraphs=40,
    )
    padding = max(0, size - len(body) - len("<script></script><ul></ul>"))
    links = bytearray()
    while len(links) < padding // 2:  # whole links: a cut tag would swallow the article
        links += b"<li><a href='/markets/story-%d'>Related story %d</a></li>" % (len(links), len(links))
    script = (b"window.analytics=window.analytics||[];" * (padding // 38 + 1))[: padding - len(links)]
    head, menu = b"<script>" + script + b"</script>", b"<ul>" + bytes(links) + b"</ul>"
    return body.replace(b"</head>", head + b"</head>", 1).replace(b"<main>", menu + b"<main>", 1)


def answer_citing(pages: FakePageServer, case: Case) -> TextReply:
    sentences = []
    for i in range(PAGES):
        url = pages.add(f"/c{i}", page(i, case.page_bytes), delay_s=case.latency_s)
        claim = f"Company {i}'s revenue was ${i + 1}.{i}5 billion, up {i + 3}%."
        sentences.append(Sentence(claim, cites=[(url, f"Company {i} results")]))
    return TextReply(sentences, chunk_chars=40)


async def one_run(fake: FakeOpenAIServer, pages: FakePageServer, case: Case) -> tuple[float, Counter[str]]:
    fake.script(answer_citing(pages, case))
    last_delta = verified = None
    statuses: Counter[str] = Counter()
    async for event in run_research(ResearchQuery(question="How did the ten companies do?", mode="quick")):
        if event.type == "delta":
            last_delta = time.monotonic()
        elif event.type == "verification":
            verified = time.monotonic()
            statuses = Counter(check.status for check in event.citations)
    assert last_delta is not None and verified is not None, "no verification event"
    return (verified - last_delta) * 1000, statuses


async def main(runs: int) -> None:
    with FakeOpenAIServer() as fake, FakePageServer() as pages:
        os.environ.update(
            OPENAI_BASE_URL=fake.base_url,
            OPENAI_API_KEY="benchmark",
            CITATION_VERIFY="1",
            CITATION_FETCH_ALLOW_PRIVATE="1",
        )
        get_research_config.cache_clear()
        reset_openai_client()
        config = get_research_config()
        print(
            f"verification: last delta -> verification event, {runs} runs per case "
            f"(concurrency {config.citation_fetch_concurrency}, cap {config.citation_page_max_bytes} bytes, "
            f"fetch timeout {config.citation_fetch_timeout_s:g} s, deadline {config.citation_verify_timeout_s:g} s)"
        )
        await one_run(fake, pages, CASES[0])  # warm-up: imports, the extractor's first use
        for case in CASES:
            timings, statuses = [], Counter()
            for _ in range(runs):
                elapsed_ms, statuses = await one_run(fake, pages, case)
                timings.append(elapsed_ms)
            print(
                f"  {case}: median {statistics.median(timings):.0f} ms "
                f"(range {min(timings):.0f}-{max(timings):.0f} ms); last run: {dict(statuses)}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    asyncio.run(main(parser.parse_args().runs))
