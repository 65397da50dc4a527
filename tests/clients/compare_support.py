"""The fake provider scripted for comparing configurations (`evaluate --config`): each research model answers
the question set's rows its own way, and the judge grades the answers that state the reported figures correct.
Used by tests/clients/test_evaluate_configurations.py and benchmarks/compare_example.py."""

from __future__ import annotations

from datascraper.evaluation.results import CriterionGrade, JudgeVerdict
from tests.datascraper.evaluation.support import is_judge
from tests.fakes.openai_server import FakeOpenAIServer, JsonReply, RecordedRequest, TextReply, has_web_search

# What each research model answers: gpt-5.4 the reported figures, gpt-5.4-mini others.
ANSWERS = {
    "gpt-5.4": {"Netflix": "Netflix's 2024 revenue was $39.0 billion.", "Coca-Cola": "Coca-Cola's were $47.1 billion."},
    "gpt-5.4-mini": {"Netflix": "Netflix's 2024 revenue was $33.7 billion.", "Coca-Cola": "Coca-Cola's were $45.8 billion."},
}
REPORTED = ("$39.0 billion", "$47.1 billion")


def graded(value: str) -> JudgeVerdict:
    met = value == "correct"
    return JudgeVerdict(
        criteria=[CriterionGrade(criteria="the figure", operator="correctness", met=met, reason="")],
        verdict=value,  # type: ignore[arg-type]
        explanation="",
    )


def answer_graded(request: RecordedRequest) -> str:
    """The answer the judge was given (the judge also sees the reference, which names the figure)."""
    return request.input_text.split("Answer to grade:")[-1]


def script(fake: FakeOpenAIServer) -> None:
    for model, answers in ANSWERS.items():
        for company, text in answers.items():
            fake.script(
                TextReply([text]),
                when=lambda r, m=model, c=company: has_web_search(r) and r.model == m and c in r.input_text,
                times=None,
            )
    fake.script(
        JsonReply(graded("correct")),
        when=lambda r: is_judge(r) and any(figure in answer_graded(r) for figure in REPORTED),
        times=None,
    )
    fake.script(JsonReply(graded("wrong")), when=is_judge, times=None)
