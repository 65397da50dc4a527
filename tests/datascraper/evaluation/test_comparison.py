"""The comparison: each configuration's figures over the set's results, side by side in Markdown and in JSON,
with a configuration that answered nothing failed, secrets never shown and every outside text escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from datascraper.evaluation.comparison import Comparison, configuration_figures, write_comparison
from datascraper.evaluation.configuration_runs import ConfigurationRun
from datascraper.evaluation.configurations import Configuration
from datascraper.evaluation.results import EvalResult, Verdict
from datascraper.models_config import ResearchConfig
from tests.datascraper.evaluation.support import result
from tests.datascraper.evaluation.test_report import HOSTILE

COMPLETED = ConfigurationRun("completed", 0)


def configuration(name: str = "mini", **settings: str) -> Configuration:
    research = ResearchConfig.from_env({**settings})
    return Configuration(name, Path(f"{name}.env"), settings, {}, research)


def typed(id: str, category: str | None, verdict: Verdict | None = "correct", **fields: Any) -> EvalResult:
    row = result(id, verdict, **fields)
    row.category = category
    return row


def test_a_configurations_figures_are_its_accuracy_by_type_must_pass_failures_latency_tokens_and_cost() -> None:
    must_pass = typed("c", "trends", "correct", latency_ms=30_000)
    must_pass.must_pass_failed = ["Revenue of $39.0 billion"]  # the judge said correct: the row is wrong
    results = [
        typed("a", "statement", "correct", latency_ms=10_000, cost_usd=0.02),
        typed("b", "statement", "partially", latency_ms=20_000, cost_usd=0.04),
        must_pass,
        typed("d", None, "wrong", latency_ms=40_000, cost_usd=None),  # a model missing from the price table
        typed("e", "trends", None, status="error"),
    ]

    figures = configuration_figures(configuration(RESEARCH_MODEL="gpt-5.4-mini"), COMPLETED, results, questions=6)

    assert (figures.questions, figures.answered, figures.errors) == (6, 4, {"upstream_timeout": 1})
    assert (figures.correct, figures.partially, figures.wrong, figures.accuracy) == (1, 1, 2, 0.25)
    assert figures.must_pass_failures == 1
    assert {kind: (g.graded, g.correct) for kind, g in figures.by_type.items()} == {
        "statement": (2, 1),
        "trends": (1, 0),
        "(no type)": (1, 0),
    }
    assert (figures.latency_p50_s, figures.latency_p95_s) == (20.0, 40.0)
    assert figures.tokens_per_question == 1_000  # 900 in and 100 out, each row
    assert figures.cost_unknown == 1 and figures.cost_per_question_usd == (0.02 + 0.04 + 0.05 + 0.05) / 4
    assert figures.by_confidence["0.75-0.90"].graded == 4 and figures.research_model == "gpt-5.4-mini"
    assert (figures.status, figures.error) == ("completed", None)


def test_a_configuration_that_answered_no_question_is_failed_with_its_error_codes() -> None:
    results = [typed(id, "statement", None, status="error") for id in ("a", "b")]

    figures = configuration_figures(configuration(), COMPLETED, results, questions=2)

    assert (figures.status, figures.error, figures.accuracy) == ("failed", "upstream_timeout (2 of 2 rows)", None)


def test_a_configuration_whose_process_failed_or_timed_out_keeps_that_with_the_figures_of_what_finished() -> None:
    crashed = ConfigurationRun("failed", 1, "provider_not_configured: set OPENAI_API_KEY to evaluate the answers.")
    stopped = ConfigurationRun("timed_out", 130, "stopped after 600 s (its timeout)")

    failed = configuration_figures(configuration("a"), crashed, [], questions=2)
    timed_out = configuration_figures(configuration("b"), stopped, [typed("a", "statement")], questions=2)

    assert (failed.status, failed.error, failed.answered) == ("failed", crashed.error, 0)
    assert (timed_out.status, timed_out.answered, timed_out.accuracy) == ("timed_out", 1, 1.0)


def test_the_comparison_shows_configurations_side_by_side_in_markdown_and_its_figures_in_json(tmp_path: Path) -> None:
    full = configuration_figures(configuration("full"), COMPLETED, [typed("a", "statement"), typed("b", "trends")], questions=2)
    mini = configuration_figures(
        configuration("mini", RESEARCH_MODEL="gpt-5.4-mini"), COMPLETED, [typed("a", "statement", "wrong")], questions=2
    )

    path = write_comparison(
        tmp_path, Comparison(question_set="set.jsonl", questions=2, judge_model="gpt-5.4", configurations=[full, mini])
    )

    text = path.read_text()
    assert "2 configurations · 2 questions · judge gpt-5.4 for every configuration" in text
    assert "| | full | mini |" in text
    assert "| answered | 2 of 2 | 1 of 2 |" in text
    assert "| accuracy | 100% | 0% |" in text
    assert "| statement | 100% (1 of 1) | 0% (0 of 1) |" in text
    assert "| trends | 100% (1 of 1) | n/a |" in text
    assert "| 0.75-0.90 | 100% (2 of 2) | 0% (0 of 1) |" in text
    figures = json.loads((tmp_path / "comparison.json").read_text())
    assert [c["accuracy"] for c in figures["configurations"]] == [1.0, 0.0]
    assert figures["judge_model"] == "gpt-5.4" and figures["configurations"][1]["by_type"]["statement"]["accuracy"] == 0.0


def test_a_keys_value_is_never_shown(tmp_path: Path) -> None:
    secret = configuration("a", OPENAI_API_KEY="placeholder-secret-a", TAVILY_API_KEY="placeholder-secret-b", RESEARCH_MAX_ITERATIONS="2")
    figures = configuration_figures(secret, COMPLETED, [typed("a", "statement")], questions=1)

    write_comparison(tmp_path, Comparison(question_set="s.jsonl", questions=1, judge_model=None, configurations=[figures]))

    written = (tmp_path / "comparison.md").read_text() + (tmp_path / "comparison.json").read_text()
    assert "secret" not in written
    assert "RESEARCH\\_MAX\\_ITERATIONS=2" in written and "OPENAI\\_API\\_KEY=\\(set, not shown\\)" in written


def test_every_field_the_comparison_did_not_write_is_escaped(tmp_path: Path) -> None:
    """Names of files, settings, question types, errors and the judge's come from files and processes that may
    be someone else's: none of them adds a tag, a link, a heading or a table cell to the comparison."""
    hostile = Configuration(HOSTILE[0], Path(HOSTILE[1]), dict.fromkeys(HOSTILE[:3], HOSTILE[4]), {}, ResearchConfig())
    rows = [typed(str(n), text) for n, text in enumerate(HOSTILE)]
    rows[-1].status, rows[-1].error_code = "error", HOSTILE[1]
    failed = ConfigurationRun("failed", 1, HOSTILE[0] + HOSTILE[5])
    figures = [configuration_figures(hostile, failed, rows, questions=len(rows)), configuration_figures(configuration(), COMPLETED, rows, questions=7)]

    path = write_comparison(
        tmp_path, Comparison(question_set=HOSTILE[2] + ".jsonl", questions=len(rows), judge_model=HOSTILE[6], configurations=figures)
    )

    lines = path.read_text().splitlines()
    for line in lines:
        assert not line.startswith("#") or line.startswith(("# Comparison: ", "## ")), line
        assert "<" not in line, line
        assert not re.search(r"(?i)javascript\s*:", line), line
        assert not re.search(r"(?<!\\)\[[^\]]*(?<!\\)\]\(", line.replace("\\\\", "")), line
    tables = [line for line in lines if line.startswith("|")]
    header_cells = {line.count("|") for line in tables if line.startswith(("| configuration |", "| |", "| type |"))}
    for line in tables:
        cells = len(re.findall(r"(?<!\\)\|", line.replace("\\\\", "")))
        assert cells in header_cells, line
