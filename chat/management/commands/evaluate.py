"""`python manage.py evaluate QUESTIONS.csv|.jsonl [--baseline PREVIOUS.jsonl] [--concurrency N] [--out DIR]
[--no-judge] [--config NAME=ENVFILE ... [--config-timeout SECONDS]]`: how good the answers are, with the
user's own key.

Each row runs through `run_research` as the API runs it, a few at once; the judge model (EVAL_JUDGE_MODEL,
default the research model) grades each answer against the row's reference and rubric. Every result is
appended to `DIR/results.jsonl` as it finishes, so running the same command again resumes; `DIR/report.md`
and `DIR/calibration.svg` are written at the end (and on an interruption, from what finished). DIR belongs
to one question set (`DIR/manifest.json`): a DIR of another set is refused, untouched.

With two or more `--config NAME=ENVFILE`, each configuration is evaluated in a child process of this command
(`DIR/NAME`, with this environment overlaid by its env file and graded by this environment's judge), one after
another, and `DIR/comparison.md` compares them side by side. The work is in `datascraper.evaluation`; this is
its terminal.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections import Counter
from pathlib import Path
from typing import cast

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from datascraper.evaluation.comparison import Comparison, configuration_figures, write_comparison
from datascraper.evaluation.configuration_runs import (
    EXIT_INTERRUPTED,
    ConfigurationRun,
    default_timeout,
    run_configuration,
)
from datascraper.evaluation.configurations import (
    JUDGE_SETTING,
    Configuration,
    ConfigurationInvalid,
    read_configurations,
)
from datascraper.evaluation.folder import FolderTaken, claim_folder
from datascraper.evaluation.judge import Judge, judge_model
from datascraper.evaluation.questions import EvalQuestion, QuestionSetInvalid, load_questions
from datascraper.evaluation.report import write_report
from datascraper.evaluation.results import RESULTS_NAME, ResultLog, load_results, row_key
from datascraper.evaluation.runner import DEFAULT_CONCURRENCY, EvaluationProgress, run_evaluation
from datascraper.model_ref import parse_model
from datascraper.models_config import PROVIDER_REQUIREMENT, ResearchConfig, get_research_config
from datascraper.research_engine.data.market_data_client import warm_up_market_data

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
        parser.add_argument(
            "--config",
            action="append",
            dest="configs",
            metavar="NAME=ENVFILE",
            help="A configuration to compare (give two or more): its settings from ENVFILE over this environment, "
            "run in its own process into DIR/NAME; DIR/comparison.md compares them. The judge is this "
            "environment's for all.",
        )
        parser.add_argument(
            "--config-timeout",
            type=float,
            default=None,
            metavar="SECONDS",
            help="Stop a configuration's run after this long (default: every row taking its whole run and "
            "judge budgets).",
        )

    def handle(
        self,
        *args: object,
        questions: Path,
        baseline: Path | None,
        concurrency: int,
        out: Path | None,
        no_judge: bool,
        configs: list[str] | None,
        config_timeout: float | None,
        **options: object,
    ) -> None:
        if not 1 <= concurrency <= MAX_CONCURRENCY:
            raise CommandError(f"--concurrency must be between 1 and {MAX_CONCURRENCY}.")
        if config_timeout is not None and (not configs or config_timeout <= 0):
            raise CommandError("--config-timeout is a number of seconds above 0, given with --config.")
        try:
            rows = load_questions(questions)
        except QuestionSetInvalid as exc:
            raise CommandError(str(exc)) from None
        if baseline is not None and not baseline.is_file():
            raise CommandError(f"{baseline}: no such baseline results file.")
        config = get_research_config()
        judged_by = None if no_judge else judge_model(config)
        missing = missing_setting(config, judged_by, answers_here=not configs)  # with --config, only the judge
        if missing is not None:
            raise CommandError(f"provider_not_configured: set {missing} to evaluate the answers.")
        try:
            configurations = read_configurations(configs, os.environ, judged_by) if configs else []
        except ConfigurationInvalid as exc:
            raise CommandError(str(exc)) from None
        out_dir = out if out is not None else Path("evaluations") / questions.stem
        try:
            claim = claim_folder(out_dir, questions)
        except FolderTaken as exc:
            raise CommandError(str(exc)) from None
        self.stderr.style_func = None  # progress is not an error: no red
        if configurations:
            child = _child_command(questions, concurrency, cast(int, options["verbosity"]), judged_by, baseline)
            self.compare(questions, rows, configurations, out_dir, judged_by, child, config_timeout, concurrency)
        else:
            judge = Judge(judged_by) if judged_by else None
            self.evaluate(rows, questions, claim.set_changed, out_dir, judge, baseline, concurrency, options)

    def evaluate(
        self,
        rows: list[EvalQuestion],
        questions: Path,
        set_changed: bool,
        out_dir: Path,
        judge: Judge | None,
        baseline: Path | None,
        concurrency: int,
        options: dict[str, object],
    ) -> None:
        """Run and grade the rows not yet logged in `out_dir`, then write the report (also when interrupted)."""
        log = ResultLog(out_dir / RESULTS_NAME)
        self.verdicts: Counter[str] = Counter()
        self.interactive = self.stderr.isatty()
        quiet = cast(int, options["verbosity"]) < 2
        if quiet:  # the router's per-run INFO records are for servers
            logging.disable(logging.INFO)
        self.progress(_opening_line(rows, questions, log, set_changed, concurrency, judge))
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

    def compare(
        self,
        questions: Path,
        rows: list[EvalQuestion],
        configurations: list[Configuration],
        out_dir: Path,
        judge: str | None,
        child: list[str],
        timeout_s: float | None,
        concurrency: int,
    ) -> None:
        """Evaluate the set under each configuration with the `child` command, one after another, each into
        `out_dir/NAME`, then write the comparison."""
        self.progress(
            f"» {len(rows)} questions from {questions} under {len(configurations)} configurations, one after "
            "another; " + (f"judge {judge} for every configuration" if judge else "no judge")
        )
        figures = []
        for configuration in configurations:
            bound = timeout_s or default_timeout(len(rows), concurrency, configuration.research)
            command = [*child, "--out", str((out_dir / configuration.name).resolve())]
            run = self.run_configuration(configuration, command, bound, judge)
            results = ResultLog(out_dir / configuration.name / RESULTS_NAME).results_for(rows)
            figures.append(configuration_figures(configuration, run, results, questions=len(rows)))
            ended = figures[-1]
            self.progress(
                f"» {ended.name}: {ended.status.replace('_', ' ')}" + (f" ({ended.error})" if ended.error else "")
            )
            if run.status == "interrupted":
                break
        path = write_comparison(
            out_dir,
            Comparison(question_set=questions.name, questions=len(rows), judge_model=judge, configurations=figures),
        )
        self.progress(f"» comparison: {path}")
        if figures[-1].status == "interrupted":
            raise CommandError(
                f"interrupted: {path} compares what finished; run the same command again to resume.",
                returncode=EXIT_INTERRUPTED,
            )
        self.stdout.write(str(path))

    def run_configuration(
        self, configuration: Configuration, command: list[str], timeout_s: float, judge: str | None
    ) -> ConfigurationRun:
        """One configuration's evaluation, in a child process; its lines relayed under its name."""
        name, research = configuration.name, configuration.research
        own_judge = configuration.settings.get(JUDGE_SETTING)
        self.progress(
            f"» {name} ({configuration.env_file}): planner {research.planner_model}, research model "
            f"{research.research_model}; stopped after {timeout_s:g} s"
            + (f"; its {JUDGE_SETTING} ({own_judge}) is not used" if judge and own_judge not in (None, judge) else "")
        )
        return run_configuration(
            command,
            configuration.environment,
            timeout_s=timeout_s,
            on_line=lambda line: self.progress(f"  {name} │ {line}"),
        )

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


def _child_command(
    questions: Path, concurrency: int, verbosity: int, judge: str | None, baseline: Path | None
) -> list[str]:
    """This command as a configuration's child process runs it, but for its `--out`."""
    command = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "evaluate", str(questions.resolve())]
    command += ["--concurrency", str(concurrency), "--verbosity", str(verbosity)]
    command += ["--no-judge"] if judge is None else []
    return command + (["--baseline", str(baseline.resolve())] if baseline is not None else [])


def missing_setting(config: ResearchConfig, judge: str | None, *, answers_here: bool) -> str | None:
    """The first variable that a provider this process calls needs and lacks: the answering models' (unless
    each configuration answers in its own process) and the judge's, so the command stops before any question."""
    if answers_here and config.missing_setting is not None:
        return config.missing_setting
    if judge is not None:
        provider = parse_model(judge).provider
        if not config.provider_configured(provider):
            return PROVIDER_REQUIREMENT[provider][1]
    return None
