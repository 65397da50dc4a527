"""`manage.py evaluate` runs a question set through the research router against the fake provider, grades each
answer with the judge model, and writes the results JSONL and the report; run again, it resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from datascraper.evaluation.results import CriterionGrade, JudgeVerdict, load_results
from tests.datascraper.evaluation.support import is_judge
from tests.fakes.openai_server import FakeOpenAIServer, JsonReply, Sentence, TextReply, has_web_search

ROWS = [
    {
        "id": "nflx-2024",
        "question": "What was Netflix's revenue in 2024?",
        "mode": "quick",
        "reference": "$39.0 billion",
        "rubric": [{"operator": "correctness", "criteria": "About $39.0 billion"}],
        "as_of": "2025-01-21",
        "category": "statement",
    },
    {
        "id": "ko-2024",
        "question": "What were Coca-Cola's net revenues in 2024?",
        "mode": "quick",
        "reference": "$47.1 billion",
        "rubric": [{"operator": "correctness", "criteria": "About $47.1 billion"}],
        "as_of": "2025-02-11",
        "category": "statement",
    },
]


def verdict(value: str) -> JudgeVerdict:
    met = value == "correct"
    return JudgeVerdict(
        criteria=[CriterionGrade(criteria="the figure", operator="correctness", met=met, reason="")],
        verdict=value,  # type: ignore[arg-type]
        explanation="",
    )


@pytest.fixture
def question_set(tmp_path: Path) -> Path:
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    return path


def script_answers(fake: FakeOpenAIServer) -> None:
    for text in ("Netflix's 2024 revenue was $39.0 billion.", "Coca-Cola's 2024 net revenues were $47.1 billion."):
        company = text.split("'")[0]
        fake.script(
            TextReply([Sentence(text, cites=[("https://www.reuters.com/business/results", "Results - Reuters")])]),
            when=lambda request, company=company: has_web_search(request) and company in request.input_text,
        )


def evaluate(*args: str) -> tuple[str, str]:
    stdout, stderr = StringIO(), StringIO()
    call_command("evaluate", *args, stdout=stdout, stderr=stderr)
    return stdout.getvalue(), stderr.getvalue()


def test_each_row_is_answered_graded_logged_and_reported(fake_openai: FakeOpenAIServer, question_set: Path, tmp_path: Path) -> None:
    script_answers(fake_openai)
    fake_openai.script(JsonReply(verdict("correct")), when=lambda r: is_judge(r) and "Netflix" in r.input_text)
    fake_openai.script(JsonReply(verdict("wrong")), when=lambda r: is_judge(r) and "Coca-Cola" in r.input_text)
    out = tmp_path / "run"

    stdout, stderr = evaluate(str(question_set), "--out", str(out))

    results = {result.id: result for result in load_results(out / "results.jsonl")}
    assert {id: r.verdict for id, r in results.items()} == {"nflx-2024": "correct", "ko-2024": "wrong"}
    assert "$39.0 billion" in results["nflx-2024"].answer
    assert results["nflx-2024"].measures.total.web_search_calls >= 1
    judged = [r for r in fake_openai.requests if is_judge(r)]
    assert {r.model for r in judged} == {"gpt-5.4"}  # the research model, EVAL_JUDGE_MODEL being unset
    assert stdout.strip() == str(out / "report.md")
    report = (out / "report.md").read_text()
    assert "| 2 | 2 | 0 | 1 | 0 | 1 | 0 | 50% |" in report
    assert "| nflx-2024 | correct |" in report and "| ko-2024 | wrong |" in report
    assert "Grading (not in the figures above): 2 judge calls" in report
    assert (out / "calibration.svg").exists()
    assert "2/2" in stderr and "judge gpt-5.4" in stderr


def test_run_again_it_skips_the_rows_already_logged(fake_openai: FakeOpenAIServer, question_set: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    evaluate(str(question_set), "--out", str(out), "--no-judge")
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text(lines[0] + "\n")  # as if interrupted after the first result
    kept = json.loads(lines[0])["id"]
    asked_before = len(fake_openai.requests)

    _, stderr = evaluate(str(question_set), "--out", str(out), "--no-judge")

    again = [r for r in fake_openai.requests[asked_before:] if has_web_search(r)]
    other = next(row for row in ROWS if row["id"] != kept)
    assert [other["question"] in r.input_text for r in again] == [True]
    assert sorted(r.id for r in load_results(out / "results.jsonl")) == sorted(row["id"] for row in ROWS)
    assert "1 already in" in stderr


def test_without_the_judge_nothing_is_graded(fake_openai: FakeOpenAIServer, question_set: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"

    evaluate(str(question_set), "--out", str(out), "--no-judge")

    assert not [r for r in fake_openai.requests if is_judge(r)]
    report = (out / "report.md").read_text()
    assert "not graded (`--no-judge`)" in report
    assert "| 2 | 2 | 0 | 0 | 0 | 0 | 2 | n/a |" in report


def test_a_baseline_is_compared_in_the_report(fake_openai: FakeOpenAIServer, question_set: Path, tmp_path: Path) -> None:
    fake_openai.script(JsonReply(verdict("wrong")), when=is_judge, times=2)
    evaluate(str(question_set), "--out", str(tmp_path / "before"))
    fake_openai.script(JsonReply(verdict("correct")), when=is_judge, times=None)

    evaluate(str(question_set), "--out", str(tmp_path / "after"), "--baseline", str(tmp_path / "before" / "results.jsonl"))

    report = (tmp_path / "after" / "report.md").read_text()
    assert "## Against the baseline" in report
    assert "- fixed (correct now, not before): 2" in report


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--concurrency", "0"], "between 1 and 16"),
        (["--baseline", "/nonexistent/results.jsonl"], "no such baseline"),
    ],
)
def test_bad_arguments_are_refused_before_anything_runs(
    fake_openai: FakeOpenAIServer, question_set: Path, args: list[str], message: str
) -> None:
    with pytest.raises(CommandError, match=message):
        evaluate(str(question_set), *args)
    assert not fake_openai.requests


def test_an_unreadable_set_names_its_line(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text('{"id": "a", "question": "q"}\n{"id": "b"}\n', encoding="utf-8")

    with pytest.raises(CommandError, match=r"line 2: question"):
        evaluate(str(path))


def test_without_a_key_it_says_so_at_once(no_provider: None, question_set: Path) -> None:
    with pytest.raises(CommandError, match="provider_not_configured"):
        evaluate(str(question_set))


def test_ctrl_c_stops_with_the_finished_rows_logged_and_a_second_run_resumes(
    fake_openai: FakeOpenAIServer, question_set: Path, tmp_path: Path
) -> None:
    # Coca-Cola's search hangs: the user gives up after Netflix's result is logged.
    fake_openai.script(TextReply(first_byte_delay=30), when=lambda r: has_web_search(r) and "Coca-Cola" in r.input_text)
    out = tmp_path / "run"
    command = [sys.executable, "manage.py", "evaluate", str(question_set), "--out", str(out), "--no-judge"]
    child = subprocess.Popen(
        [*command, "--concurrency", "1"],
        cwd=settings.BASE_DIR,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    results = out / "results.jsonl"
    deadline = time.monotonic() + 30
    while not (results.exists() and results.read_text().count("\n") == 1) and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=30)

    assert child.returncode == 130, stderr
    assert "interrupted" in stderr and "run the same command again to resume" in stderr
    assert "Traceback" not in stderr
    assert [r.id for r in load_results(results)] == ["nflx-2024"]
    assert "| nflx-2024 |" in (out / "report.md").read_text()  # the report of what finished

    fake_openai.script(TextReply(["Coca-Cola's 2024 net revenues were $47.1 billion."]), when=has_web_search)
    again = subprocess.run(command, cwd=settings.BASE_DIR, env=os.environ, capture_output=True, text=True, timeout=60)

    assert again.returncode == 0, again.stderr
    assert sorted(r.id for r in load_results(results)) == ["ko-2024", "nflx-2024"]
    assert "1 already in" in again.stderr


def test_a_row_whose_question_changed_is_answered_again_and_reported_with_its_new_result(
    fake_openai: FakeOpenAIServer, question_set: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    evaluate(str(question_set), "--out", str(out), "--no-judge")
    edited = [ROWS[0], {**ROWS[1], "question": "What were Coca-Cola's net operating revenues in fiscal 2024?"}]
    question_set.write_text("".join(json.dumps(row) + "\n" for row in edited), encoding="utf-8")
    asked_before = len(fake_openai.requests)

    _, stderr = evaluate(str(question_set), "--out", str(out), "--no-judge")

    again = [r for r in fake_openai.requests[asked_before:] if has_web_search(r)]
    assert [edited[1]["question"] in r.input_text for r in again] == [True]
    assert "1 already in" in stderr and "the set changed since its last run here" in stderr
    report = (out / "report.md").read_text()
    assert "2 questions" in report and report.count("| ko-2024 |") == 1
    results = load_results(out / "results.jsonl")
    assert [r.question for r in results if r.id == "ko-2024"] == [ROWS[1]["question"], edited[1]["question"]]


def test_an_out_folder_of_another_question_set_is_refused_untouched(
    fake_openai: FakeOpenAIServer, question_set: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    evaluate(str(question_set), "--out", str(out), "--no-judge")
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    other_set = tmp_path / "other" / "set.jsonl"
    other_set.parent.mkdir()
    other_set.write_text(json.dumps(ROWS[0]) + "\n", encoding="utf-8")
    asked_before = len(fake_openai.requests)

    with pytest.raises(CommandError, match=rf"{out} holds the evaluation of another question set \({question_set}\)"):
        evaluate(str(other_set), "--out", str(out), "--no-judge")

    assert len(fake_openai.requests) == asked_before
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before


def test_a_results_file_no_manifest_claims_is_refused_untouched(
    fake_openai: FakeOpenAIServer, question_set: Path, tmp_path: Path
) -> None:
    """Someone else's results.jsonl (or one written before manifests) is neither appended to nor rewritten."""
    out = tmp_path / "run"
    out.mkdir()
    foreign = '{"not": "an evaluation result"}\nhalf a line'
    (out / "results.jsonl").write_text(foreign, encoding="utf-8")

    with pytest.raises(CommandError, match=rf"{out} holds results.jsonl but no manifest.json"):
        evaluate(str(question_set), "--out", str(out), "--no-judge")

    assert not fake_openai.requests
    assert (out / "results.jsonl").read_text(encoding="utf-8") == foreign
    assert sorted(path.name for path in out.iterdir()) == ["results.jsonl"]


def test_a_judge_whose_provider_has_no_key_stops_the_command_naming_that_key(
    fake_openai: FakeOpenAIServer, research_env, question_set: Path, tmp_path: Path
) -> None:
    research_env(EVAL_JUDGE_MODEL="anthropic:claude-sonnet-4-5", ANTHROPIC_API_KEY="")

    with pytest.raises(CommandError, match=r"^provider_not_configured: set ANTHROPIC_API_KEY to evaluate the answers\.$"):
        evaluate(str(question_set), "--out", str(tmp_path / "run"))

    assert fake_openai.requests == []  # no question was answered before the judge's key was missing
    stdout, _ = evaluate(str(question_set), "--out", str(tmp_path / "measured"), "--no-judge")  # nothing to grade
    assert stdout.strip() == str(tmp_path / "measured" / "report.md")
