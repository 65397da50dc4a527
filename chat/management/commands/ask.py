"""`python manage.py ask "question" [--mode auto|quick|research]`: the research router from a terminal.

It drives `run_research` directly, with no web request and no database: progress goes to stderr and the
answer with its sources to stdout, so `ask "..." > answer.md` keeps just the answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import cast, get_args

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat.schemas import MAX_QUESTION_CHARS, known_timezone
from chat.services.completions import format_sources
from datascraper.errors import ResearchError
from datascraper.models_config import get_research_config
from datascraper.providers.lifecycle import ModelLifecycleReport, check_models
from datascraper.research_engine import run_research
from datascraper.research_engine.data.market_data_client import warm_up_market_data
from datascraper.schemas import (
    ChartEvent,
    CheckpointEvent,
    DeltaEvent,
    Mode,
    PlanEvent,
    ResearchQuery,
    RoundEvent,
    RunSummary,
    Source,
    SourcesEvent,
    StatusEvent,
    StepEvent,
    VerificationEvent,
)

STEP_MARKS = {"started": "…", "done": "✓", "failed": "✗", "fallback": "↻"}
EXIT_INTERRUPTED = 130


MODEL_CHECK_GRACE_S = 1.0


class Command(BaseCommand):
    help = "Ask the research router a question; progress on stderr, the cited answer on stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("question", help="The question, in quotes.")
        parser.add_argument(
            "--mode",
            choices=get_args(Mode),
            default="auto",
            help="auto lets the analyzer decide; quick forces one search; research forces decomposition.",
        )
        parser.add_argument(
            "--timezone",
            default=None,
            help="Your IANA time zone (e.g. Europe/Paris), so that 'today' and 'last quarter' are yours.",
        )

    def handle(self, *args: object, question: str, mode: Mode, timezone: str | None, **options: object) -> None:
        question = question.strip()
        if not question:
            raise CommandError("The question must not be empty.")
        if len(question) > MAX_QUESTION_CHARS:
            raise CommandError(f"The question must be at most {MAX_QUESTION_CHARS} characters.")
        if timezone is not None:
            try:
                known_timezone(timezone)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        self.stderr.style_func = None  # progress is not an error: no red
        # The router's INFO logs (per-run quality records) are for servers; show them from -v 2 on.
        quiet = cast(int, options["verbosity"]) < 2
        if quiet:
            logging.disable(logging.INFO)
        if get_research_config().is_configured:
            warm_up_market_data()  # starts while the question is analysed
        try:
            asyncio.run(self.ask(ResearchQuery(question=question, mode=mode, timezone=timezone)))
        except KeyboardInterrupt:
            raise CommandError("cancelled: interrupted", returncode=EXIT_INTERRUPTED) from None
        finally:
            if quiet:
                logging.disable(logging.NOTSET)

    async def ask(self, query: ResearchQuery) -> None:
        sources: list[Source] = []
        answered = False
        # The configured models are checked beside the question, never before it: a warning is printed
        # when the check ends; one still unfinished a second after the answer is dropped.
        models = asyncio.create_task(check_models()) if get_research_config().is_configured else None
        if models is not None:
            models.add_done_callback(self.report_models)
        try:
            async for event in run_research(query):
                if isinstance(event, DeltaEvent):
                    answered = True
                    self.stdout.write(event.text, ending="")
                    self.stdout.flush()
                elif isinstance(event, SourcesEvent):
                    sources = event.sources
                elif isinstance(event, RunSummary):
                    self.progress(summary_line(event))
                elif isinstance(event, CheckpointEvent):
                    continue  # for resuming a stored run; nothing to resume here
                else:
                    self.progress(progress_line(event))
        except ResearchError as exc:
            if answered:
                self.stdout.write(format_sources(sources))
            raise CommandError(f"{exc.code}: {exc.message}") from exc
        finally:
            if models is not None:
                await asyncio.wait({models}, timeout=MODEL_CHECK_GRACE_S)
                models.cancel()
        self.stdout.write(format_sources(sources))

    def report_models(self, task: asyncio.Task[ModelLifecycleReport]) -> None:
        if task.cancelled():
            return
        report = task.result()
        for provider in report.providers:
            if provider.level != "ok":
                self.progress(f"! the models of {provider.provider} could not be checked: {provider.message}")
        for check in report.checks:
            if check.level != "ok":
                self.progress(f"! {check.message}")

    def progress(self, line: str) -> None:
        self.stderr.write(line)
        self.stderr.flush()


def progress_line(event: StatusEvent | PlanEvent | StepEvent | RoundEvent | ChartEvent | VerificationEvent) -> str:
    """One line of stderr progress for a phase, the plan, a sub-question step, a research round, a chart
    (summarised: a terminal does not draw it) or the citations checked after the answer."""
    if isinstance(event, StatusEvent):
        return f"» {event.label}" + (f" — {event.detail}" if event.detail else "")
    if isinstance(event, PlanEvent):
        if not event.needs_decomposition or not event.sub_questions:
            return "  plan: answer directly"
        count = len(event.sub_questions)
        lines = [f"  plan: {count} sub-question{'s' if count != 1 else ''}"]
        lines += [f"    {sq.id}. {sq.question} [{sq.route}]" for sq in event.sub_questions]
        return "\n".join(lines)
    if isinstance(event, StepEvent):
        timing = f", {event.elapsed_ms} ms" if event.state != "started" else ""
        return f"  {STEP_MARKS[event.state]} {event.sub_question_id} {event.state} ({event.route}{timing})"
    if isinstance(event, VerificationEvent):
        statuses = Counter(check.status for check in event.citations)
        counts = ", ".join(f"{statuses[status]} {status}" for status in ("supported", "unsupported", "unreachable"))
        return f"  citations checked: {counts}"
    if isinstance(event, ChartEvent):
        points = sum(len(series.points) for series in event.series)
        return f"  chart: {event.title} ({event.kind}, {points} points, as of {event.as_of}) [{event.source_n}]"
    if event.complete:
        verdict = "complete"
    else:
        verdict = f"gaps: {'; '.join(event.gaps)}" if event.gaps else "more research needed"
    evidence = f"confidence {event.confidence:.2f}" + (", shallow" if event.shallow else "")
    return f"  round {event.n}: {verdict} ({evidence})"


def summary_line(summary: RunSummary) -> str:
    usage = summary.usage.by_model.values()
    tokens = sum(u.input_tokens + u.output_tokens for u in usage)
    seconds = summary.timings.get("total_ms", 0) / 1000
    line = f"» done: {summary.mode} path, {seconds:.1f} s, {summary.usage.calls} model calls, {tokens} tokens"
    if summary.confidence is not None:
        line += f"\n» research: {summary.confidence.summary}"
    return line
