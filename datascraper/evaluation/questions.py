"""A question set: rows with a question, a reference answer and rubric items, read from our JSONL or from a
CSV in one of the Vals AI Finance Agent public formats.

Vals CSV columns, v1: `Question`, `Answer` (the reference), `Question Type`, `Expert time (mins)` and `Rubric`;
v2: `Question`, `Type`, `Expert time (mins)` and `Rubric`, with no reference: the judge grades against the
rubric alone, so a v2 row must have one. The rubric is a JSON list of `{"operator", "criteria"}` (`correctness`,
`contradiction`, or a benchmark's own operator); an item with `"must_pass": true` fails its row when the judge
finds it not met, whatever else is met (`results.must_pass_failures`). Vals rows have no ids, so a row is
`vals-<line>`; ours name themselves, which lets a set grow without breaking a baseline's ids.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from datetime import date
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, field_validator

from datascraper.evaluation.offline import OfflineScript
from datascraper.schemas import Mode

# The question type's column: v1 calls it `Question Type`, v2 `Type`.
VALS_TYPE_COLUMNS = ("Question Type", "Type")


class QuestionSetInvalid(Exception):
    """A question set that cannot be read; the message names the file and the row."""


class RubricItem(BaseModel):
    """One criterion the judge checks: `correctness` must be stated, `contradiction` must not be contradicted."""

    operator: str
    criteria: str
    must_pass: bool = Field(default=False, description="Not met: the row is wrong, whatever else is met.")

    @field_validator("operator")
    @classmethod
    def _lower(cls, operator: str) -> str:
        return operator.strip().lower()


class EvalQuestion(BaseModel):
    """One row of a question set. `offline` is set on the rows CI runs against the fakes."""

    id: str
    question: str
    mode: Mode = "auto"
    reference: str = ""
    rubric: list[RubricItem] = Field(default_factory=list)
    as_of: date | None = Field(default=None, description="The day the reference answer is true of.")
    category: str | None = None
    expert_minutes: float | None = None
    offline: OfflineScript | None = None


def load_questions(path: Path) -> list[EvalQuestion]:
    """The rows of a `.jsonl` or `.csv` question set, in file order; ids must be unique."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        questions = _read_jsonl(path)
    elif suffix == ".csv":
        questions = _read_vals_csv(path)
    else:
        raise QuestionSetInvalid(f"{path}: a question set is a .jsonl or a .csv file.")
    _check_unique(path, questions)
    return questions


def _read_jsonl(path: Path) -> list[EvalQuestion]:
    questions = []
    for line_number, line in enumerate(_text_of(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            questions.append(EvalQuestion.model_validate_json(line))
        except ValidationError as exc:
            raise QuestionSetInvalid(f"{path}, line {line_number}: {_first_error(exc)}") from None
    return questions


def _read_vals_csv(path: Path) -> list[EvalQuestion]:
    reader = csv.DictReader(_text_of(path).splitlines())
    columns = set(reader.fieldnames or ())
    if "Question" not in columns or not columns & {"Answer", "Rubric"}:
        raise QuestionSetInvalid(
            f"{path}: a Vals CSV has the columns Question and Answer (v1) or Question and Rubric (v2); "
            f"this one has {', '.join(sorted(columns)) or 'none'}."
        )
    rubric_alone = "Answer" not in columns  # v2: no reference answer
    questions = []
    for row_number, row in enumerate(reader, start=2):  # line 1 is the header
        where = f"{path}, line {row_number}"
        try:
            questions.append(
                EvalQuestion(
                    id=f"vals-{row_number}",
                    question=(row.get("Question") or "").strip(),
                    reference=(row.get("Answer") or "").strip(),
                    category=_question_type(row),
                    expert_minutes=_number(row.get("Expert time (mins)")),
                    rubric=_vals_rubric(row.get("Rubric"), where),
                )
            )
        except ValidationError as exc:
            raise QuestionSetInvalid(f"{where}: {_first_error(exc)}") from None
        if not questions[-1].question:
            raise QuestionSetInvalid(f"{where}: the question is empty.")
        if rubric_alone and not questions[-1].rubric:
            raise QuestionSetInvalid(f"{where}: no Answer column and no rubric: nothing to grade the answer against.")
    return questions


def _question_type(row: dict[str, str]) -> str | None:
    """The row's question type, from whichever of v1's and v2's columns the file has."""
    for name in VALS_TYPE_COLUMNS:
        value = (row.get(name) or "").strip()
        if value:
            return value
    return None


def _vals_rubric(text: str | None, where: str) -> list[RubricItem]:
    if not text or not text.strip():
        return []
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise QuestionSetInvalid(f"{where}: the rubric is not JSON ({exc.msg}).") from None
    if not isinstance(items, list):
        raise QuestionSetInvalid(f"{where}: the rubric must be a JSON list of {{operator, criteria}}.")
    try:
        return [RubricItem.model_validate(item) for item in items]
    except ValidationError as exc:
        raise QuestionSetInvalid(f"{where}: rubric item: {_first_error(exc)}") from None


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text and text.strip() else None
    except ValueError:
        return None  # "about 20" in a hand-written set: the field is informative only


def _text_of(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")  # a CSV saved by a spreadsheet starts with a BOM
    except OSError as exc:
        raise QuestionSetInvalid(f"{path}: {exc.strerror or exc}.") from None


def _check_unique(path: Path, questions: Sequence[EvalQuestion]) -> None:
    seen: set[str] = set()
    for question in questions:
        if question.id in seen:
            raise QuestionSetInvalid(f"{path}: the id {question.id!r} appears twice.")
        seen.add(question.id)


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]
