"""Citation verification: after the answer, each `[n]` marker checked against the source it names.

    answer ─► claims ─► web source: its page fetched once per URL (`fetcher`), the main text extracted
                │        and indexed in a thread (`support.read_page`), each claim citing it judged
                ├─────► market-data source, or a filing's figures: judged against what that source's tool
                │        returned (a filing: the values it reported) and the figures computed from it, with
                │        no fetch (`support.judge_market_data`)
                └─────► a filing's words (a section, an 8-K item): judged against the passage read from it

Pages are fetched `citation_fetch_concurrency` at once, and the whole check ends by its deadline
(`time_limit_s`): a page not read by then leaves its claims `unreachable`. Verification reads; it never
changes the answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from datascraper.citations.claims import cited_claims
from datascraper.citations.fetcher import PageFetcher, PageUnreachable, any_address, is_public
from datascraper.citations.support import MarketEvidence, SourceText, judge_market_data, judge_page, read_page
from datascraper.models_config import ResearchConfig
from datascraper.schemas import CitationCheck, Source

logger = logging.getLogger(__name__)


@dataclass
class Verification:
    """The checked citations, in the answer's order, and how the check went."""

    citations: list[CitationCheck] = field(default_factory=list)
    pages: int = 0  # distinct pages asked for
    elapsed_ms: int = 0

    def signal(self) -> dict[str, Any]:
        statuses = Counter(check.status for check in self.citations)
        reasons = Counter(check.reason for check in self.citations if check.reason is not None)
        return {
            "supported": statuses["supported"],
            "unsupported": statuses["unsupported"],
            "unreachable": statuses["unreachable"],
            "unreachable_reasons": dict(reasons),
            "pages": self.pages,
            "elapsed_ms": self.elapsed_ms,
        }


async def verify_citations(
    answer: str,
    sources: Sequence[Source],
    market: Mapping[int, MarketEvidence | SourceText],
    *,
    config: ResearchConfig,
    time_limit_s: float,
    read_already: Mapping[str, str] | None = None,
) -> Verification:
    """Check every marker of `answer` that names one of `sources`; `market` holds the evidence of the
    market-data and filing sources by number (a filing cited for its words: the passage read from it);
    `read_already` the text of web pages read during the research (a search API's results), by URL, which
    are not fetched again."""
    started = time.monotonic()
    by_number = {source.n: source for source in sources}
    claims = [claim for claim in cited_claims(answer) if claim.n in by_number]
    urls = list(dict.fromkeys(by_number[claim.n].url for claim in claims if by_number[claim.n].kind == "web"))
    pages = await read_pages(urls, config=config, time_limit_s=time_limit_s, read_already=read_already or {})
    verification = Verification(pages=len(urls))
    for claim in claims:
        source = by_number[claim.n]
        read: SourceText | MarketEvidence | PageUnreachable
        if source.kind == "web":
            read = pages[source.url]
        else:
            read = market.get(source.n) or PageUnreachable("no_market_data", source.url)
        if isinstance(read, PageUnreachable):
            check = CitationCheck(n=claim.n, marker_index=claim.marker_index, status="unreachable", reason=read.reason)
        else:
            if isinstance(read, SourceText):
                judgement = judge_page(claim.text, read)
            else:
                judgement = judge_market_data(claim.text, read)
            check = CitationCheck(
                n=claim.n, marker_index=claim.marker_index, status=judgement.status, evidence=judgement.evidence
            )
        verification.citations.append(check)
    verification.elapsed_ms = round((time.monotonic() - started) * 1000)
    return verification


async def read_pages(
    urls: Sequence[str],
    *,
    config: ResearchConfig,
    time_limit_s: float,
    read_already: Mapping[str, str] | None = None,
) -> dict[str, SourceText | PageUnreachable]:
    """Each URL's page, read and indexed once, or why it could not be (`deadline` when time ran out); a page
    in `read_already` (its text, by URL) is indexed from that text, not fetched."""
    if not urls:
        return {}
    fetcher = PageFetcher(
        timeout_s=config.citation_fetch_timeout_s,
        max_bytes=config.citation_page_max_bytes,
        is_allowed=any_address if config.citation_fetch_allow_private else is_public,
    )
    limiter = asyncio.Semaphore(config.citation_fetch_concurrency)

    async def read(url: str) -> SourceText:
        if read_already and url in read_already:
            return await asyncio.to_thread(SourceText, read_already[url])
        async with limiter:
            page = await fetcher.fetch(url)
        try:
            return await asyncio.to_thread(read_page, page.html)
        except Exception as exc:  # the extractor failing on a page it cannot parse
            logger.warning("The text of a cited page could not be extracted (%s): %s", url, exc)
            raise PageUnreachable("unreadable", url) from exc

    tasks = {url: asyncio.create_task(read(url), name=f"citation page {url}") for url in urls}
    try:
        await asyncio.wait(tasks.values(), timeout=time_limit_s)
    finally:
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        await fetcher.aclose()
    return {url: _outcome(url, task) for url, task in tasks.items()}


def _outcome(url: str, task: asyncio.Task[SourceText]) -> SourceText | PageUnreachable:
    if task.cancelled():
        return PageUnreachable("deadline", url)
    error = task.exception()
    if error is None:
        return task.result()
    if isinstance(error, PageUnreachable):
        return error
    logger.error("Reading a cited page failed unexpectedly (%s)", url, exc_info=error)
    return PageUnreachable("internal_error", url)
