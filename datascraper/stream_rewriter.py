"""Rewriting markup in streamed text, where one token may be split across many deltas.

Both citation passes work this way: the web-search answer's inline links become `[n]` markers
(`providers.openai.citations.CitationRewriter`) and the synthesizer's markers are checked against the source list
(`research_engine.synthesizer.CitationGuard`). Plain text is shown at once; only a segment that could
still become a token is held back, and never more than `max_held` characters of it.
"""

from __future__ import annotations

from typing import Final

INCOMPLETE: Final = "incomplete"
"""`scan`'s answer when the held text may still become a token once more text arrives."""


class StreamRewriter:
    opener: str  # the character every token starts with
    max_held: int

    def __init__(self) -> None:
        self._held = ""

    def scan(self, text: str) -> tuple[str, int] | str | None:
        """Read a token at the start of `text` (which starts with `opener`): its replacement and length,
        `INCOMPLETE`, or None when this is no token."""
        raise NotImplementedError

    def feed(self, text: str) -> str:
        """The text that is safe to show now."""
        self._held += text
        shown: list[str] = []
        while self._held:
            start = self._held.find(self.opener)
            if start == -1:
                shown.append(self._held)
                self._held = ""
                break
            shown.append(self._held[:start])
            self._held = self._held[start:]
            token = self.scan(self._held)
            if token == INCOMPLETE and len(self._held) <= self.max_held:
                break
            if isinstance(token, tuple):
                replacement, length = token
                shown.append(replacement)
                self._held = self._held[length:]
            else:  # no token here, or one that grew too long to be real
                shown.append(self.opener)
                self._held = self._held[1:]
        return "".join(shown)

    def flush(self) -> str:
        """Whatever is still held back, as plain text: the stream ended without closing it."""
        held, self._held = self._held, ""
        return held
