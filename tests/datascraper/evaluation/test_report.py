"""The report: totals, latency percentiles, estimated cost, calibration by confidence band (table, text bars
and an SVG), the change from a baseline, one row per question."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from datascraper.evaluation.report import calibration, diff_from_baseline, markdown_text, percentile, write_report
from datascraper.evaluation.results import CriterionGrade
from tests.datascraper.evaluation.support import result


def test_percentiles_are_observed_values_by_nearest_rank() -> None:
    values = [float(n) for n in range(1, 21)]

    assert percentile(values, 0.5) == 10.0
    assert percentile(values, 0.95) == 19.0
    assert percentile([], 0.5) is None


def test_calibration_counts_accuracy_per_confidence_band_and_the_quick_path_apart() -> None:
    results = [
        result("a", "correct", confidence=0.95),
        result("b", "wrong", confidence=0.92),
        result("c", "wrong", confidence=0.3),
        result("d", "partially", confidence=0.6),
        result("e", "correct", confidence=None),
        result("f", None, confidence=0.95),  # ungraded: not counted
    ]

    bands = {band.label: band for band in calibration(results)}

    assert (bands["0.90-1.00"].graded, bands["0.90-1.00"].accuracy) == (2, 0.5)
    assert bands["0.00-0.50"].accuracy == 0.0
    assert (bands["0.50-0.75"].partially, bands["0.50-0.75"].accuracy) == (1, 0.0)
    assert bands["0.75-0.90"].accuracy is None
    assert bands["quick path (none)"].accuracy == 1.0


def test_the_baseline_diff_lists_fixed_broken_faster_and_cheaper() -> None:
    baseline = [
        result("fixed", "wrong"),
        result("broken", "correct"),
        result("errored", "correct"),
        result("faster", "correct", latency_ms=10_000),
        result("cheaper", "correct", cost_usd=0.10),
    ]
    now = [
        result("fixed", "correct"),
        result("broken", "partially"),
        result("errored", None, status="error"),
        result("faster", "correct", latency_ms=7_000),
        result("cheaper", "correct", cost_usd=0.05),
        result("new", "correct"),
    ]

    diff = diff_from_baseline(now, baseline)

    assert diff.fixed == ["fixed"]
    assert diff.broken == ["broken", "errored"]
    assert diff.faster == ["faster"]
    assert diff.cheaper == ["cheaper"]
    assert diff.new == ["new"]
    assert diff.slower == [] and diff.costlier == []


def test_the_report_has_totals_calibration_a_plot_the_baseline_and_a_row_per_question(tmp_path: Path) -> None:
    results = [
        result("q-b", "wrong", latency_ms=30_000, confidence=0.4),
        result("q-a", "correct", latency_ms=10_000, confidence=0.95),
        result("q-c", None, status="error", cost_usd=None, confidence=None),
    ]

    path = write_report(
        tmp_path,
        results,
        title="questions.jsonl",
        judge_model="gpt-5.4",
        baseline=[result("q-a", "wrong")],
        order=["q-a", "q-b", "q-c"],
    )

    text = path.read_text()
    assert path == tmp_path / "report.md"
    assert "# Evaluation: questions.jsonl" in text and "judge gpt-5.4 ·" in text
    assert "**estimates**" in text and "2026-03-20" in text
    # 3 questions, 2 answered, 1 error, 1 correct, 0 partially, 1 wrong, 0 ungraded, accuracy 1/2.
    assert "| 3 | 2 | 1 | 1 | 0 | 1 | 0 | 50% |" in text
    assert "| 10.0 s | 30.0 s |" in text  # p50 and p95 over the answered runs
    assert "(some unknown)" in text  # one run's cost is unknown
    assert "| 0.90-1.00 | 1 | 1 | 0 | 100% | `████████████████████` |" in text
    assert "| 0.00-0.50 | 1 | 0 | 0 | 0% | `░░░░░░░░░░░░░░░░░░░░` |" in text
    assert "![accuracy by confidence band](calibration.svg)" in text
    assert "left as the research put it by those it could not read" in text, "says what the confidence counts"
    assert "- fixed (correct now, not before): 1 — q-a" in text
    rows = [line for line in text.splitlines() if line.startswith("| q-")]
    assert [row.split(" | ")[0] for row in rows] == ["| q-a", "| q-b", "| q-c"]  # the set's order
    assert "| q-c | error |" in rows[2] and "upstream\\_timeout" in rows[2]
    # Citations not verified (CITATION_VERIFY off) are said to be unchecked, not counted as none supported.
    assert "not checked" in rows[0] and "| not checked |" in text
    svg = (tmp_path / "calibration.svg").read_text()
    assert svg.startswith("<svg") and svg.count("<rect") == 2 and "n=1" in svg


# --- text the report did not write ----------------------------------------------------------------------

HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "[click me](javascript:alert(document.cookie))",
    "# A heading of its own",
    "a | b\nc\r\nd\u2028e",
    "`code` and *emphasis* and _more_ ~gone~ ![pic](x.png)",
    "&amp; &#106;avascript:alert(1) <!-- comment -->",
    "JavaScript :alert(1) and \\[escaped\\]",
]
# What CommonMark makes of a backslash before ASCII punctuation (the character itself) and of an entity.
MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
# Characters that would be Markdown or HTML if left unescaped.
ACTIVE = re.compile(r"(?<!\\)[`*_{}\[\]()#|!~<>]")


def shown(markdown: str) -> str:
    """The text a Markdown renderer shows for an escaped inline text."""
    return html.unescape(MARKDOWN_ESCAPE.sub(r"\1", markdown))


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_text_shows_the_text_as_written_and_nothing_of_it_is_markdown_or_html(text: str) -> None:
    escaped = markdown_text(text)

    assert not ACTIVE.search(escaped.replace("\\\\", "")), escaped
    assert "\n" not in escaped and "\r" not in escaped and "\u2028" not in escaped
    assert not re.search(r"(?i)javascript\s*:", escaped), "a script scheme stays broken even where bare URLs link"
    assert shown(escaped) == re.sub(r"[\r\n\u2028]+", " ", text)


def test_every_field_the_report_did_not_write_is_escaped(tmp_path: Path) -> None:
    """Ids, criteria, error codes, the set's name and the judge's come from files and settings that may be
    someone else's: none of them adds a tag, a link, a heading or a table cell to the report."""
    graded = result("<script>alert(1)</script>", "wrong")
    assert graded.judge is not None
    graded.judge.criteria = [
        CriterionGrade(criteria=text, operator="correctness", met=False, reason="") for text in HOSTILE
    ]
    graded.must_pass_failed = list(HOSTILE)
    failed = result("# failed | row", None, status="error")
    failed.error_code = "[code](javascript:alert(1))"
    judge_failed = result("ungraded\n# row", None)
    judge_failed.judge_error = "<b>timeout</b>"
    judge_failed.measures.routes = {"web_search](javascript:x)": 1}
    baseline = [result("<script>alert(1)</script>", "correct")]

    path = write_report(
        tmp_path,
        [graded, failed, judge_failed],
        title="<h1>set</h1>.jsonl",
        judge_model="gpt-5.4`<i>",
        baseline=baseline,
    )

    text = path.read_text()
    lines = text.splitlines()
    for line in lines:
        assert not line.startswith("#") or line.startswith(("# Evaluation: ", "## ")), line
        assert "<" not in line, line  # no tag, comment or autolink
        assert not re.search(r"(?i)javascript\s*:", line), line
        if line != "![accuracy by confidence band](calibration.svg)":
            assert not re.search(r"(?<!\\)\[[^\]]*(?<!\\)\]\(", line.replace("\\\\", "")), line  # no link
    header = lines.index("## Per question") + 2
    rows = [line for line in lines[header + 2 :] if line]
    assert len(rows) == 3
    assert all(len(re.findall(r"(?<!\\)\|", row.replace("\\\\", ""))) == lines[header].count("|") for row in rows)
    assert "# Evaluation: &lt;h1&gt;set&lt;/h1&gt;.jsonl" in text
    assert "judge gpt-5.4\\`&lt;i&gt;" in text
    assert shown(markdown_text("<script>alert(1)</script>")) in shown(text), "the id reads as written"
    assert "broken (correct before, not now): 1 — &lt;script&gt;alert\\(1\\)&lt;/script&gt;" in text


def test_a_row_that_failed_a_must_pass_item_counts_and_shows_as_wrong_naming_the_item(tmp_path: Path) -> None:
    failed = result("nflx-2024", "correct")
    failed.must_pass_failed = ["Revenue of $39.0 billion"]

    text = write_report(tmp_path, [failed, result("ko-2024", "correct")], title="set.jsonl", judge_model="gpt-5.4").read_text()

    assert "| 2 | 2 | 0 | 1 | 0 | 1 | 0 | 50% |" in text
    assert "| nflx-2024 | wrong |" in text
    assert "must-pass not met (the row fails): Revenue of $39.0 billion |" in text


def test_a_baseline_row_asking_another_question_is_reworded_not_compared() -> None:
    before = result("q-1", "correct", latency_ms=30_000)
    now = result("q-1", "wrong", latency_ms=1_000)
    now.question = "An edited question?"

    diff = diff_from_baseline([now], [before])

    assert diff.reworded == ["q-1"]
    assert diff.broken == [] and diff.faster == [] and diff.new == []
