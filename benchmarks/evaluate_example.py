"""docs/evaluation.md's sample evaluation report, made against the fakes: `python benchmarks/evaluate_example.py OUT_DIR`.

Runs `manage.py evaluate` over the rows of `datascraper/evaluation/offline.jsonl` (their references and rubrics
from the shipped set), with the model's side scripted as the offline test scripts it and a scripted judge
(two rows graded wrong: the fake Yahoo's Microsoft quarters are not the reported ones). Only the far ends are
fakes; the runner, the pipeline and the report are the real code. It shows the report's shape; it measures
nothing about answer quality.
"""

from __future__ import annotations

import logging
import os
import sys
from io import StringIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.update(DJANGO_DEBUG="1", MARKET_DATA_WARM_START="0", CITATION_VERIFY="0")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from benchmarks.fake_upstreams import fake_upstreams  # noqa: E402
from datascraper.evaluation.questions import load_questions  # noqa: E402
from datascraper.evaluation.results import CriterionGrade, JudgeVerdict  # noqa: E402
from datascraper.plan_schemas import GapReport  # noqa: E402
from tests.datascraper.evaluation.support import is_judge  # noqa: E402
from tests.datascraper.research_support import is_analysis, is_gap_report, is_synthesis  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer, JsonReply, Sentence, TextReply  # noqa: E402

SETS = ROOT / "datascraper" / "evaluation"
GRADED_WRONG = {"msft-q3fy2025-revenue", "aapl-msft-quarterly-growth"}


def script(fake: FakeOpenAIServer, rows: list) -> None:
    """Each row's planner, web, synthesis and judge replies, told apart by the question in the request."""
    offline = {row.id: row.offline for row in load_questions(SETS / "offline.jsonl")}
    for row in rows:
        plan, question = offline[row.id], row.question
        asked = [question, *(sq.question for sq in (plan.analysis.sub_questions if plan.analysis else []))]
        if plan.analysis is not None:
            fake.script(JsonReply(plan.analysis), when=lambda r, q=question: is_analysis(r) and q in r.input_text)
        for report in plan.gaps or [GapReport(complete=True, score=9, gaps=[], follow_up_queries=[])]:
            fake.script(JsonReply(report), when=lambda r, q=question: is_gap_report(r) and q in r.input_text)
        if plan.web:
            sentences = [Sentence(s.text, cites=[tuple(c) for c in s.cites]) for s in plan.web]
            fake.script(
                TextReply(sentences),
                when=lambda r, texts=asked: r.has_web_search and any(t in r.input_text for t in texts),
                times=None,
            )
        if plan.answer:
            fake.script(TextReply(list(plan.answer)), when=lambda r, q=question: is_synthesis(r) and q in r.input_text)
        wrong = row.id in GRADED_WRONG
        grades = [
            CriterionGrade(criteria=item.criteria, operator=item.operator, met=not (wrong and n == 0), reason="scripted")
            for n, item in enumerate(row.rubric)
        ]
        verdict = JudgeVerdict(criteria=grades, verdict="wrong" if wrong else "correct", explanation="scripted")
        fake.script(JsonReply(verdict), when=lambda r, q=question: is_judge(r) and q in r.input_text)


def main(out_dir: Path) -> None:
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)  # the cancelled speculative searches' closed sockets
    offline_ids = {row.id for row in load_questions(SETS / "offline.jsonl")}
    rows = [row for row in load_questions(SETS / "questions.jsonl") if row.id in offline_ids]
    out_dir.mkdir(parents=True, exist_ok=True)
    question_set = out_dir / "sample-set.jsonl"
    question_set.write_text("".join(row.model_dump_json(exclude={"offline"}) + "\n" for row in rows))
    with fake_upstreams() as fake:
        script(fake, rows)
        call_command("evaluate", str(question_set), "--out", str(out_dir / "report"), stdout=StringIO())
    print((out_dir / "report" / "report.md").read_text())


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "evaluations/sample"))
