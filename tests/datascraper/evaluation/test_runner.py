"""The runner: every row through the pipeline, a bounded number at once, each result logged as it finishes,
so an interrupted evaluation resumes where it stopped."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from datascraper.errors import UpstreamTimeout
from datascraper.evaluation.results import ResultLog
from datascraper.evaluation.runner import EvaluationProgress, evaluate_question, run_evaluation
from datascraper.schemas import ResearchQuery
from tests.datascraper.evaluation.support import question, router, summary

ROWS = [question(f"row-{n}", question=f"Question {n}?") for n in range(1, 7)]


async def test_each_row_runs_once_and_its_result_is_in_the_log(tmp_path: Path) -> None:
    log = ResultLog(tmp_path / "results.jsonl")
    seen: list[str] = []

    finished = await run_evaluation(ROWS, log, judge=None, research=router(lambda _: summary(), seen=seen))

    assert sorted(seen) == sorted(row.question for row in ROWS)
    assert sorted(r.id for r in log.read()) == sorted(row.id for row in ROWS)
    assert len(finished) == len(ROWS) and all(r.status == "answered" for r in finished)


async def test_no_more_than_the_concurrency_run_at_once(tmp_path: Path) -> None:
    in_flight, peak = 0, 0

    async def research(query: ResearchQuery) -> AsyncIterator[object]:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        yield summary()

    await run_evaluation(ROWS, ResultLog(tmp_path / "r.jsonl"), judge=None, concurrency=2, research=research)

    assert peak == 2


async def test_an_interrupted_evaluation_resumes_with_the_rows_not_yet_logged(tmp_path: Path) -> None:
    log = ResultLog(tmp_path / "results.jsonl")
    seen: list[str] = []

    def interrupt_after_three(progress: EvaluationProgress) -> None:
        if progress.done == 3:  # the user's Ctrl-C: asyncio.run cancels the evaluation
            evaluation.cancel()

    evaluation = asyncio.create_task(
        run_evaluation(ROWS, log, judge=None, concurrency=1, research=router(lambda _: summary()), on_result=interrupt_after_three)
    )
    with pytest.raises(asyncio.CancelledError):
        await evaluation
    logged_first = {r.id for r in log.read()}
    assert logged_first == {"row-1", "row-2", "row-3"}
    # The process died while writing a line: the cut line is not a result.
    with log.path.open("a", encoding="utf-8") as out:
        out.write('{"id": "row-4", "question": "Quest')

    progress: list[EvaluationProgress] = []
    await run_evaluation(
        ROWS, ResultLog(log.path), judge=None, research=router(lambda _: summary(), seen=seen), on_result=progress.append
    )

    assert sorted(seen) == ["Question 4?", "Question 5?", "Question 6?"]
    assert [r.id for r in log.read()] == ["row-1", "row-2", "row-3", *(p.result.id for p in progress)]
    assert {(p.total, p.skipped) for p in progress} == {(3, 3)}
    assert all(line.startswith("{") and line.endswith("}") for line in log.path.read_text().splitlines())


async def test_a_failed_run_is_a_result_with_its_error_code_and_the_usage_it_spent() -> None:
    failure = UpstreamTimeout()
    failure.summary = summary(answer="")

    result = await evaluate_question(question(), judge=None, research=router(lambda _: failure))

    assert (result.status, result.error_code, result.answer) == ("error", "upstream_timeout", "")
    assert result.measures.total.calls == 3


async def test_a_result_carries_the_runs_measures() -> None:
    result = await evaluate_question(question(), judge=None, research=router(lambda _: summary(score=0.82)))

    m = result.measures
    total = m.total
    assert (total.calls, total.input_tokens, total.output_tokens, total.cached_tokens, total.web_search_calls) == (
        3, 4000, 700, 1000, 2,
    )  # fmt: skip
    assert m.usage.by_model["gpt-5.4-mini"].calls == 2
    assert m.routes == {"market_data": 1, "web_search": 1}
    assert (m.rounds, m.confidence) == (1, 0.82)
    assert m.citations == {"supported": 1, "unsupported": 1} and m.citations_checked
    # gpt-5.4-mini: 1,000 in, 200 out; gpt-5.4: 2,000 fresh + 1,000 cached in, 500 out, 2 searches.
    expected = (1000 * 0.75 + 200 * 4.5 + 2000 * 2.5 + 1000 * 0.25 + 500 * 15) / 1e6 + 2 * 0.01
    assert m.cost_usd == pytest.approx(expected)
    assert result.verdict is None and result.judge_model is None  # --no-judge


async def test_a_row_whose_question_changed_is_answered_again_and_its_old_result_stands_no_more(
    tmp_path: Path,
) -> None:
    log = ResultLog(tmp_path / "results.jsonl")
    await run_evaluation(ROWS[:2], log, judge=None, research=router(lambda _: summary()))
    edited = [ROWS[0], ROWS[1].model_copy(update={"question": "Question 2, for fiscal 2025?"})]
    seen: list[str] = []

    await run_evaluation(edited, log, judge=None, research=router(lambda _: summary(), seen=seen))

    assert seen == ["Question 2, for fiscal 2025?"]
    assert [(r.id, r.question) for r in log.results_for(edited)] == [
        ("row-1", "Question 1?"),
        ("row-2", "Question 2, for fiscal 2025?"),
    ]
    assert len(log.read()) == 3, "the earlier wording's result stays in the log, unreported"
