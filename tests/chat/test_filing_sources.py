"""Sources from SEC filings through the chat app: `kind: "filing"` with its form, period and filing day in
the run's `sources` event, on the stored answer (GET /api/conversations/{id}) and after a `/v1` answer.

Nothing in the research router makes a filing source yet, so the run is answered by a scripted router.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import date
from functools import partial

import pytest

from chat.schemas import SourceOut
from chat.services import runs
from chat.services.completions import format_sources
from datascraper.schemas import DeltaEvent, ResearchEvent, ResearchQuery, RunSummary, Source, SourcesEvent
from tests.chat.test_runs import ask, wait_finished
from tests.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)

ANNUAL = Source(
    n=1,
    title="Apple Inc. 10-K for fiscal 2024",
    url="https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm",
    kind="filing",
    form="10-K",
    period="FY2024",
    filed=date(2024, 11, 1),
)
QUARTERLY = Source(
    n=2,
    title="Apple Inc. 10-Q for the first quarter of fiscal 2025",
    url="https://www.sec.gov/Archives/edgar/data/320193/000032019325000008/aapl-20241228.htm",
    kind="filing",
    form="10-Q",
    period="Q1 FY2025",
    filed=date(2025, 1, 31),
)
INSIDER = Source(
    n=3,
    title="Form 4: Timothy D. Cook",
    url="https://www.sec.gov/Archives/edgar/data/320193/000032019325000040/xslF345X05/wk-form4.xml",
    kind="filing",
    form="4",
    period="2025-04-01",
    filed=date(2025, 4, 3),
)
WEB = Source(n=4, title="Apple results - Reuters", url="https://www.reuters.com/apple-q1", kind="web")
SOURCES = [ANNUAL, QUARTERLY, INSIDER, WEB]
ANSWER = "Revenue was $391.0 billion in fiscal 2024 [1] and $124.3 billion in Q1 FY2025 [2]; Cook sold shares [3][4]."


@pytest.fixture
def filing_run(monkeypatch) -> None:
    """Runs the app starts stream ANSWER and end citing SOURCES."""

    async def research(query: ResearchQuery, resume_from: dict | None = None) -> AsyncIterator[ResearchEvent]:
        yield DeltaEvent(text=ANSWER)
        yield SourcesEvent(sources=SOURCES)
        yield RunSummary(mode="quick", answer=ANSWER, sources=SOURCES)

    monkeypatch.setattr(runs, "execute_run", partial(runs.execute_run, research=research))


def test_source_out_carries_a_filings_form_period_and_filing_day_and_leaves_them_out_elsewhere():
    served = [SourceOut.model_validate(source.model_dump(mode="json")).model_dump(mode="json") for source in SOURCES]

    assert served[0] == {
        "n": 1,
        "title": ANNUAL.title,
        "url": ANNUAL.url,
        "kind": "filing",
        "form": "10-K",
        "period": "FY2024",
        "filed": "2024-11-01",
    }
    assert served[3] == {"n": 4, "title": WEB.title, "url": WEB.url, "kind": "web"}
    assert served == [source.model_dump(mode="json") for source in SOURCES], "served as the run's event sends it"


def test_the_openapi_schema_describes_the_filing_fields():
    properties = SourceOut.model_json_schema()["properties"]

    assert "filing" in properties["kind"]["enum"]
    assert {"form", "period", "filed"} <= properties.keys()
    assert all(properties[name]["description"].startswith("Filing:") for name in ("form", "period", "filed"))


async def test_a_filing_source_is_sent_and_stored_with_its_form_period_and_filing_day(api, filing_run):
    accepted = await ask(api, "How did Apple do, and did insiders sell?")
    run = await wait_finished(api, accepted["run_id"])
    assert run["status"] == "done"

    events = await read_events(api, accepted["events_url"])

    sent = next(e for e in events if e.type == "sources").data["sources"]
    assert [(s["kind"], s.get("form"), s.get("period"), s.get("filed")) for s in sent] == [
        ("filing", "10-K", "FY2024", "2024-11-01"),
        ("filing", "10-Q", "Q1 FY2025", "2025-01-31"),
        ("filing", "4", "2025-04-01", "2025-04-03"),
        ("web", None, None, None),
    ]
    conversation = (await api.get(f"/api/conversations/{accepted['conversation_id']}")).json()
    answer = conversation["messages"][-1]
    assert answer["run_id"] == accepted["run_id"]
    assert answer["sources"] == sent


def test_the_plain_text_source_list_names_a_filings_form_period_and_filing_day():
    assert format_sources(SOURCES) == (
        "\n\nSources:\n"
        f"[1] {ANNUAL.title} — {ANNUAL.url} (10-K, FY2024, filed 2024-11-01)\n"
        f"[2] {QUARTERLY.title} — {QUARTERLY.url} (10-Q, Q1 FY2025, filed 2025-01-31)\n"
        f"[3] {INSIDER.title} — {INSIDER.url} (Form 4, trade 2025-04-01, filed 2025-04-03)\n"
        f"[4] {WEB.title} — {WEB.url}"
    )


@pytest.mark.parametrize(
    ("fields", "details"),
    [
        (
            {"form": "8-K", "period": "2025-01-30", "filed": date(2025, 1, 30)},
            " (8-K, event 2025-01-30, filed 2025-01-30)",
        ),
        ({"form": "8-K/A", "period": "2025-01-30"}, " (8-K/A, event 2025-01-30)"),
        ({"form": "4/A", "period": "2025-04-01"}, " (Form 4/A, trade 2025-04-01)"),
        ({"form": "S-1", "period": "2025-03-31"}, " (S-1, period 2025-03-31)"),
        ({"form": "10-K/A", "period": "FY2024"}, " (10-K/A, FY2024)"),
        ({"filed": date(2024, 11, 1)}, " (filed 2024-11-01)"),
        ({}, ""),
    ],
)
def test_a_filings_details_say_what_they_know_and_what_a_day_is(fields, details):
    source = Source(n=1, title="A filing", url="https://www.sec.gov/x", kind="filing", **fields)

    assert format_sources([source]) == f"\n\nSources:\n[1] A filing — https://www.sec.gov/x{details}"


async def test_v1_lists_a_filing_source_with_its_form_period_and_filing_day(api, filing_run):
    response = await api.post(
        "/v1/chat/completions",
        json={"model": "finance-research", "messages": [{"role": "user", "content": "How did Apple do?"}]},
    )

    assert response.status_code == 200, response.text
    content = response.json()["choices"][0]["message"]["content"]
    assert content == ANSWER + format_sources(SOURCES)
    assert f"[2] {QUARTERLY.title} — {QUARTERLY.url} (10-Q, Q1 FY2025, filed 2025-01-31)" in content.splitlines()


async def test_v1_streams_the_filing_details_after_the_answer(api, filing_run):
    async with api.stream(
        "POST",
        "/v1/chat/completions",
        json={
            "model": "finance-research",
            "messages": [{"role": "user", "content": "How did Apple do?"}],
            "stream": True,
        },
    ) as response:
        body = (await response.aread()).decode()

    assert response.status_code == 200
    frames = [f.removeprefix("data: ") for f in body.split("\n\n") if f.startswith("data: ") and f != "data: [DONE]"]
    chunks = [json.loads(frame) for frame in frames]
    text = "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks if chunk["choices"])
    assert text == ANSWER + format_sources(SOURCES)
    assert text.endswith(
        f"[3] {INSIDER.title} — {INSIDER.url} (Form 4, trade 2025-04-01, filed 2025-04-03)\n[4] {WEB.title} — {WEB.url}"
    )
