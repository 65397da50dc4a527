"""The plain-text clients with market data: `/v1` and `manage.py ask` print each source's as-of after it,
and a `chart` event, which they cannot draw, neither breaks them nor leaks into the answer."""

from __future__ import annotations

import pytest

from datascraper.schemas import ChartEvent, ChartSeries, DeltaEvent, RunSummary, Source, SourcesEvent, StatusEvent
from tests.clients.test_ask_command import ask, scripted_router
from tests.datascraper.conftest import market_data  # noqa: F401 (the fixture)
from tests.datascraper.research_support import script_analysis, script_synthesis, sub

pytestmark = pytest.mark.django_db(transaction=True)

APPLE_MONTH = sub("How did Apple's share price move over the last month?", "numerical", ["AAPL"], "price_history")
HISTORY = Source(
    n=1,
    title="Yahoo Finance — AAPL price history (1 month, 2025-05-15 to 2025-06-13)",
    url="https://finance.yahoo.com/quote/AAPL/history",
    kind="market_data",
    as_of="2025-06-13",
)
CHART = ChartEvent(
    id="c1",
    title="AAPL closing price",
    kind="line",
    unit="USD",
    as_of="2025-06-13",
    source_n=1,
    series=[ChartSeries(name="AAPL", source_n=1, points=[("2025-06-12", 199.48), ("2025-06-13", 196.45)])],
)


async def test_v1_lists_a_quotes_source_with_its_time(sdk, fake_openai, market_data):  # noqa: F811
    completion = await sdk.chat.completions.create(
        model="finance-research", messages=[{"role": "user", "content": "What is AAPL trading at?"}]
    )

    assert completion.choices[0].message.content.endswith(
        "\n\nSources:\n[1] Yahoo Finance — AAPL quote — https://finance.yahoo.com/quote/AAPL (as of 2025-06-13T20:00:00+00:00)"
    )


async def test_v1_streams_a_charted_answer_as_text_with_the_sources_as_of(sdk, fake_openai, market_data, research_env):  # noqa: F811
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, APPLE_MONTH)
    script_synthesis(fake_openai, "Apple closed at 196.45 USD on 2025-06-13 [1].")

    stream = await sdk.chat.completions.create(
        model="finance-research",
        messages=[{"role": "user", "content": "How has Apple's stock done over the last month?"}],
        stream=True,
    )
    chunks = [chunk async for chunk in stream]

    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    answer, sources = text.split("\n\nSources:\n")
    assert answer == "Apple closed at 196.45 USD on 2025-06-13 [1]."
    assert sources.startswith("[1] Yahoo Finance — AAPL price history")
    assert sources.endswith("— https://finance.yahoo.com/quote/AAPL/history (as of 2025-06-13)")
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_ask_summarises_a_chart_on_stderr_and_prints_the_as_of_after_its_source(monkeypatch):
    events = [
        StatusEvent(phase="synthesizing", label="Writing the answer"),
        CHART,
        DeltaEvent(text="Apple closed at 196.45 USD [1]."),
        SourcesEvent(sources=[HISTORY]),
        RunSummary(mode="research", answer="Apple closed at 196.45 USD [1].", sources=[HISTORY]),
    ]
    monkeypatch.setattr("chat.management.commands.ask.run_research", scripted_router(events))

    stdout, stderr = ask("How has Apple's stock done over the last month?")

    assert stdout == (
        "Apple closed at 196.45 USD [1].\n\nSources:\n[1] Yahoo Finance — AAPL price history (1 month, 2025-05-15 to "
        "2025-06-13) — https://finance.yahoo.com/quote/AAPL/history (as of 2025-06-13)\n"
    )
    assert "  chart: AAPL closing price (line, 2 points, as of 2025-06-13) [1]" in stderr.splitlines()
