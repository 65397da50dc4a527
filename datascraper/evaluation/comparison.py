"""The comparison of configurations over one question set (`manage.py evaluate SET --config ...`), side by side:
accuracy overall and by question type, must-pass failures, latency p50/p95, tokens, web searches and estimated
cost per question, and accuracy by confidence band. `comparison.json` holds the figures, `comparison.md` shows
them; each configuration's own report stays in its folder.

A configuration whose process failed, or that answered no question (a retired model: every row an error), is
`failed` with its error; its figures are those of what finished. Everything the comparison did not write
itself (names, files, settings, question types, errors, the judge's name) goes through `report.markdown_text`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path

from pydantic import BaseModel, Field, computed_field

from datascraper.evaluation.configuration_runs import ConfigurationRun, RunStatus
from datascraper.evaluation.configurations import Configuration
from datascraper.evaluation.pricing import PRICES_AS_OF
from datascraper.evaluation.report import calibration, markdown_text, percentile
from datascraper.evaluation.results import EvalResult

COMPARISON_NAME = "comparison.md"
FIGURES_NAME = "comparison.json"
NO_TYPE = "(no type)"


class Accuracy(BaseModel):
    """Graded answers of a group (a question type, a confidence band) and how many the judge found correct."""

    graded: int
    correct: int
    partially: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def accuracy(self) -> float | None:
        return self.correct / self.graded if self.graded else None


class ConfigurationFigures(BaseModel):
    """One configuration: what it is, how its process ended, and its figures over the set's questions."""

    name: str
    env_file: str
    settings: dict[str, str] = Field(description="The env file's settings; keys', tokens' and passwords' hidden.")
    planner_model: str
    research_model: str
    status: RunStatus
    error: str | None
    questions: int
    answered: int
    errors: dict[str, int] = Field(description="Rows that ended in an error, by its code.")
    correct: int
    partially: int
    wrong: int
    ungraded: int
    accuracy: float | None = Field(description="Correct over graded answers.")
    must_pass_failures: int = Field(description="Rows failed by a must-pass rubric item not met.")
    latency_p50_s: float | None
    latency_p95_s: float | None
    tokens_per_question: float | None
    web_searches_per_question: float | None
    cost_per_question_usd: float | None = Field(description="Over the rows whose models are in the price table.")
    cost_unknown: int = Field(description="Rows with a model missing from the price table (no estimate).")
    by_type: dict[str, Accuracy]
    by_confidence: dict[str, Accuracy]


class Comparison(BaseModel):
    """Every configuration's figures over one question set, graded by one judge (None: not graded)."""

    question_set: str
    questions: int
    judge_model: str | None
    written_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    prices_as_of: date = PRICES_AS_OF
    configurations: list[ConfigurationFigures]


def configuration_figures(
    configuration: Configuration, run: ConfigurationRun, results: Sequence[EvalResult], *, questions: int
) -> ConfigurationFigures:
    """The figures of one configuration's results (those of the set's rows that finished)."""
    answered = [r for r in results if r.status == "answered"]
    errors = Counter(r.error_code or "error" for r in results if r.status == "error")
    status, error = run.status, run.error
    if status == "completed" and results and not answered:
        status, error = "failed", ", ".join(f"{code} ({n} of {len(results)} rows)" for code, n in errors.items())
    verdicts = [r.verdict for r in results if r.verdict is not None]
    latencies = [r.measures.latency_ms / 1000 for r in answered]
    costs = [r.measures.cost_usd for r in results if r.measures.cost_usd is not None]
    return ConfigurationFigures(
        name=configuration.name,
        env_file=str(configuration.env_file),
        settings=configuration.shown_settings,
        planner_model=configuration.research.planner_model,
        research_model=configuration.research.research_model,
        status=status,
        error=error,
        questions=questions,
        answered=len(answered),
        errors=dict(errors),
        correct=verdicts.count("correct"),
        partially=verdicts.count("partially"),
        wrong=verdicts.count("wrong"),
        ungraded=len(answered) - len(verdicts),
        accuracy=verdicts.count("correct") / len(verdicts) if verdicts else None,
        must_pass_failures=sum(1 for r in results if r.judge is not None and r.must_pass_failed),
        latency_p50_s=percentile(latencies, 0.5),
        latency_p95_s=percentile(latencies, 0.95),
        tokens_per_question=_mean([r.measures.tokens for r in results]),
        web_searches_per_question=_mean([r.measures.total.web_search_calls for r in results]),
        cost_per_question_usd=_mean(costs),
        cost_unknown=len(results) - len(costs),
        by_type=_by_type(results),
        by_confidence={
            band.label: Accuracy(graded=band.graded, correct=band.correct, partially=band.partially)
            for band in calibration(results)
        },
    )


