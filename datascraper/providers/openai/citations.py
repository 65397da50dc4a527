"""The hosted `web_search` tool's citations, as `[n]` markers while the answer streams.

The tool cites with inline markdown links placed after a sentence,
`... 6%. ([reuters.com](https://...?utm_source=openai))`, and sends the matching `url_citation` annotation
only after the text it spans. The answer must still reach the user as it is written, so the text passes
through a `CitationRewriter` that holds back only what could be the start of such a link and replaces each
complete link with a numbered `[n]` marker naming a `Source`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from datascraper.schemas import Source
from datascraper.sources import CitedPages
from datascraper.stream_rewriter import INCOMPLETE, StreamRewriter


class _Scan(Enum):
    COMPLETE = "complete"
    PARTIAL = "partial"
    NOT_A_GROUP = "not_a_group"


@dataclass(frozen=True)
class _GroupScan:
    state: _Scan
    end: int = 0
    links: tuple[tuple[str, str], ...] = ()


_SEPARATORS = ",; "


def _scan_citation_group(text: str) -> _GroupScan:
    """Match `([label](url))` or `([a](u1), [b](u2))` at the start of `text` (which starts with `(`).

    PARTIAL means `text` may still become a group once more text arrives.
    """
    n = len(text)
    links: list[tuple[str, str]] = []
    i = 1
    while True:
        if i == n:
            return _GroupScan(_Scan.PARTIAL)
        if text[i] != "[":
            return _GroupScan(_Scan.NOT_A_GROUP)
        label_end = i + 1
        while label_end < n and text[label_end] not in "][\n":
            label_end += 1
        if label_end == n:
            return _GroupScan(_Scan.PARTIAL)
        if text[label_end] != "]" or label_end == i + 1:
            return _GroupScan(_Scan.NOT_A_GROUP)
        label = text[i + 1 : label_end]
        i = label_end + 1
        if i == n:
            return _GroupScan(_Scan.PARTIAL)
        if text[i] != "(":
            return _GroupScan(_Scan.NOT_A_GROUP)
        url_end = i + 1
        while url_end < n and text[url_end] != ")" and not text[url_end].isspace():
            url_end += 1
        if url_end == n:
            return _GroupScan(_Scan.PARTIAL)
        url = text[i + 1 : url_end]
        if text[url_end] != ")" or not url.startswith(("https://", "http://")):
            return _GroupScan(_Scan.NOT_A_GROUP)
        links.append((label, url))
        i = url_end + 1
        if i == n:
            return _GroupScan(_Scan.PARTIAL)
        if text[i] == ")":
            return _GroupScan(_Scan.COMPLETE, i + 1, tuple(links))
        separator_end = i
        while separator_end < n and text[separator_end] in _SEPARATORS:
            separator_end += 1
        if separator_end == n:
            return _GroupScan(_Scan.PARTIAL)
        if separator_end == i or text[separator_end] != "[":
            return _GroupScan(_Scan.NOT_A_GROUP)
        i = separator_end


class CitationRewriter(StreamRewriter):
    """Rewrites streamed answer text: each inline citation link becomes `[n]`, numbered per URL.

    Only a segment that could still turn out to be a citation link is held back, and never more than
    `max_held_chars` of it. Numbers start after `source_offset` so a caller can merge the sources of
    several answers into one list.
    """

    opener = "("

    def __init__(self, *, source_offset: int = 0, max_held_chars: int = 500) -> None:
        super().__init__()
        self.max_held = max_held_chars
        self._pages = CitedPages(source_offset=source_offset)

    def scan(self, text: str) -> tuple[str, int] | str | None:
        scan = _scan_citation_group(text)
        if scan.state is _Scan.PARTIAL:
            return INCOMPLETE
        if scan.state is _Scan.NOT_A_GROUP:
            return None
        numbers = dict.fromkeys(self.cite(url, label, from_link=True) for label, url in scan.links)
        return "".join(f"[{n}]" for n in numbers), scan.end

    def cite(self, url: str, title: str, *, from_link: bool = False) -> int:
        """The number of `url`'s source, registering it if new.

        A link only carries the domain as its label; the annotation's page title replaces it.
        """
        return self._pages.cite(url, title, provisional_title=from_link)

    @property
    def sources(self) -> list[Source]:
        return self._pages.sources
