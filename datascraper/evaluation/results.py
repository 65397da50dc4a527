"""One result per question, and the JSONL log of them that an interrupted evaluation resumes from.

A result stands for its row as long as the row asks the same thing: results are matched to rows by id and
question text together (`row_key`), so a row whose question was edited is answered again, and its earlier
result, still in the log, is no longer reported for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, Field, ValidationError

from datascraper.schemas import ModelUsage, UsageLedger

Verdict = Literal["correct", "partially", "wrong"]
RESULTS_NAME = "results.jsonl"
RowKey = tuple[str, str]


class _Row(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def question(self) -> str: ...


class _Criterion(Protocol):
    @property
    def criteria(self) -> str: ...
    @property
    def must_pass(self) -> bool: ...


def row_key(row: _Row) -> RowKey:
    """What a result must share with a question set's row to stand for it: the id and the question's text."""
    return (row.id, row.question)


class CriterionGrade(BaseModel):
    """The judge's grade of one rubric item."""

    criteria: str
    operator: str
    met: bool
    reason: str


class JudgeVerdict(BaseModel):
    """The judge model's structured answer: each rubric item, then the verdict on the whole answer."""

    criteria: list[CriterionGrade]
    verdict: Verdict
    explanation: str


class RunMeasures(BaseModel):
    """What one run cost and did: time, model use, routes, confidence and its citations' checks."""

    latency_ms: int
    usage: UsageLedger = Field(default_factory=UsageLedger, description="The run's model use, by model.")
    cost_usd: float | None = Field(default=None, description="An estimate from `pricing`; None: unknown price.")
    rounds: int = 0
    routes: dict[str, int] = Field(default_factory=dict, description="Sub-questions answered, by route.")
    fallbacks: int = 0
    confidence: float | None = Field(default=None, description="The run's evidence confidence; None on the quick path.")
    citations: dict[str, int] = Field(
        default_factory=dict, description="Verified citations by status: supported, unsupported, unreachable."
    )
    citations_checked: bool = Field(default=False, description="False: CITATION_VERIFY was off, or the run failed.")
    markers_unresolved: int = 0
    numbers_unmatched: int = 0

    @property
    def total(self) -> ModelUsage:
        """The run's usage over all its models."""
        total = ModelUsage()
        for usage in self.usage.by_model.values():
            total.add(usage)
        return total

    @property
    def tokens(self) -> int:
        return self.total.input_tokens + self.total.output_tokens


class EvalResult(BaseModel):
    """One question's run and grade, as a line of the results JSONL."""

    id: str
    question: str
    category: str | None = None
    status: Literal["answered", "error"]
    error_code: str | None = None
    error_message: str | None = None
    mode: str | None = Field(default=None, description="The path taken: quick or research.")
    answer: str = ""
    sources: int = 0
    measures: RunMeasures
    judge: JudgeVerdict | None = None
    judge_model: str | None = None
    judge_error: str | None = None
    judge_usage: ModelUsage | None = Field(default=None, description="The judge's own calls, apart from the run's.")
    judge_cost_usd: float | None = None
    must_pass_failed: list[str] = Field(
        default_factory=list, description="The must-pass rubric items the judge found not met: the row is wrong."
    )
    finished_at: datetime

    @property
    def verdict(self) -> Verdict | None:
        """The judge's verdict, but `wrong` when a must-pass item was not met (the judge's own stays in `judge`)."""
        if self.judge is None:
            return None
        return "wrong" if self.must_pass_failed else self.judge.verdict


def must_pass_failures(rubric: Sequence[_Criterion], verdict: JudgeVerdict) -> list[str]:
    """The criteria of the must-pass items the judge did not find met. The judge grades the items in order, so
    its grades are matched by position when it returned one per item, else by the criterion's text; a
    must-pass item it returned no grade for was not found met."""
    if len(verdict.criteria) == len(rubric):
        met = [grade.met for grade in verdict.criteria]
    else:
        by_text = {_plain(grade.criteria): grade.met for grade in verdict.criteria}
        met = [by_text.get(_plain(item.criteria), False) for item in rubric]
    return [item.criteria for item, ok in zip(rubric, met, strict=True) if item.must_pass and not ok]


def _plain(text: str) -> str:
    return " ".join(text.split()).casefold()


class ResultLog:
    """The results JSONL: appended to as each question finishes, read back to resume.

    A line cut short by an interruption does not parse; it is ignored (its question runs again) and
    rewritten away on the next append, so the file stays one result per line.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._checked = False

    def read(self) -> list[EvalResult]:
        return list(self._parsed())

    def done_keys(self) -> set[RowKey]:
        """The rows (`row_key`) that have a result."""
        return {row_key(result) for result in self._parsed()}

    def results_for(self, rows: Sequence[_Row]) -> list[EvalResult]:
        """The result of each of `rows` that has one (the last logged, should there be several); a result of
        a row's earlier wording is left out."""
        wanted = {row_key(row) for row in rows}
        latest = {row_key(result): result for result in self._parsed() if row_key(result) in wanted}
        return list(latest.values())

    def append(self, result: EvalResult) -> None:
        if not self._checked:
            self._drop_partial_line()
            self._checked = True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(result.model_dump_json() + "\n")
            out.flush()

    def _parsed(self) -> Iterator[EvalResult]:
        if not self.path.exists():
            return
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                yield EvalResult.model_validate_json(line)
            except ValidationError:
                continue

    def _drop_partial_line(self) -> None:
        if not self.path.exists():
            return
        lines = self.path.read_text(encoding="utf-8").splitlines()
        kept = [line for line in lines if line.strip() and _parses(line)]
        if len(kept) != len(lines):
            self.path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")


def _parses(line: str) -> bool:
    try:
        EvalResult.model_validate_json(line)
    except (ValidationError, json.JSONDecodeError):
        return False
    return True


def load_results(path: Path) -> list[EvalResult]:
    """The results of an earlier evaluation (a `--baseline`)."""
    return ResultLog(path).read()
