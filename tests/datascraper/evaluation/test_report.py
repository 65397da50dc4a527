"""The report: totals, latency percentiles, estimated cost, calibration by confidence band (table, text bars
and an SVG), the change from a baseline, one row per question."""

from __future__ import annotations

from pathlib import Path

from datascraper.evaluation.report import calibration, diff_from_baseline, percentile, write_report
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
    assert "# Evaluation: questions.jsonl" in text and "judge `gpt-5.4`" in text
    assert "**estimates**" in text and "2026-03-20" in text
    # 3 questions, 2 answered, 1 error, 1 correct, 0 partially, 1 wrong, 0 ungraded, accuracy 1/2.
    assert "| 3 | 2 | 1 | 1 | 0 | 1 | 0 | 50% |" in text
    assert "| 10.0 s | 30.0 s |" in text  # p50 and p95 over the answered runs
    assert "(some n/a)" in text  # one run's cost is unknown
    assert "| 0.90-1.00 | 1 | 1 | 0 | 100% | `████████████████████` |" in text
    assert "| 0.00-0.50 | 1 | 0 | 0 | 0% | `░░░░░░░░░░░░░░░░░░░░` |" in text
    assert "![accuracy by confidence band](calibration.svg)" in text
    assert "left as the research put it by those it could not read" in text, "says what the confidence counts"
    assert "- fixed (correct now, not before): 1 — q-a" in text
    rows = [line for line in text.splitlines() if line.startswith("| q-")]
    assert [row.split(" | ")[0] for row in rows] == ["| q-a", "| q-b", "| q-c"]  # the set's order
    assert "| q-c | error |" in rows[2] and "`upstream_timeout`" in rows[2]
    # Citations not verified (CITATION_VERIFY off) are said to be unchecked, not counted as none supported.
    assert "not checked" in rows[0] and "| not checked |" in text
    svg = (tmp_path / "calibration.svg").read_text()
    assert svg.startswith("<svg") and svg.count("<rect") == 2 and "n=1" in svg
