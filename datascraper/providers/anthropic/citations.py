"""The hosted web search's citations, as `[n]` markers while the answer streams.

The Messages API cites by text block: after a `web_search_tool_result`, the answer comes as text blocks,
and a block that states what a page says carries `citations` (`web_search_result_location`: the page's
`url`, `title` and the `cited_text`), each sent as a `citations_delta` of that block. The block's text is
the claim, so its pages' markers close it: `Revenue rose 6%` + `[1]` + `.` (the next block) reads
"Revenue rose 6% [1]." as the synthesizer writes its own. Trailing white space is held back until the
block ends, so that a marker never sits after a line break.

With web search, Claude narrates before each search ("I'll search for Apple's latest results."): a text
block followed by a `server_tool_use` is that narration, not the answer, and is dropped. So each text block
is shown when the next block begins (or the stream ends), not before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from datascraper.schemas import Source
from datascraper.sources import CitedPages

WEB_SEARCH_CITATION = "web_search_result_location"


class CitedTextBlocks:
    """The answer's text blocks as shown: each cited block closed by its pages' markers, numbered per page
    after `source_offset`; with `drop_narration`, the text written before a search left out."""

    def __init__(self, *, source_offset: int = 0, drop_narration: bool = False) -> None:
        self._pages = CitedPages(source_offset=source_offset)
        self._cited: dict[int, dict[int, None]] = {}  # block index → its pages' numbers, in order
        self._held = ""  # trailing white space
        self._drop_narration = drop_narration
        self._pending: list[str] = []  # with `drop_narration`: the text since the last block began

    def start(self, index: int, block: Mapping[str, Any]) -> str:
        """A block begins: the text before it, unless it is a search; what it already holds, if text."""
        if block.get("type") == "server_tool_use":
            self._pending.clear()
            return ""
        shown = self._release()
        if block.get("type") != "text":
            return shown
        for citation in block.get("citations") or ():
            self.cite(index, citation)
        return shown + self.text(block.get("text") or "")

    def text(self, text: str) -> str:
        shown = self._held + text
        kept = shown.rstrip()
        self._held = shown[len(kept) :]
        return self._show(kept)

    def cite(self, index: int, citation: object) -> None:
        if not isinstance(citation, Mapping) or citation.get("type") != WEB_SEARCH_CITATION:
            return
        url = citation.get("url")
        if isinstance(url, str) and url.startswith(("https://", "http://")):
            number = self._pages.cite(url, citation.get("title") or "")
            self._cited.setdefault(index, {})[number] = None

    def stop(self, index: int) -> str:
        """A block ends: its markers, then the white space held back."""
        numbers = self._cited.pop(index, None)
        markers = " " + "".join(f"[{n}]" for n in numbers) if numbers else ""
        held, self._held = self._held, ""
        return self._show(markers + held)

    def flush(self) -> str:
        """The stream ended: the markers of the blocks it left open, and all text held back."""
        closing = "".join(self.stop(index) for index in list(self._cited)) + self.stop(-1)
        return closing + self._release()

    @property
    def sources(self) -> list[Source]:
        return self._pages.sources

    def _show(self, text: str) -> str:
        if not self._drop_narration:
            return text
        self._pending.append(text)
        return ""

    def _release(self) -> str:
        shown = "".join(self._pending)
        self._pending.clear()
        return shown
