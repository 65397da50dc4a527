"""The evaluation report: totals, calibration (does our confidence predict correctness?), the change
from a baseline, and one row per question. Markdown beside the results JSONL, with the calibration also
drawn as a small SVG (no plotting dependency: a few rectangles).

Every text the report did not write itself (row ids, rubric criteria, error codes, the set's file name, the
judge model's name, routes) comes from a question set, a results log or a setting, any of which may be
someone else's: it goes through `markdown_text`, so that it shows as written and never as Markdown or HTML.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape
from pathlib import Path

from datascraper.evaluation.pricing import PRICES_AS_OF
from datascraper.evaluation.results import EvalResult

REPORT_NAME = "report.md"
PLOT_NAME = "calibration.svg"
# A run is faster (cheaper) than its baseline when it takes at most this share of the baseline's time (cost).
CHANGE_RATIO = 0.8
# Confidence bands, lower bound inclusive; the quick path has no confidence and is a band of its own.
BANDS: tuple[tuple[str, float, float], ...] = (
    ("0.00-0.50", 0.0, 0.5),
    ("0.50-0.75", 0.5, 0.75),
    ("0.75-0.90", 0.75, 0.9),
    ("0.90-1.00", 0.9, 1.01),
)
NO_CONFIDENCE = "quick path (none)"
BAR_WIDTH = 20


@dataclass(frozen=True)
class Band:
    """Graded answers whose confidence falls in one band, and how many of them the judge found correct."""

    label: str
    graded: int
    correct: int
    partially: int

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.graded if self.graded else None


@dataclass
class BaselineDiff:
    """What changed, question by question, from an earlier evaluation of the same set."""

    fixed: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    faster: list[str] = field(default_factory=list)
    slower: list[str] = field(default_factory=list)
    cheaper: list[str] = field(default_factory=list)
    costlier: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    reworded: list[str] = field(default_factory=list)


def percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile (`share` in 0-1): a value that was observed, never an interpolation."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def calibration(results: Sequence[EvalResult]) -> list[Band]:
    """Accuracy per confidence band, over the graded answers (errors and ungraded answers are left out)."""
    graded = [result for result in results if result.verdict is not None]
    bands = []
    for label, low, high in BANDS:
        members = [r for r in graded if r.measures.confidence is not None and low <= r.measures.confidence < high]
        bands.append(_band(label, members))
    bands.append(_band(NO_CONFIDENCE, [r for r in graded if r.measures.confidence is None]))
    return bands


def _band(label: str, members: Sequence[EvalResult]) -> Band:
    return Band(
        label,
        graded=len(members),
        correct=sum(1 for r in members if r.verdict == "correct"),
        partially=sum(1 for r in members if r.verdict == "partially"),
    )


def diff_from_baseline(results: Sequence[EvalResult], baseline: Sequence[EvalResult]) -> BaselineDiff:
    """Fixed: correct now, not before; broken: correct before, not now (an error included). Faster and cheaper
    compare answered runs, by `CHANGE_RATIO`. A row whose question is not the baseline's (same id, other
    text) is reworded, and not compared."""
    before = {result.id: result for result in baseline}
    diff = BaselineDiff()
    for result in results:
        old = before.get(result.id)
        if old is None:
            diff.new.append(result.id)
            continue
        if old.question != result.question:
            diff.reworded.append(result.id)
            continue
        if result.verdict == "correct" and old.verdict != "correct":
            diff.fixed.append(result.id)
        elif old.verdict == "correct" and result.verdict != "correct":
            diff.broken.append(result.id)
        if result.status != "answered" or old.status != "answered":
            continue
        now_ms, then_ms = result.measures.latency_ms, old.measures.latency_ms
        if then_ms and now_ms <= then_ms * CHANGE_RATIO:
            diff.faster.append(result.id)
        elif now_ms and then_ms <= now_ms * CHANGE_RATIO:
            diff.slower.append(result.id)
        now_cost, then_cost = result.measures.cost_usd, old.measures.cost_usd
        if now_cost is not None and then_cost:
            if now_cost <= then_cost * CHANGE_RATIO:
                diff.cheaper.append(result.id)
            elif now_cost and then_cost <= now_cost * CHANGE_RATIO:
                diff.costlier.append(result.id)
    return diff


def write_report(
    out_dir: Path,
    results: Sequence[EvalResult],
    *,
    title: str,
    judge_model: str | None,
    baseline: Sequence[EvalResult] | None = None,
    order: Sequence[str] = (),
) -> Path:
    """Write `report.md` and `calibration.svg` into `out_dir`; returns the report's path."""
    position = {question_id: n for n, question_id in enumerate(order)}
    ordered = sorted(results, key=lambda r: (position.get(r.id, len(position)), r.id))
    bands = calibration(ordered)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / PLOT_NAME).write_text(calibration_svg(bands), encoding="utf-8")
    diff = diff_from_baseline(ordered, baseline) if baseline is not None else None
    text = render_report(ordered, bands, title=title, judge_model=judge_model, diff=diff)
    path = out_dir / REPORT_NAME
    path.write_text(text, encoding="utf-8")
    return path


