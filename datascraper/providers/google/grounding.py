"""The Google Search tool's grounding metadata, as `[n]` markers in the answer and its numbered sources.

Gemini does not cite inline. With the `googleSearch` tool a candidate carries `groundingMetadata`:
`groundingChunks` (the pages: `web.uri`, a `vertexaisearch.cloud.google.com/grounding-api-redirect/...`
address that redirects to the page, and `web.title`, the page's domain), `groundingSupports` (each a
`segment` of the answer, with `startIndex`/`endIndex` in **bytes of UTF-8**, and the
`groundingChunkIndices` of the pages that support it) and `webSearchQueries` (the searches run).

In a stream the metadata comes with the last chunks, after the text it points into, and the indices of
chunks count across all the stream's responses (the API reference asks clients to accumulate them; the
API may also repeat what it sent): `Grounding.add` merges each response's metadata, and `Grounding.cite`
places the markers once the text is complete. A marker goes at its segment's end, after the sentence it
supports (" [1]", as the OpenAI search cites), one number per page in the order first cited.

Sources keep the redirect address, which is what the API gives: it is a page the citation check can fetch
(it follows the redirect). The title is the domain of the page it leads to, and becomes the source's
`site` too, so that who publishes it is judged by that domain and not by Google's redirect host (every
grounding link lives there: one "domain" for all of a run's sources otherwise).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from google.genai import types

from datascraper.sources import CitedPages

# A grounding chunk's title is the domain of the page its redirect leads to ("reuters.com").
_DOMAIN = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}")


@dataclass(frozen=True)
class _Page:
    uri: str
    title: str

    @property
    def site(self) -> str | None:
        """The publisher's domain, which the redirect address does not show."""
        domain = self.title.strip().lower().removeprefix("www.")
        return domain if _DOMAIN.fullmatch(domain) else None


@dataclass
class Grounding:
    """The grounding metadata of one answer, merged across the responses of its stream."""

    pages: list[_Page | None] = field(default_factory=list)  # by chunk index; None: not a web page
    supports: dict[int, list[int]] = field(default_factory=dict)  # segment end (bytes) -> chunk indices
    queries: list[str] = field(default_factory=list)

    def add(self, metadata: types.GroundingMetadata) -> None:
        pages = [_page(chunk) for chunk in metadata.grounding_chunks or ()]
        if pages[: len(self.pages)] == self.pages:
            self.pages = pages  # the same list again, perhaps longer
        else:
            self.pages.extend(pages)  # this response's chunks, after the earlier ones
        for support in metadata.grounding_supports or ():
            end = support.segment.end_index if support.segment is not None else None
            if end is None:
                continue
            cited = self.supports.setdefault(end, [])
            cited.extend(i for i in support.grounding_chunk_indices or () if i not in cited)
        self.queries.extend(q for q in metadata.web_search_queries or () if q and q not in self.queries)

    def cite(self, text: str, pages: CitedPages) -> str:
        """`text` with a marker group at the end of each supported segment, its pages numbered in `pages`."""
        encoded = text.encode()
        pieces: list[str] = []
        start = 0
        for end in sorted(self.supports):
            if end > len(encoded):
                continue  # past the text: not this answer's segment
            numbers = dict.fromkeys(
                pages.cite(page.uri, page.title, site=page.site)
                for index in self.supports[end]
                if 0 <= index < len(self.pages) and (page := self.pages[index]) is not None
            )
            if not numbers:
                continue
            end = _char_boundary(encoded, max(end, start))
            spaced = end == 0 or encoded[end - 1 : end].isspace()
            pieces.append(encoded[start:end].decode())
            pieces.append(("" if spaced else " ") + "".join(f"[{n}]" for n in numbers))
            start = end
        pieces.append(encoded[start:].decode())
        return "".join(pieces)


def _page(chunk: types.GroundingChunk) -> _Page | None:
    web = chunk.web
    if web is None or not web.uri:
        return None
    return _Page(uri=web.uri, title=web.title or web.domain or "")


def _char_boundary(encoded: bytes, end: int) -> int:
    """`end`, moved past any continuation bytes: an offset inside a character would split it."""
    while end < len(encoded) and encoded[end] & 0xC0 == 0x80:
        end += 1
    return end
