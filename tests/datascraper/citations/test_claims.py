"""The claim each marker cites, in both citing styles, numbered in the answer's order."""

from __future__ import annotations

from datascraper.citations.claims import CitedClaim, cited_claims


def test_a_marker_after_its_sentence_cites_that_sentence():
    answer = "Apple had a strong year. Revenue rose 6% to $391B. [1] Services grew 13%. [2]"

    assert cited_claims(answer) == [
        CitedClaim(n=1, marker_index=0, text="Revenue rose 6% to $391B."),
        CitedClaim(n=2, marker_index=1, text="Services grew 13%."),
    ]


def test_markers_inside_a_sentence_each_cite_the_stretch_before_them():
    answer = "Revenue rose 6% [1] while margins fell to 44% [2]. Guidance was unchanged [3]."

    assert [(c.n, c.text) for c in cited_claims(answer)] == [
        (1, "Revenue rose 6%"),
        (2, "while margins fell to 44%"),
        (3, "Guidance was unchanged"),
    ]


def test_a_group_of_markers_shares_its_claim_and_each_marker_keeps_its_own_index():
    answer = "Revenue was $391.04 billion [1][2]. It beat estimates. [3] [1]"

    assert cited_claims(answer) == [
        CitedClaim(n=1, marker_index=0, text="Revenue was $391.04 billion"),
        CitedClaim(n=2, marker_index=1, text="Revenue was $391.04 billion"),
        CitedClaim(n=3, marker_index=2, text="It beat estimates."),
        CitedClaim(n=1, marker_index=3, text="It beat estimates."),
    ]


def test_a_marker_with_nothing_of_its_own_before_it_cites_what_the_previous_one_cites():
    answer = "Net income was $93.7 billion [1]. [2]"

    assert [(c.n, c.text) for c in cited_claims(answer)] == [
        (1, "Net income was $93.7 billion"),
        (2, "Net income was $93.7 billion"),
    ]


def test_lines_of_a_list_are_claims_of_their_own():
    answer = "Highlights:\n- Revenue: $391B [1]\n- Net margin: 24% [2]\n\nSee the sources."

    assert [(c.n, c.text) for c in cited_claims(answer)] == [(1, "- Revenue: $391B"), (2, "- Net margin: 24%")]


def test_an_answer_without_markers_has_no_claims():
    assert cited_claims("Nothing is cited here. [a] [] [x1]") == []
