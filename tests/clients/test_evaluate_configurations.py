"""`manage.py evaluate SET --config NAME=ENVFILE ...` evaluates the set under each configuration in a child
process against the fake provider, every answer graded by this environment's judge, and compares them in one
report; each configuration resumes its own folder, and one that fails is reported as failed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import date
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from datascraper.evaluation.results import load_results
from tests.clients.compare_support import script
from tests.clients.test_evaluate_command import ROWS, question_set  # noqa: F401  (a fixture)
from tests.datascraper.evaluation.support import is_judge
from tests.fakes.openai_server import FakeOpenAIServer, TextReply, has_web_search


def env_file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.env"
    path.write_text(text, encoding="utf-8")
    return path


def in_folder(folder: Path, option: str) -> str:
    """`NAME=FILE` with FILE in `folder`."""
    name, sign, file = option.partition("=")
    return f"{name}={folder / file}" if sign else option


def evaluate(*args: str) -> tuple[str, str]:
    stdout, stderr = StringIO(), StringIO()
    call_command("evaluate", *args, stdout=stdout, stderr=stderr)
    return stdout.getvalue(), stderr.getvalue()


def figures(out: Path) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads((out / "comparison.json").read_text())["configurations"]}


def test_configurations_are_compared_side_by_side_each_graded_by_this_environments_judge(
    fake_openai: FakeOpenAIServer, question_set: Path, tmp_path: Path
) -> None:
    script(fake_openai)
    fake_openai.today = date(2026, 11, 26)  # gpt-5.2-chat-latest was shut down on 2026-08-10
    full = env_file(tmp_path, "full", "RESEARCH_MODEL=gpt-5.4\n")
    # Its own judge setting is not used: every configuration is graded by this environment's (gpt-5.4).
    mini = env_file(tmp_path, "mini", "# the small model\nRESEARCH_MODEL=gpt-5.4-mini\nEVAL_JUDGE_MODEL=gpt-5.4-mini\n")
    retired = env_file(tmp_path, "retired", "RESEARCH_MODEL=gpt-5.2-chat-latest\n")
    out = tmp_path / "compare"

    stdout, stderr = evaluate(
        str(question_set), "--out", str(out), "--config", f"full={full}", "--config", f"mini={mini}", "--config", f"retired={retired}"
    )

    searched = Counter(r.model for r in fake_openai.requests if has_web_search(r))
    assert searched == {"gpt-5.4": 2, "gpt-5.4-mini": 2, "gpt-5.2-chat-latest": 2}
    judged = [r for r in fake_openai.requests if is_judge(r)]
    assert len(judged) == 4 and {r.model for r in judged} == {"gpt-5.4"}
    by_name = figures(out)
    assert [(c["research_model"], c["status"], c["accuracy"]) for c in by_name.values()] == [
        ("gpt-5.4", "completed", 1.0),
        ("gpt-5.4-mini", "completed", 0.0),
        ("gpt-5.2-chat-latest", "failed", None),
    ]
    assert by_name["retired"]["error"] == "model_unavailable (2 of 2 rows)"
    assert by_name["retired"]["errors"] == {"model_unavailable": 2}
    assert by_name["mini"]["by_type"]["statement"] == {"graded": 2, "correct": 0, "partially": 0, "accuracy": 0.0}
    assert by_name["full"]["web_searches_per_question"] >= 1 and by_name["full"]["tokens_per_question"] > 0
    comparison = (out / "comparison.md").read_text()
    assert "3 configurations · 2 questions · judge gpt-5.4 for every configuration" in comparison
    assert "| | full | mini | retired |" in comparison
    assert "| accuracy | 100% | 0% | n/a |" in comparison
    assert "| statement | 100% (2 of 2) | 0% (0 of 2) | n/a |" in comparison
    assert "| quick path (none) | 100% (2 of 2) | 0% (0 of 2) | n/a |" in comparison
    assert "| failed: model\\_unavailable \\(2 of 2 rows\\) |" in comparison
    for name in ("full", "mini", "retired"):
        assert (out / name / "report.md").exists(), name  # each configuration's own report, in its folder
    assert stdout.strip() == str(out / "comparison.md")
    assert "  mini │ " in stderr and "its EVAL_JUDGE_MODEL (gpt-5.4-mini) is not used" in stderr
    assert "» retired: failed (model_unavailable (2 of 2 rows))" in stderr


def test_run_again_each_configuration_resumes_its_own_folder(
    fake_openai: FakeOpenAIServer, question_set: Path, tmp_path: Path
) -> None:
    script(fake_openai)
    configs = ["--config", f"full={env_file(tmp_path, 'full', 'RESEARCH_MODEL=gpt-5.4')}"]
    configs += ["--config", f"mini={env_file(tmp_path, 'mini', 'RESEARCH_MODEL=gpt-5.4-mini')}"]
    out = tmp_path / "compare"
    evaluate(str(question_set), "--out", str(out), "--no-judge", *configs)
    mini_results = out / "mini" / "results.jsonl"
    kept = mini_results.read_text().splitlines()[0]
    mini_results.write_text(kept + "\n")  # as if mini was interrupted after its first row
    asked_before = len(fake_openai.requests)

    evaluate(str(question_set), "--out", str(out), "--no-judge", *configs)

    again = [r for r in fake_openai.requests[asked_before:] if has_web_search(r)]
    missing = next(row for row in ROWS if row["id"] != json.loads(kept)["id"])
    assert [(r.model, missing["question"] in r.input_text) for r in again] == [("gpt-5.4-mini", True)]
    assert sorted(r.id for r in load_results(mini_results)) == sorted(row["id"] for row in ROWS)
    assert [(c["answered"], c["ungraded"]) for c in figures(out).values()] == [(2, 2), (2, 2)]
    assert "not graded (`--no-judge`)" in (out / "comparison.md").read_text()


@pytest.mark.parametrize(
    ("files", "options", "message"),
    [
        ({"a": "RESEARCH_MODEL=gpt-5.4"}, ["a=a.env"], r"give 2 or more"),
        ({"a": ""}, ["a=a.env", "b"], r"--config b: expected NAME=ENVFILE"),
        ({"a": ""}, ["a=a.env", "../b=a.env"], r"--config \.\./b=\S+a\.env: a configuration's name is a plain word"),
        ({"a": ""}, ["a=a.env", "A=a.env"], r"--config A=\S+a\.env: the name A is given twice"),
        ({"a": ""}, ["a=a.env", "b=missing.env"], r"--config b=.*missing\.env: the env file cannot be read \(No such file"),
        ({"a": "", "b": "RESEARCH_MODEL=gpt-5.4\nnot a setting\n"}, ["a=a.env", "b=b.env"], r"b\.env, line 2: not a setting"),
        ({"a": "", "b": "RESEARCH_MAX_ITERATIONS=many"}, ["a=a.env", "b=b.env"], r"b\.env: max_iterations: Input should be a valid integer"),
        (
            {"a": "", "b": "OPENAI_BASE_URL=http://127.0.0.1:9/v1"},
            ["a=a.env", "b=b.env"],
            r"b\.env: it sets OPENAI_BASE_URL, which the judge \(gpt-5\.4\) reads too, to another value",
        ),
        ({"a": "", "b": "OPENAI_API_KEY=test-key-other"}, ["a=a.env", "b=b.env"], r"it sets OPENAI_API_KEY, which the judge"),
    ],
)
def test_a_configuration_that_cannot_run_is_refused_by_name_before_anything_runs(
    fake_openai: FakeOpenAIServer, question_set: Path, tmp_path: Path, files: dict[str, str], options: list[str], message: str
) -> None:
    for name, text in files.items():
        env_file(tmp_path, name, text)
    out = tmp_path / "compare"
    arguments = [argument for option in options for argument in ("--config", in_folder(tmp_path, option))]

    with pytest.raises(CommandError, match=message) as refused:
        evaluate(str(question_set), "--out", str(out), *arguments)

    assert "test-key-other" not in str(refused.value)
    assert not fake_openai.requests and not out.exists()


def test_a_comparison_no_manifest_claims_is_refused_untouched(fake_openai: FakeOpenAIServer, question_set: Path, tmp_path: Path) -> None:
    out = tmp_path / "compare"
    out.mkdir()
    (out / "comparison.md").write_text("someone else's", encoding="utf-8")
    configs = [in_folder(tmp_path, option) for option in ("a=a.env", "b=b.env")]
    for name in ("a", "b"):
        env_file(tmp_path, name, "")

    with pytest.raises(CommandError, match=rf"{out} holds comparison.md but no manifest.json"):
        evaluate(str(question_set), "--out", str(out), "--config", configs[0], "--config", configs[1])

    assert not fake_openai.requests and sorted(path.name for path in out.iterdir()) == ["comparison.md"]


def test_ctrl_c_waits_for_the_running_configurations_report_and_compares_what_finished(
    fake_openai: FakeOpenAIServer, question_set: Path, tmp_path: Path
) -> None:
    # Coca-Cola's search under the first configuration hangs: the user gives up after Netflix's is logged.
    fake_openai.script(
        TextReply(first_byte_delay=30), when=lambda r: has_web_search(r) and "Coca-Cola" in r.input_text, times=None
    )
    script(fake_openai)
    configs = ["--config", f"full={env_file(tmp_path, 'full', 'RESEARCH_MODEL=gpt-5.4')}"]
    configs += ["--config", f"mini={env_file(tmp_path, 'mini', 'RESEARCH_MODEL=gpt-5.4-mini')}"]
    out = tmp_path / "compare"
    command = [sys.executable, "manage.py", "evaluate", str(question_set), "--out", str(out), "--no-judge", *configs]
    # Its own session, as a terminal's foreground job: Ctrl-C reaches the command and its children together.
    parent = subprocess.Popen(
        [*command, "--concurrency", "1"], cwd=settings.BASE_DIR, env=os.environ, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    results = out / "full" / "results.jsonl"
    deadline = time.monotonic() + 60
    while not (results.exists() and results.read_text().count("\n") == 1) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(parent.pid, signal.SIGINT)
    _, stderr = parent.communicate(timeout=60)

    assert parent.returncode == 130, stderr
    assert "compares what finished; run the same command again to resume" in stderr and "Traceback" not in stderr
    assert [(c["name"], c["status"], c["answered"]) for c in figures(out).values()] == [("full", "interrupted", 1)]
    assert (out / "full" / "report.md").exists() and not (out / "mini").exists()