def render_report(
    results: Sequence[EvalResult],
    bands: Sequence[Band],
    *,
    title: str,
    judge_model: str | None,
    diff: BaselineDiff | None,
) -> str:
    judged_by = f"judge {markdown_text(judge_model)}" if judge_model else "not graded (`--no-judge`)"
    lines = [
        f"# Evaluation: {markdown_text(title)}",
        "",
        f"{len(results)} questions · {judged_by} · written {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"Costs are **estimates** from list prices as of {PRICES_AS_OF.isoformat()} "
        "(`datascraper/evaluation/pricing.py`), not billed amounts; unknown: a model (or its search) missing "
        "from the table.",
        "",
        "## Totals",
        "",
        *_totals(results),
        "",
        "## Calibration: accuracy by confidence band",
        "",
        "Does a low confidence mean a wrong answer? Accuracy is the share the judge found correct. The "
        "confidence is the one the answer shows: lowered by citations the check found unsupported, left as the "
        "research put it by those it could not read (a paywall, a bot wall, a timeout).",
        "",
        "| confidence | graded | correct | partially | accuracy | |",
        "|---|---:|---:|---:|---:|---|",
        *(_band_row(band) for band in bands),
        "",
        f"![accuracy by confidence band]({PLOT_NAME})",
        "",
    ]
    if diff is not None:
        lines += ["## Against the baseline", "", *_diff_lines(diff), ""]
    lines += [
        "## Per question",
        "",
        "| id | verdict | latency | tokens | est. cost | calls | rounds | routes | confidence | citations ✓/✗/? "
        "| notes |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|---|---|",
        *(_question_row(result) for result in results),
        "",
    ]
    return "\n".join(lines)


def _totals(results: Sequence[EvalResult]) -> list[str]:
    answered = [r for r in results if r.status == "answered"]
    verdicts = [r.verdict for r in results if r.verdict is not None]
    latencies = [r.measures.latency_ms / 1000 for r in answered]
    costs = [r.measures.cost_usd for r in results]
    known_costs = [c for c in costs if c is not None]
    checked = [r for r in results if r.measures.citations_checked]
    citations = {status: sum(r.measures.citations.get(status, 0) for r in checked) for status in _CITATION_STATUSES}
    accuracy = f"{verdicts.count('correct') / len(verdicts):.0%}" if verdicts else "n/a"
    checked_citations = "not checked"
    if checked:
        counts = "/".join(str(citations[status]) for status in _CITATION_STATUSES)
        checked_citations = f"{counts} ({len(checked)} of {len(results)} runs checked)"
    cost = f"${sum(known_costs):.2f}" + (" (some unknown)" if len(known_costs) < len(costs) else "")
    judged = [r for r in results if r.judge_usage is not None]
    judge_line = []
    if judged:
        judge_tokens = sum(r.judge_usage.input_tokens + r.judge_usage.output_tokens for r in judged if r.judge_usage)
        judge_costs = [r.judge_cost_usd for r in judged]
        judge_cost = "unknown" if None in judge_costs else f"${sum(c for c in judge_costs if c is not None):.2f}"
        judge_line = [
            "",
            f"Grading (not in the figures above): {sum(r.judge_usage.calls for r in judged if r.judge_usage)} judge "
            f"calls, {judge_tokens:,} tokens, est. {judge_cost}.",
        ]
    return [
        "| questions | answered | errors | correct | partially | wrong | ungraded | accuracy |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {len(results)} | {len(answered)} | {len(results) - len(answered)} | {verdicts.count('correct')} "
        f"| {verdicts.count('partially')} | {verdicts.count('wrong')} | {len(answered) - len(verdicts)} | {accuracy} |",
        "",
        "| latency p50 | latency p95 | tokens | est. cost | model calls | web searches | rounds | citations ✓/✗/? |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
        f"| {_seconds(percentile(latencies, 0.5))} | {_seconds(percentile(latencies, 0.95))} "
        f"| {sum(r.measures.tokens for r in results):,} | {cost} | {sum(r.measures.total.calls for r in results)} "
        f"| {sum(r.measures.total.web_search_calls for r in results)} | {sum(r.measures.rounds for r in results)} "
        f"| {checked_citations} |",
        *judge_line,
    ]


_CITATION_STATUSES = ("supported", "unsupported", "unreachable")


def _band_row(band: Band) -> str:
    accuracy = band.accuracy
    if accuracy is None:
        return f"| {band.label} | 0 | 0 | 0 | n/a | |"
    filled = round(accuracy * BAR_WIDTH)
    bar = "█" * filled + "░" * (BAR_WIDTH - filled)
    return f"| {band.label} | {band.graded} | {band.correct} | {band.partially} | {accuracy:.0%} | `{bar}` |"


