"""`python manage.py evaluate QUESTIONS.csv|.jsonl [--baseline PREVIOUS.jsonl] [--concurrency N] [--out DIR]
[--no-judge]`: how good the answers are, with the user's own key.

Each row runs through `run_research` as the API runs it, a few at once; the judge model (EVAL_JUDGE_MODEL,
default the research model) grades each answer against the row's reference and rubric. Every result is
appended to `DIR/results.jsonl` as it finishes, so running the same command again resumes; `DIR/report.md`
and `DIR/calibration.svg` are written at the end (and on an interruption, from what finished). DIR belongs
to one question set (`DIR/manifest.json`): a DIR of another set is refused, untouched. The work is in
`datascraper.evaluation`; this is its terminal.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from pathlib import Path
from typing import cast

from django.core.management.base import BaseCommand, CommandError, CommandParser

from datascraper.evaluation.folder import FolderTaken, claim_folder
from datascraper.evaluation.judge import Judge, judge_model
from datascraper.evaluation.questions import EvalQuestion, QuestionSetInvalid, load_questions
from datascraper.evaluation.report import write_report
from datascraper.evaluation.results import RESULTS_NAME, ResultLog, load_results, row_key
from datascraper.evaluation.runner import DEFAULT_CONCURRENCY, EvaluationProgress, run_evaluation
from datascraper.models_config import get_research_config
from datascraper.research_engine.data.market_data_client import warm_up_market_data

EXIT_INTERRUPTED = 130
MAX_CONCURRENCY = 16
BAR_WIDTH = 24
VERDICT_MARKS = {"correct": "✓", "partially": "~", "wrong": "✗"}


class Command(BaseCommand):
    help = "Run a question set through the research router, grade each answer with the judge model, and report."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("questions", type=Path, help="A .jsonl question set, or a .csv in the Vals AI format.")
        parser.add_argument("--baseline", type=Path, default=None, help="An earlier results.jsonl to compare with.")
        parser.add_argument(
            "--concurrency",
            type=int,
            default=DEFAULT_CONCURRENCY,
            help=f"Questions in flight at once (1-{MAX_CONCURRENCY}; default {DEFAULT_CONCURRENCY}).",
        )
        parser.add_argument(
            "--out",
            type=Path,
            default=None,
            help="Where results.jsonl, report.md and calibration.svg go (default evaluations/<set name>); it "
            "belongs to one question set. Rows already in its results.jsonl are skipped: run again to resume.",
        )
        parser.add_argument("--no-judge", action="store_true", help="Run and measure only; grade nothing.")

    def handle(
        self,
        *args: object,
        questions: Path,
        baseline: Path | None,
        concurrency: int,
        out: Path | None,
        no_judge: bool,
        **options: object,
    ) -> None:
        if not 1 <= concurrency <= MAX_CONCURRENCY:
            raise CommandError(f"--concurrency must be between 1 and {MAX_CONCURRENCY}.")
        try:
            rows = load_questions(questions)
        except QuestionSetInvalid as exc:
            raise CommandError(str(exc)) from None
        if baseline is not None and not baseline.is_file():
            raise CommandError(f"{baseline}: no such baseline results file.")
        config = get_research_config()
        if not config.is_configured:
            raise CommandError("provider_not_configured: set OPENAI_API_KEY to evaluate the answers.")
        out_dir = out if out is not None else Path("evaluations") / questions.stem
        try:
            claim = claim_folder(out_dir, questions)
        except FolderTaken as exc:
            raise CommandError(str(exc)) from None
        log = ResultLog(out_dir / RESULTS_NAME)
        judge = None if no_judge else Judge(judge_model(config))
        self.stderr.style_func = None  # progress is not an error: no red
        self.verdicts: Counter[str] = Counter()
        self.interactive = self.stderr.isatty()
        quiet = cast(int, options["verbosity"]) < 2
        if quiet:  # the router's per-run INFO records are for servers
            logging.disable(logging.INFO)
        self.progress(_opening_line(rows, questions, log, claim.set_changed, concurrency, judge))
        warm_up_market_data()
        interrupted = False
        try:
            asyncio.run(run_evaluation(rows, log, judge=judge, concurrency=concurrency, on_result=self.on_result))
        except KeyboardInterrupt:
            interrupted = True
        finally:
            if quiet:
                logging.disable(logging.NOTSET)
        report = self.report(rows, log, questions, judge, baseline)
        if interrupted:
            raise CommandError(
                f"interrupted: finished rows are in {log.path}; run the same command again to resume.",
                returncode=EXIT_INTERRUPTED,
            )
        self.stdout.write(str(report))

    def report(
        self, rows: list[EvalQuestion], log: ResultLog, questions: Path, judge: Judge | None, baseline: Path | None
    ) -> Path:
        results = log.results_for(rows)
        path = write_report(
            log.path.parent,
            results,
            title=questions.name,
            judge_model=judge.model if judge else None,
            baseline=load_results(baseline) if baseline is not None else None,
            order=[row.id for row in rows],
        )
        if self.interactive:
            self.stderr.write("")
        self.progress(f"» report: {path} (results: {log.path})")
        return path

    def on_result(self, progress: EvaluationProgress) -> None:
        result = progress.result
        mark = result.verdict or ("error" if result.status == "error" else "ungraded")
        self.verdicts[mark] += 1
        filled = round(BAR_WIDTH * progress.done / max(1, progress.total))
        counts = "  ".join(
            f"{VERDICT_MARKS.get(kind, kind)} {self.verdicts[kind]}"
            for kind in (*VERDICT_MARKS, "error", "ungraded")
            if self.verdicts[kind]
        )
        detail = result.error_code if result.status == "error" else mark
        line = (
            f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {progress.done}/{progress.total}  {counts}  "
            f"{result.id}: {detail}, {result.measures.latency_ms / 1000:.1f} s"
        )
        if self.interactive:
            self.stderr.write(f"\r\x1b[K{line}", ending="")
            self.stderr.flush()
        else:
            self.progress(line)

    def progress(self, line: str) -> None:
        self.stderr.write(line)
        self.stderr.flush()


def _opening_line(
    rows: list[EvalQuestion], questions: Path, log: ResultLog, set_changed: bool, concurrency: int, judge: Judge | None
) -> str:
    """What is about to run: the questions, those already done (skipped), and how."""
    already = len(log.done_keys() & {row_key(row) for row in rows})
    return (
        f"» {len(rows)} questions from {questions}"
        + (f", {already} already in {log.path} (skipped)" if already else "")
        + (" (the set changed since its last run here: rows asked differently run again)" if set_changed else "")
        + f"; {concurrency} at once; "
        + (f"judge {judge.model}" if judge else "no judge")
    )
