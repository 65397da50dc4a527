"""The judge: a model grades an answer against the row's reference answer and rubric.

It is shown the question, the reference, the rubric and the answer's text, never the run's confidence,
sources or signals: calibration compares our confidence with the judge's verdict, which would mean
nothing if the judge had seen the confidence.
"""

from __future__ import annotations

from dataclasses import dataclass

from datascraper import prompts
from datascraper.evaluation.questions import EvalQuestion
from datascraper.evaluation.results import JudgeVerdict
from datascraper.models_config import ResearchConfig, get_research_config
from datascraper.providers.structured import parse_structured
from datascraper.schemas import UsageLedger

# A judge reads a whole answer and writes a grade per rubric item: slower than a planner call.
JUDGE_TIMEOUT_S = 90.0


def judge_model(config: ResearchConfig | None = None) -> str:
    """`EVAL_JUDGE_MODEL`, else the research model."""
    config = config or get_research_config()
    return config.eval_judge_model or config.research_model


@dataclass(frozen=True)
class Judge:
    """Grades answers with one model."""

    model: str
    timeout_s: float = JUDGE_TIMEOUT_S

    async def grade(self, question: EvalQuestion, answer: str, ledger: UsageLedger) -> JudgeVerdict:
        """The judge's verdict; raises the provider layer's named errors (`ResearchError`) when it fails.
        Its usage goes to `ledger`, kept apart from the run's: grading is not part of what an answer costs."""
        return await parse_structured(
            self.model,
            prompts.JUDGE_INSTRUCTIONS,
            judge_input(question, answer),
            JudgeVerdict,
            ledger,
            effort="medium",
            timeout_s=self.timeout_s,
        )


def judge_input(question: EvalQuestion, answer: str) -> str:
    rubric = "\n".join(
        prompts.JUDGE_RUBRIC_LINE.format(n=n, operator=item.operator, criteria=item.criteria)
        for n, item in enumerate(question.rubric, start=1)
    )
    return prompts.JUDGE_INPUT.format(
        as_of=question.as_of.isoformat() if question.as_of else "the time of asking",
        question=question.question,
        reference=question.reference or "(none given)",
        rubric=rubric or prompts.JUDGE_NO_RUBRIC,
        answer=answer,
    )
