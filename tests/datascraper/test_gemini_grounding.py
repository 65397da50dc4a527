"""Grounding metadata to `[n]` markers (`providers.google.grounding`): byte offsets in UTF-8, chunks merged
across a stream's responses whether the API repeats them or sends only the new ones."""

from __future__ import annotations

from google.genai import types

from datascraper.providers.google.grounding import Grounding
from datascraper.sources import CitedPages

A = types.GroundingChunk(web=types.GroundingChunkWeb(uri="https://redirect.example/a", title="reuters.com"))
B = types.GroundingChunk(web=types.GroundingChunkWeb(uri="https://redirect.example/b", title="Apple Newsroom"))


def support(end: int, *indices: int) -> types.GroundingSupport:
    return types.GroundingSupport(segment=types.Segment(end_index=end), grounding_chunk_indices=list(indices))


def test_markers_go_at_byte_offsets_not_character_offsets():
    text = "Ventes: 3 Md€ en 2024. Marge élevée."
    first_end = len("Ventes: 3 Md€ en 2024.".encode())
    grounding = Grounding()
    grounding.add(
        types.GroundingMetadata(
            grounding_chunks=[A, B], grounding_supports=[support(first_end, 0), support(len(text.encode()), 1, 0)]
        )
    )
    pages = CitedPages()

    assert grounding.cite(text, pages) == "Ventes: 3 Md€ en 2024. [1] Marge élevée. [2][1]"
    # The domain a title names is the publisher; a title that is no domain is not taken for one.
    assert [(s.n, s.title, s.site) for s in pages.sources] == [
        (1, "reuters.com", "reuters.com"),
        (2, "Apple Newsroom", None),
    ]


def test_chunks_repeated_by_a_later_response_are_not_counted_twice_and_new_ones_are_appended():
    repeated = Grounding()
    repeated.add(types.GroundingMetadata(grounding_chunks=[A], web_search_queries=["q1"]))
    repeated.add(
        types.GroundingMetadata(
            grounding_chunks=[A, B], grounding_supports=[support(5, 1)], web_search_queries=["q1", "q2"]
        )
    )
    appended = Grounding()
    appended.add(types.GroundingMetadata(grounding_chunks=[A]))
    appended.add(types.GroundingMetadata(grounding_chunks=[B], grounding_supports=[support(5, 1)]))

    for grounding in (repeated, appended):
        pages = CitedPages()
        assert grounding.cite("Done. Next.", pages) == "Done. [1] Next."
        assert [s.url for s in pages.sources] == ["https://redirect.example/b"]
    assert repeated.queries == ["q1", "q2"]


def test_a_support_past_the_text_or_naming_no_page_places_no_marker():
    grounding = Grounding()
    grounding.add(types.GroundingMetadata(grounding_chunks=[A], grounding_supports=[support(99, 0), support(4, 7)]))
    pages = CitedPages()

    assert grounding.cite("Text.", pages) == "Text." and pages.sources == []