def _diff_lines(diff: BaselineDiff) -> list[str]:
    rows = [
        ("fixed (correct now, not before)", diff.fixed),
        ("broken (correct before, not now)", diff.broken),
        (f"faster (at most {CHANGE_RATIO:.0%} of the time)", diff.faster),
        ("slower", diff.slower),
        (f"cheaper (at most {CHANGE_RATIO:.0%} of the cost)", diff.cheaper),
        ("costlier", diff.costlier),
        ("new (not in the baseline)", diff.new),
        ("reworded (another question under the same id: not compared)", diff.reworded),
    ]
    return [
        f"- {label}: {len(ids)}" + (f" — {', '.join(map(markdown_text, ids))}" if ids else "") for label, ids in rows
    ]


def _question_row(result: EvalResult) -> str:
    m = result.measures
    if result.status == "error":
        verdict, notes = "error", markdown_text(result.error_code)
    elif result.judge is None:
        verdict, notes = "ungraded", f"judge failed: {markdown_text(result.judge_error)}" if result.judge_error else ""
    else:
        verdict = markdown_text(result.verdict)
        missed = [markdown_text(grade.criteria) for grade in result.judge.criteria if not grade.met]
        notes = ("not met: " + "; ".join(missed)) if missed else ""
        if result.must_pass_failed:
            failed = "; ".join(map(markdown_text, result.must_pass_failed))
            notes += f"{'; ' if notes else ''}must-pass not met (the row fails): {failed}"
    if m.numbers_unmatched:
        notes += f"{'; ' if notes else ''}{m.numbers_unmatched} untraced numbers"
    routes = ", ".join(f"{markdown_text(route)} {count}" for route, count in sorted(m.routes.items())) or "—"
    total = m.total
    if total.web_search_calls:
        routes += f" ({total.web_search_calls} searches)"
    confidence = "—" if m.confidence is None else f"{m.confidence:.2f}"
    cost = "unknown" if m.cost_usd is None else f"${m.cost_usd:.4f}"
    citations = "/".join(str(m.citations.get(status, 0)) for status in _CITATION_STATUSES)
    if not m.citations_checked:
        citations = "not checked"
    return (
        f"| {markdown_text(result.id)} | {verdict} | {m.latency_ms / 1000:.1f} s | {m.tokens:,} | {cost} "
        f"| {total.calls} | {m.rounds} | {routes} | {confidence} | {citations} | {notes} |"
    )


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} s"


# Line breaks of any kind (and the other control characters): a field must stay on its line and in its cell.
_BREAKS = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]+")
# The ASCII punctuation that Markdown (CommonMark and GitHub's tables) gives a meaning: code spans, emphasis,
# links and images, headings, tables, strikethrough. A backslash before any of them shows it as itself.
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#|!~])")
# A scheme that runs script when followed: the colon escaped, so that not even a renderer that links bare
# URLs makes a link of it.
_SCRIPT_SCHEME = re.compile(r"(?i)(javascript|vbscript)(\s*):")


def markdown_text(value: object) -> str:
    """`value` as plain text inside the report's Markdown: `&`, `<` and `>` as HTML entities (no tag, comment
    or autolink), Markdown's punctuation backslash-escaped (no link, image, code span, heading or table cell
    of its own), line breaks as spaces, a `javascript:` scheme broken. The one escape for every field the
    report did not write itself."""
    text = _BREAKS.sub(" ", str(value))
    text = escape(text, quote=False)
    text = _MARKDOWN_PUNCTUATION.sub(r"\\\1", text)
    return _SCRIPT_SCHEME.sub(r"\1\2\\:", text)


def calibration_svg(bands: Sequence[Band]) -> str:
    """Accuracy per confidence band as bars (0-100%), each labelled with its band and answer count."""
    width, height, left, bottom, top = 520, 240, 40, 200, 20
    slot = (width - left - 10) / max(1, len(bands))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="11">',
        "<title>Accuracy by confidence band</title>",
        f'<line x1="{left}" y1="{bottom}" x2="{width - 10}" y2="{bottom}" stroke="#444"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#444"/>',
    ]
    for tick in (0, 50, 100):
        y = bottom - (bottom - top) * tick / 100
        parts.append(f'<text x="{left - 4}" y="{y + 4:.0f}" text-anchor="end">{tick}%</text>')
    for n, band in enumerate(bands):
        x = left + n * slot + slot * 0.15
        bar_width = slot * 0.7
        accuracy = band.accuracy
        if accuracy is not None:
            bar_height = (bottom - top) * accuracy
            parts.append(
                f'<rect x="{x:.1f}" y="{bottom - bar_height:.1f}" width="{bar_width:.1f}" '
                f'height="{bar_height:.1f}" fill="#3b7dd8"><title>{accuracy:.0%}</title></rect>'
            )
            parts.append(
                f'<text x="{x + bar_width / 2:.1f}" y="{bottom - bar_height - 4:.1f}" text-anchor="middle">'
                f"{accuracy:.0%}</text>"
            )
        parts.append(
            f'<text x="{x + bar_width / 2:.1f}" y="{bottom + 14}" text-anchor="middle">{escape(band.label)}</text>'
        )
        parts.append(f'<text x="{x + bar_width / 2:.1f}" y="{bottom + 28}" text-anchor="middle">n={band.graded}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
