"""The offline checks catch what breaks a row: a number no tool returned, a marker naming no source, other
periods fetched, another route taken. Each case is a row of the offline set run with one thing changed."""

from __future__ import annotations

from datascraper.evaluation.offline import OfflineExpectation, check_run
from datascraper.evaluation.questions import EvalQuestion
from tests.datascraper.evaluation.test_offline_set import ROWS, observe
from tests.fakes.openai_server import FakeOpenAIServer

AAPL = next(row for row in ROWS if row.id == "aapl-fy2024-revenue")


def changed(row: EvalQuestion, *, answer: list[str] | None = None, **expect: object) -> EvalQuestion:
    assert row.offline is not None
    script = row.offline.model_copy(
        update={
            "answer": answer if answer is not None else row.offline.answer,
            "expect": row.offline.expect.model_copy(update=expect),
        }
    )
    return row.model_copy(update={"offline": script})


async def test_the_row_as_written_holds(fake_openai: FakeOpenAIServer, market_data) -> None:
    assert AAPL.offline is not None
    assert check_run(await observe(AAPL, fake_openai), AAPL.offline.expect) == []


async def test_a_figure_that_no_tool_returned_breaks_the_row(fake_openai: FakeOpenAIServer, market_data) -> None:
    row = changed(AAPL, answer=["Apple's total net sales in fiscal 2024 were $395.76 billion [1]."], min_numbers_checked=1)
    assert row.offline is not None

    failures = check_run(await observe(row, fake_openai), row.offline.expect)

    assert failures == ["1 numbers match no tool value nor computed fact: ['$395.76 billion']"]


async def test_a_marker_naming_no_source_breaks_the_row(fake_openai: FakeOpenAIServer, market_data) -> None:
    row = changed(AAPL, answer=["Apple's total net sales in fiscal 2024 were $391.04 billion [1][4]."], min_numbers_checked=1)
    assert row.offline is not None

    failures = check_run(await observe(row, fake_openai), row.offline.expect)

    assert len(failures) == 1 and "[n] markers name no source" in failures[0]


async def test_other_periods_or_another_route_break_the_row(fake_openai: FakeOpenAIServer, market_data) -> None:
    row = changed(AAPL, periods={"AAPL income annual": ["2023-09-30"]}, routes={"q1": "web_search"})
    assert row.offline is not None

    failures = check_run(await observe(row, fake_openai), row.offline.expect)

    assert [failure.split(" were ")[0] for failure in failures] == ["routes", "periods fetched"]


def test_an_expectation_checks_nothing_it_leaves_unset_but_the_markers() -> None:
    from datascraper.evaluation.offline import RunObservation

    observation = RunObservation(
        mode="quick", fast_path=False, routes={}, fallbacks=2, periods={}, numbers={}, citations={"markers": 2, "unresolved": 1}
    )

    failures = check_run(observation, OfflineExpectation(fallbacks=None))

    assert failures == ["1 of 2 [n] markers name no source"]
