"""Question sets: the Vals AI Finance Agent CSV and our JSONL read into rows, and the set we ship."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from datascraper.evaluation.questions import QuestionSetInvalid, load_questions

SHIPPED = Path(__file__).resolve().parents[3] / "datascraper" / "evaluation" / "questions.jsonl"

VALS_CSV = """Question,Answer,Question Type,Expert time (mins),Rubric
"What was Netflix's 2024 revenue?","$39.0 billion",Quantitative Retrieval,5,"[{""operator"": ""correctness"", ""criteria"": ""39.0 billion""}, {""operator"": ""contradiction"", ""criteria"": ""Revenue grew about 16%""}]"
"How did Apple describe its supply chain risk?","Concentrated in Asia",Qualitative Retrieval,,
"""


def test_a_vals_csv_row_becomes_a_question_with_its_reference_and_rubric(tmp_path: Path) -> None:
    path = tmp_path / "vals.csv"
    path.write_text(VALS_CSV, encoding="utf-8")

    first, second = load_questions(path)

    assert first.id == "vals-2" and second.id == "vals-3"  # the CSV line, the header being line 1
    assert first.question == "What was Netflix's 2024 revenue?"
    assert first.reference == "$39.0 billion"
    assert first.category == "Quantitative Retrieval"
    assert first.expert_minutes == 5
    assert [(item.operator, item.criteria) for item in first.rubric] == [
        ("correctness", "39.0 billion"),
        ("contradiction", "Revenue grew about 16%"),
    ]
    assert first.mode == "auto"
    assert second.rubric == [] and second.expert_minutes is None


# The v2 public file's header: no reference answer, the type column named `Type`; must-pass rubric items.
VALS_V2_CSV = """Question,Type,Expert time (mins),Rubric
"By how much did Netflix's 2024 revenue grow?",Numerical Reasoning,10,"[{""operator"": ""correctness"", ""criteria"": ""Revenue of $39.0 billion in 2024"", ""must_pass"": true}, {""operator"": ""correctness"", ""criteria"": ""Growth of about 16%""}]"
"Who is Airbnb's CFO?",Qualitative Retrieval,2,"[{""operator"": ""correctness"", ""criteria"": ""Elinor Mertz""}]"
"""


def test_a_vals_v2_csv_row_is_graded_by_its_rubric_alone_with_its_must_pass_items(tmp_path: Path) -> None:
    path = tmp_path / "vals_v2.csv"
    path.write_text(VALS_V2_CSV, encoding="utf-8")

    first, second = load_questions(path)

    assert (first.id, first.reference, first.category, first.expert_minutes) == ("vals-2", "", "Numerical Reasoning", 10)
    assert [(item.criteria, item.must_pass) for item in first.rubric] == [
        ("Revenue of $39.0 billion in 2024", True),
        ("Growth of about 16%", False),
    ]
    assert second.category == "Qualitative Retrieval" and not second.rubric[0].must_pass


def test_a_vals_v2_row_without_a_rubric_is_refused_as_it_has_nothing_to_be_graded_against(tmp_path: Path) -> None:
    path = tmp_path / "vals_v2.csv"
    path.write_text('Question,Type,Expert time (mins),Rubric\n"Who is Airbnb\'s CFO?",Qualitative Retrieval,2,\n', encoding="utf-8")

    with pytest.raises(QuestionSetInvalid, match=r"line 2: no Answer column and no rubric"):
        load_questions(path)


def test_a_vals_csv_saved_by_a_spreadsheet_with_a_bom_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "vals.csv"
    path.write_text("\ufeff" + VALS_CSV, encoding="utf-8")

    assert len(load_questions(path)) == 2


def test_a_rubric_that_is_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "vals.csv"
    path.write_text('Question,Answer,Rubric\n"Q?","A","[{operator: correctness}"\n', encoding="utf-8")

    with pytest.raises(QuestionSetInvalid, match=r"line 2: the rubric is not JSON"):
        load_questions(path)


def test_a_csv_without_the_vals_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text("prompt,expected\nq,a\n", encoding="utf-8")

    with pytest.raises(QuestionSetInvalid, match=r"Question and Answer \(v1\) or Question and Rubric \(v2\); this one has expected, prompt"):
        load_questions(path)


def test_a_jsonl_row_keeps_its_id_mode_as_of_and_category(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    row = {
        "id": "nvda-fy2025",
        "question": "NVIDIA revenue in fiscal 2025?",
        "mode": "research",
        "reference": "$130.5 billion",
        "rubric": [{"operator": "Correctness", "criteria": "130.5 billion"}],
        "as_of": "2025-02-26",
        "category": "statements",
    }
    path.write_text(json.dumps(row) + "\n\n", encoding="utf-8")

    (question,) = load_questions(path)

    assert (question.id, question.mode, question.as_of.isoformat(), question.category) == (
        "nvda-fy2025",
        "research",
        "2025-02-26",
        "statements",
    )
    assert question.rubric[0].operator == "correctness"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "a", "question": "q"}\n{"id": "a", "question": "q2"}\n', "appears twice"),
        ('{"id": "a", "question": "q", "mode": "deep"}\n', r"line 1: mode"),
        ('{"id": "a"}\n', r"line 1: question: Field required"),
    ],
)
def test_a_broken_jsonl_set_is_refused_naming_the_problem(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text(content, encoding="utf-8")

    with pytest.raises(QuestionSetInvalid, match=message):
        load_questions(path)


def test_another_file_type_is_refused(tmp_path: Path) -> None:
    with pytest.raises(QuestionSetInvalid, match=r"a \.jsonl or a \.csv"):
        load_questions(tmp_path / "set.xlsx")


def test_the_shipped_set_has_40_dated_questions_with_references_and_rubrics_across_the_categories() -> None:
    questions = load_questions(SHIPPED)

    assert len(questions) >= 40
    for question in questions:
        assert question.reference, question.id
        assert question.rubric, question.id
        assert question.as_of is not None, question.id
    categories = Counter(question.category for question in questions)
    for category in (
        "quote",
        "statement",
        "growth",
        "comparison",
        "non_us",
        "qualitative",
        "multi_step",
        "decline_or_qualify",
        "filings",
    ):
        assert categories[category] >= 3, (category, categories)