def _by_type(results: Sequence[EvalResult]) -> dict[str, Accuracy]:
    graded = [r for r in results if r.verdict is not None]
    types = sorted({r.category or NO_TYPE for r in graded})
    return {
        kind: Accuracy(
            graded=sum(1 for r in graded if (r.category or NO_TYPE) == kind),
            correct=sum(1 for r in graded if (r.category or NO_TYPE) == kind and r.verdict == "correct"),
            partially=sum(1 for r in graded if (r.category or NO_TYPE) == kind and r.verdict == "partially"),
        )
        for kind in types
    }


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def write_comparison(out_dir: Path, comparison: Comparison) -> Path:
    """Write `comparison.json` and `comparison.md` into `out_dir`; returns the Markdown's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / FIGURES_NAME).write_text(comparison.model_dump_json(indent=2) + "\n", encoding="utf-8")
    path = out_dir / COMPARISON_NAME
    path.write_text(render_comparison(comparison), encoding="utf-8")
    return path


def render_comparison(comparison: Comparison) -> str:
    configurations = comparison.configurations
    judged_by = (
        f"judge {markdown_text(comparison.judge_model)} for every configuration"
        if comparison.judge_model
        else "not graded (`--no-judge`)"
    )
    header = "| | " + " | ".join(markdown_text(c.name) for c in configurations) + " |"
    rule = "|---|" + "---:|" * len(configurations)
    lines = [
        f"# Comparison: {markdown_text(comparison.question_set)}",
        "",
        f"{len(configurations)} configurations · {comparison.questions} questions · {judged_by} · written "
        f"{comparison.written_at:%Y-%m-%d %H:%M} UTC",
        "",
        "Each configuration ran in a process of its own, one after another, with its env file over this "
        "environment; its own report is in its folder (`NAME/report.md`). Costs are **estimates** from list "
        f"prices as of {comparison.prices_as_of.isoformat()} (`datascraper/evaluation/pricing.py`), not billed "
        "amounts; unknown: a model (or its search) missing from the table.",
        "",
        "## Configurations",
        "",
        "| configuration | env file | planner | research model | settings | status |",
        "|---|---|---|---|---|---|",
        *(_configuration_row(c) for c in configurations),
        "",
        "## Side by side",
        "",
        header,
        rule,
        *_side_by_side(configurations),
        "",
        "## Accuracy by question type",
        "",
        header.replace("| |", "| type |", 1),
        rule,
        *_accuracy_rows(configurations, lambda c: c.by_type, from_files=True),
        "",
        "## Accuracy by confidence band",
        "",
        "The confidence each answer shows, banded as in each configuration's report.",
        "",
        header.replace("| |", "| confidence |", 1),
        rule,
        *_accuracy_rows(configurations, lambda c: c.by_confidence, from_files=False),
        "",
    ]
    return "\n".join(lines)


def _configuration_row(c: ConfigurationFigures) -> str:
    settings = "; ".join(f"{markdown_text(name)}={markdown_text(value)}" for name, value in c.settings.items())
    status = {"completed": "completed", "failed": "failed", "timed_out": "timed out", "interrupted": "interrupted"}
    shown = status[c.status] + (f": {markdown_text(c.error)}" if c.error and c.status != "completed" else "")
    return (
        f"| {markdown_text(c.name)} | {markdown_text(c.env_file)} | {markdown_text(c.planner_model)} "
        f"| {markdown_text(c.research_model)} | {settings or '—'} | {shown} |"
    )


def _side_by_side(configurations: Sequence[ConfigurationFigures]) -> list[str]:
    rows: list[tuple[str, Callable[[ConfigurationFigures], str]]] = [
        ("answered", lambda c: f"{c.answered} of {c.questions}"),
        ("errors", lambda c: ", ".join(f"{markdown_text(k)} {n}" for k, n in sorted(c.errors.items())) or "—"),
        ("correct · partially · wrong", lambda c: f"{c.correct} · {c.partially} · {c.wrong}"),
        ("accuracy", lambda c: _percent(c.accuracy)),
        ("must-pass failures", lambda c: str(c.must_pass_failures)),
        ("latency p50", lambda c: _number(c.latency_p50_s, "{:.1f} s")),
        ("latency p95", lambda c: _number(c.latency_p95_s, "{:.1f} s")),
        ("tokens per question", lambda c: _number(c.tokens_per_question, "{:,.0f}")),
        ("web searches per question", lambda c: _number(c.web_searches_per_question, "{:.1f}")),
        ("est. cost per question", _cost),
    ]
    return [f"| {label} | " + " | ".join(cell(c) for c in configurations) + " |" for label, cell in rows]


def _accuracy_rows(
    configurations: Sequence[ConfigurationFigures],
    groups: Callable[[ConfigurationFigures], dict[str, Accuracy]],
    *,
    from_files: bool,
) -> list[str]:
    """One row per group of any configuration: question types (from the set: sorted, escaped), or confidence
    bands (written here, in their order)."""
    labels = list(dict.fromkeys(label for c in configurations for label in groups(c)))
    rows = []
    for label in sorted(labels) if from_files else labels:
        cells = [_accuracy_cell(groups(c).get(label)) for c in configurations]
        rows.append(f"| {markdown_text(label) if from_files else label} | " + " | ".join(cells) + " |")
    return rows


def _accuracy_cell(group: Accuracy | None) -> str:
    if group is None or not group.graded:
        return "n/a"
    return f"{_percent(group.accuracy)} ({group.correct} of {group.graded})"


def _cost(c: ConfigurationFigures) -> str:
    if c.cost_per_question_usd is None:
        return "unknown"
    return f"${c.cost_per_question_usd:.4f}" + (f" ({c.cost_unknown} unknown)" if c.cost_unknown else "")


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _number(value: float | None, form: str) -> str:
    return "n/a" if value is None else form.format(value)
