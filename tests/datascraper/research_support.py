"""Helpers for the research pipeline tests: run a question to the end, and script the planner's answers."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from datascraper.plan_schemas import GapReport, QueryAnalysis, SubQuestion
from datascraper.research_engine import run_research
from datascraper.schemas import ResearchQuery, RunSummary
from tests.fakes.openai_server import FakeOpenAIServer, JsonReply, RecordedRequest, Sentence, TextReply

MARKER = re.compile(r"\[(\d+)\]")

# Three independent, credible publishers (major news twice, a regulator): a finding citing all of them is
# evidence the confidence rules trust, so research stops when the gap detector says so.
CORROBORATING = (
    ("https://www.reuters.com/markets/us/analysts-2025-06-12/", "Analysts weigh in - Reuters"),
    ("https://www.ft.com/content/analysts-june", "What analysts say - FT"),
    ("https://www.sec.gov/newsroom/press-releases/2025-80", "Press release - SEC"),
)


def well_sourced(text: str) -> Sentence:
    """A sentence of a web finding citing `CORROBORATING`."""
    return Sentence(text, cites=list(CORROBORATING))


def script_well_sourced_searches(fake: FakeOpenAIServer, text: str = "Findings from three publishers.") -> None:
    """Every web search (unless scripted before) answers citing `CORROBORATING`."""
    fake.script(TextReply([well_sourced(text)]), when=lambda request: request.has_web_search, times=None)


async def run(question: str, mode: str = "auto", **query: object) -> list:
    """Every event of one run, the `RunSummary` last."""
    return [event async for event in run_research(ResearchQuery(question=question, mode=mode, **query))]


async def run_until_error(question: str, mode: str = "auto") -> tuple[list, Exception]:
    """The events of a run that must fail, and its error."""
    events: list = []
    with pytest.raises(Exception) as raised:
        async for event in run_research(ResearchQuery(question=question, mode=mode)):
            events.append(event)
    return events, raised.value


def summary_of(events: list) -> RunSummary:
    assert isinstance(events[-1], RunSummary)
    return events[-1]


def of_type(events: list, kind: str) -> list:
    return [event for event in events if event.type == kind]


def steps(events: list) -> list[tuple[str, str, str]]:
    return [(e.sub_question_id, e.state, e.route) for e in of_type(events, "step")]


def answer_text(events: list) -> str:
    return "".join(e.text for e in of_type(events, "delta"))


# --- predicates: which call a request is ----------------------------------------------------------------


def schema_name(request: RecordedRequest) -> str | None:
    return (request.text_format or {}).get("name") if request.is_structured else None


def is_analysis(request: RecordedRequest) -> bool:
    return schema_name(request) == "QueryAnalysis"


def is_gap_report(request: RecordedRequest) -> bool:
    return schema_name(request) == "GapReport"


def is_synthesis(request: RecordedRequest) -> bool:
    return not request.is_structured and not request.has_web_search


def searched(question_part: str):
    def predicate(request: RecordedRequest) -> bool:
        return request.has_web_search and question_part.lower() in request.input_text.lower()

    return predicate


def requests_of(fake: FakeOpenAIServer, predicate) -> list[RecordedRequest]:
    return [request for request in fake.requests if predicate(request)]


# --- scripting ---------------------------------------------------------------------------------------------


def sub(
    question: str, type: str = "qualitative", tickers: Sequence[str] = (), data: str | None = None, **periods: object
) -> SubQuestion:
    """A sub-question as the analyzer writes it; `periods` are its period fields (frequency, start, ...)."""
    return SubQuestion(question=question, type=type, tickers=list(tickers), data=data, **periods)


def script_analysis(fake: FakeOpenAIServer, *sub_questions: SubQuestion, needs_decomposition: bool = True) -> None:
    analysis = QueryAnalysis(needs_decomposition=needs_decomposition, sub_questions=list(sub_questions))
    fake.script(JsonReply(analysis), when=is_analysis)


def script_gaps(fake: FakeOpenAIServer, *reports: GapReport) -> None:
    for report in reports:
        fake.script(JsonReply(report), when=is_gap_report)


def gaps(score: float, *follow_ups: SubQuestion, complete: bool = False, missing: Sequence[str] = ("more detail",)) -> GapReport:
    return GapReport(
        complete=complete, score=score, gaps=[] if complete else list(missing), follow_up_queries=list(follow_ups)
    )


def script_synthesis(fake: FakeOpenAIServer, *sentences: str, **options: object) -> None:
    fake.script(TextReply(list(sentences), **options), when=is_synthesis)
