"""The judge grades an answer through the model provider (the fake server here), from the question, the
reference, the rubric and the answer only."""

from __future__ import annotations

from datetime import date

import pytest

from datascraper.errors import ModelUnavailable
from datascraper.evaluation.judge import Judge, judge_model
from datascraper.evaluation.questions import RubricItem
from datascraper.evaluation.results import CriterionGrade, JudgeVerdict, must_pass_failures
from datascraper.evaluation.runner import evaluate_question
from datascraper.models_config import ResearchConfig
from datascraper.schemas import UsageLedger
from tests.datascraper.evaluation.support import is_judge, question, router, summary
from tests.fakes.openai_server import NO_CREDIT, ErrorReply, FakeOpenAIServer, JsonReply

PARTIAL = JudgeVerdict(
    criteria=[
        CriterionGrade(criteria="391.0 billion", operator="correctness", met=True, reason="States $391.04 billion."),
        CriterionGrade(criteria="fiscal year ended September 2024", operator="correctness", met=False, reason="No period."),
    ],
    verdict="partially",
    explanation="The figure is right but the period is not named.",
)


def test_the_judge_model_is_eval_judge_model_else_the_research_model() -> None:
    assert judge_model(ResearchConfig(research_model="gpt-5.4")) == "gpt-5.4"
    assert judge_model(ResearchConfig.from_env({"EVAL_JUDGE_MODEL": "gpt-5.4-mini"})) == "gpt-5.4-mini"


async def test_an_answer_is_graded_per_rubric_item_by_the_judge_model(fake_openai: FakeOpenAIServer, research_env) -> None:
    research_env(EVAL_JUDGE_MODEL="gpt-5.4-mini")
    fake_openai.script(JsonReply(PARTIAL), when=is_judge)
    row = question(
        rubric=[
            RubricItem(operator="correctness", criteria="391.0 billion"),
            RubricItem(operator="correctness", criteria="fiscal year ended September 2024"),
            RubricItem(operator="contradiction", criteria="Net sales fell about 2% from fiscal 2023"),
        ]
    )

    result = await evaluate_question(row, judge=Judge(judge_model()), research=router(lambda _: summary(score=0.93)))

    assert result.verdict == "partially"
    assert [grade.met for grade in result.judge.criteria] == [True, False]
    assert result.judge_model == "gpt-5.4-mini"
    # The judge's own usage is kept apart from the run's (3 calls in the scripted summary).
    assert result.judge_usage is not None and result.judge_usage.calls == 1 and result.judge_cost_usd
    assert result.measures.total.calls == 3
    (request,) = [r for r in fake_openai.requests if is_judge(r)]
    assert request.model == "gpt-5.4-mini"
    sent = request.input_text
    assert row.question in sent and row.reference in sent
    assert "1. [correctness] 391.0 billion" in sent
    assert "3. [contradiction] Net sales fell about 2% from fiscal 2023" in sent
    assert "Apple's net sales were $391.04 billion [1]." in sent
    assert "as of 2024-11-01" in sent
    # Never our own confidence (0.93) nor its vocabulary: the judge must not be swayed by it.
    assert "0.93" not in sent + request.instructions and "confidence" not in sent.lower()


async def test_a_must_pass_item_the_judge_finds_not_met_fails_the_row_whatever_its_verdict(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.script(JsonReply(PARTIAL.model_copy(update={"verdict": "correct"})), when=is_judge)
    row = question(
        rubric=[
            RubricItem(operator="correctness", criteria="391.0 billion"),
            RubricItem(operator="correctness", criteria="fiscal year ended September 2024", must_pass=True),
        ]
    )

    result = await evaluate_question(row, judge=Judge(judge_model()), research=router(lambda _: summary()))

    assert result.judge is not None and result.judge.verdict == "correct"  # the judge's own, kept
    assert result.must_pass_failed == ["fiscal year ended September 2024"]
    assert result.verdict == "wrong"


def test_must_pass_grades_are_matched_by_text_when_the_judge_skipped_an_item_and_a_skipped_one_is_not_met() -> None:
    rubric = [
        RubricItem(operator="correctness", criteria="391.0 billion", must_pass=True),
        RubricItem(operator="correctness", criteria="Fiscal year ended  September 2024", must_pass=True),
        RubricItem(operator="contradiction", criteria="Net sales fell about 2%"),
    ]
    verdict = JudgeVerdict(
        criteria=[
            CriterionGrade(criteria="fiscal year ended September 2024", operator="correctness", met=True, reason=""),
            CriterionGrade(criteria="Net sales fell about 2%", operator="contradiction", met=False, reason=""),
        ],
        verdict="partially",
        explanation="",
    )

    assert must_pass_failures(rubric, verdict) == ["391.0 billion"]


async def test_a_judge_that_fails_leaves_the_answer_ungraded_with_the_failure_code(
    fake_openai: FakeOpenAIServer, research_env
) -> None:
    research_env(RESEARCH_MAX_RETRIES="0")
    fake_openai.script(ErrorReply(429, code="insufficient_quota", type="insufficient_quota"), when=is_judge)

    result = await evaluate_question(question(), judge=Judge(judge_model()), research=router(lambda _: summary()))

    assert result.status == "answered" and result.answer
    assert result.judge is None and result.judge_error == "provider_quota_exceeded"


@pytest.mark.parametrize("reply", [JsonReply(raw='{"verdict": "maybe"}', validate=False)])
async def test_a_judge_answer_out_of_shape_is_a_judge_error_not_a_verdict(fake_openai: FakeOpenAIServer, reply) -> None:
    fake_openai.script(reply, when=is_judge)

    result = await evaluate_question(question(), judge=Judge(judge_model()), research=router(lambda _: summary()))

    assert result.verdict is None and result.judge_error == "invalid_model_output"


async def test_a_retired_judge_model_is_model_unavailable_naming_eval_judge_model(
    fake_openai: FakeOpenAIServer, research_env
) -> None:
    research_env(EVAL_JUDGE_MODEL="gpt-5.2-chat-latest")
    fake_openai.today = date(2026, 11, 26)  # after its shutdown: the Responses API answers 400 model_not_found

    result = await evaluate_question(question(), judge=Judge(judge_model()), research=router(lambda _: summary()))
    with pytest.raises(ModelUnavailable) as raised:
        await Judge(judge_model()).grade(question(), "An answer.", UsageLedger())

    assert result.judge is None and result.judge_error == "model_unavailable"
    assert "'gpt-5.2-chat-latest'" in raised.value.message and "EVAL_JUDGE_MODEL" in raised.value.message


async def test_a_run_whose_account_has_no_credit_is_an_error_row_with_that_code(
    fake_openai: FakeOpenAIServer, research_env
) -> None:
    research_env(RESEARCH_SPECULATIVE_SEARCH="0")
    fake_openai.set_default(NO_CREDIT)  # the planner's call: a 429; a search's stream: 200, then the error

    result = await evaluate_question(question(mode="quick"), judge=Judge(judge_model()))

    assert result.status == "error" and result.error_code == "provider_quota_exceeded"
    assert result.judge is None and [r.status for r in fake_openai.requests] == [200]
