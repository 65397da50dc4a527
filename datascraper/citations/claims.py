"""The claim each `[n]` marker of an answer cites: the stretch of its sentence the marker closes.

Answers cite in two styles: the synthesizer puts markers inside the sentence ("Revenue rose 6% [1]."),
the web search after it ("Revenue rose 6%. [1]"). Either way a marker group cites the text before it, back
to the sentence start or to the previous marker group within that sentence, so in "Revenue rose 6% [1]
while margins fell [2]." the claim of [1] is "Revenue rose 6%" and that of [2] "while margins fell".
A group with nothing of its own before it ("... [1]. [2]") cites what the group before it cites.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MARKER = re.compile(r"\[(\d+)\]")
# A group: markers next to each other, or separated by white space only.
_GROUP = re.compile(r"\[\d+\](?:\s*\[\d+\])*")
# Sentence ends: . ! ? followed by white space, and line breaks (list items, table rows, paragraphs).
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
_WORDLIKE = re.compile(r"\w")


@dataclass(frozen=True)
class CitedClaim:
    """One marker of the answer: the source it names, its position among the answer's markers (from 0),
    and the claim it cites."""

    n: int
    marker_index: int
    text: str


def cited_claims(answer: str) -> list[CitedClaim]:
    """Every `[n]` marker of `answer`, in order, with its claim."""
    claims: list[CitedClaim] = []
    index = 0
    previous_end = 0
    previous_claim = ""
    for group in _GROUP.finditer(answer):
        claim = _last_sentence(answer[previous_end : group.start()])
        if not _WORDLIKE.search(claim):
            claim = previous_claim
        for marker in _MARKER.finditer(group[0]):
            claims.append(CitedClaim(n=int(marker[1]), marker_index=index, text=claim))
            index += 1
        previous_end, previous_claim = group.end(), claim
    return claims


def _last_sentence(text: str) -> str:
    pieces = [piece.strip() for piece in _SENTENCE_BREAK.split(text.strip())]
    return next((piece for piece in reversed(pieces) if piece), "")
