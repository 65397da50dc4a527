"""What the provider layer adds to a model call: `python benchmarks/provider_overhead.py`.

The network is out of the figure: the OpenAI SDK talks to an in-process `httpx2.MockTransport` that answers
every call with the same bytes, a Responses API reply in the fake server's wire shapes (a structured answer
of the planner's `QueryAnalysis`; a web-searched answer of about 900 characters citing four pages, streamed
in 6-character deltas with its annotations). Three ways of making each call are timed, interleaved, over
the same client:
- the SDK alone: `responses.create` with the same request, its JSON validated into the schema by hand; for
  the stream, the raw streamed response with each event's JSON read (the least any reader does);
- the OpenAI provider called directly (`OpenAIProvider.structured`, `ResponsesStream`): what the provider
  module does (request options, usage, error translation, citations to `[n]`), without the interface;
- through the interface, as the research engine calls it (`parse_structured`, `WebSearchStream`): the
  registry, the request types, the configuration check, the ledger and the breaker on top.

Printed: the median per call of each (in ms), what the whole provider layer adds (interface minus SDK
alone) and what the interface alone adds (interface minus provider). Target: the layer adds under 1 ms.
Options: `--calls` (timed calls per way, default 400).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import date
from pathlib import Path
from typing import Any

import httpx2
from openai import AsyncOpenAI

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["OPENAI_API_KEY"] = "benchmark-key"  # the configuration must name a key; no request leaves

from datascraper import prompts  # noqa: E402
from datascraper.model_ref import parse_model  # noqa: E402
from datascraper.plan_schemas import QueryAnalysis, SubQuestion  # noqa: E402
from datascraper.providers.base import StructuredRequest, TextRequest  # noqa: E402
from datascraper.providers.openai import client as shared_client  # noqa: E402
from datascraper.providers.openai.capabilities import request_options  # noqa: E402
from datascraper.providers.openai.provider import OpenAIProvider  # noqa: E402
from datascraper.providers.openai.stream import WEB_SEARCH_TOOL, ResponsesStream  # noqa: E402
from datascraper.providers.openai.structured import text_format  # noqa: E402
from datascraper.providers.structured import parse_structured  # noqa: E402
from datascraper.schemas import UsageLedger  # noqa: E402
from datascraper.web_search import WebSearchStream  # noqa: E402
from tests.fakes.openai_replies import Sentence, Usage  # noqa: E402
from tests.fakes.openai_requests import RecordedRequest  # noqa: E402
from tests.fakes.openai_wire import Answer, ResponseWriter, render_cited_text, sse  # noqa: E402

TARGET_MS = 1.0
TODAY = date(2025, 6, 13)
PLANNER = parse_model("gpt-5.4-mini")
RESEARCHER = parse_model("gpt-5.4")
QUESTION = "How did Apple's services revenue grow last quarter?"
INSTRUCTIONS = "Plan the research."
CHUNK_CHARS = 6
PAGES = [
    ("https://www.reuters.com/technology/apple-results-2025-05-01/", "Apple beats estimates | Reuters"),
    ("https://www.ft.com/content/apple-services", "Apple services growth - FT"),
    ("https://www.cnbc.com/2025/05/01/apple-earnings.html", "Apple earnings - CNBC"),
    ("https://investor.apple.com/newsroom/2025/05/q2-results/", "Apple reports second quarter results"),
]
SENTENCES = [
    Sentence("Apple's services revenue rose 11.6% from a year earlier to a record $26.6 billion.", cites=[PAGES[0]]),
    Sentence("Growth came from the App Store, advertising, cloud and payment services.", cites=[PAGES[1], PAGES[0]]),
    Sentence("The gross margin of services was 75.7%, against 36.7% for products.", cites=[PAGES[3]]),
    Sentence("Analysts had expected about $26.7 billion, so services fell slightly short.", cites=[PAGES[2]]),
    Sentence("Management guided to similar growth in the June quarter, despite tariffs on hardware."),
]
# The planner's usual verdict: three sub-questions, every field written out as a strict schema makes it.
ANALYSIS = QueryAnalysis(
    needs_decomposition=True,
    sub_questions=[
        SubQuestion(
            question="Apple quarterly income statement",
            type="numerical",
            tickers=["AAPL"],
            data="income_statement",
            frequency="quarterly",
            periods=5,
        ),
        SubQuestion(question="What drove Apple's services growth last quarter?", type="qualitative"),
        SubQuestion(question="What did analysts expect of Apple's services revenue?", type="qualitative"),
    ],
)


def structured_body(request_body: dict[str, Any]) -> bytes:
    text = ANALYSIS.model_dump_json()
    writer = ResponseWriter(_recorded(request_body), Answer(text, [], Usage()), snapshot="gpt-5.4-mini-2026-03-17")
    return json.dumps(writer.response("completed", writer.final_output())).encode()


def streamed_body(request_body: dict[str, Any]) -> bytes:
    """The events the fake server writes for a cited answer, each annotation after the delta that completes
    its link."""
    text, annotations = render_cited_text(SENTENCES)
    writer = ResponseWriter(_recorded(request_body), Answer(text, annotations, Usage()), snapshot="gpt-5.4-2026-03-05")
    events = list(writer.opening_events())
    for sent in range(CHUNK_CHARS, len(text) + CHUNK_CHARS, CHUNK_CHARS):
        events.append(writer.delta_event(text[sent - CHUNK_CHARS : sent]))
        while writer.annotations_sent < len(annotations) and annotations[writer.annotations_sent]["end_index"] <= sent:
            events.append(writer.annotation_event(writer.annotations_sent))
    events.extend(writer.closing_events())
    return b"".join(sse(event) for event in events)


def _recorded(body: dict[str, Any]) -> RecordedRequest:
    return RecordedRequest(method="POST", path="/v1/responses", headers={}, body=body, started_at=0.0)


class InProcessOpenAI:
    """Answers each request with the bytes built for its kind on the first one (the network left out)."""

    def __init__(self) -> None:
        self.bodies: dict[bool, bytes] = {}

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        streamed = bool(body.get("stream"))
        if streamed not in self.bodies:
            self.bodies[streamed] = streamed_body(body) if streamed else structured_body(body)
        if streamed:
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=self.bodies[True])
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=self.bodies[False])


# --- the three ways of each call ------------------------------------------------------------------------


def structured_ways(sdk: AsyncOpenAI) -> dict[str, Callable[[], Awaitable[object]]]:
    provider = OpenAIProvider()
    request = StructuredRequest(PLANNER, INSTRUCTIONS, QUESTION, QueryAnalysis, "low", 20.0)

    async def sdk_alone() -> object:
        response = await sdk.responses.create(
            model=PLANNER.name,
            instructions=INSTRUCTIONS,
            input=QUESTION,
            extra_body={"text": {"format": text_format(QueryAnalysis)}},
            **request_options(PLANNER.name),
        )
        return QueryAnalysis.model_validate_json(response.output_text)

    async def provider_direct() -> object:
        return QueryAnalysis.model_validate_json((await provider.structured(request)).text)

    async def interface() -> object:
        return await parse_structured(PLANNER.label, INSTRUCTIONS, QUESTION, QueryAnalysis, UsageLedger())

    return {"SDK alone": sdk_alone, "provider": provider_direct, "interface": interface}


def streamed_ways(sdk: AsyncOpenAI) -> dict[str, Callable[[], Awaitable[object]]]:
    instructions = prompts.with_today(prompts.SUB_QUESTION_SEARCH_INSTRUCTIONS, TODAY)
    request = TextRequest(RESEARCHER, instructions, QUESTION, web_search=True)

    async def sdk_alone() -> object:
        call = sdk.responses.with_streaming_response.create(
            model=RESEARCHER.name,
            instructions=instructions,
            stream=True,
            extra_body={"input": [{"role": "user", "content": QUESTION}], "tools": [WEB_SEARCH_TOOL]},
            **request_options(RESEARCHER.name, web_search=True),
        )
        events = 0
        async with call as response:
            async for line in response.iter_lines():
                if line.startswith("data:"):
                    json.loads(line[5:])
                    events += 1
        return events

    async def provider_direct() -> object:
        return [text async for text in ResponsesStream(request, sdk)]

    async def interface() -> object:
        search = WebSearchStream(
            QUESTION,
            instructions=prompts.SUB_QUESTION_SEARCH_INSTRUCTIONS,
            model=RESEARCHER.label,
            ledger=UsageLedger(),
            today=TODAY,
        )
        return [delta async for delta in search]

    return {"SDK alone": sdk_alone, "provider": provider_direct, "interface": interface}


async def timed(ways: dict[str, Callable[[], Awaitable[object]]], calls: int) -> dict[str, float]:
    """The median ms per call of each way, the ways interleaved (their order turning each round)."""
    names = list(ways)
    for _ in range(max(20, calls // 10)):  # warm: pydantic validators, the SDK's types, the caches
        for name in names:
            await ways[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for turn in range(calls):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            started = time.perf_counter()
            await ways[name]()
            times[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def report(kind: str, medians: dict[str, float]) -> float:
    layer = medians["interface"] - medians["SDK alone"]
    interface = medians["interface"] - medians["provider"]
    print(
        f"{kind}: SDK alone {medians['SDK alone']:.3f} ms, provider {medians['provider']:.3f} ms, "
        f"interface {medians['interface']:.3f} ms per call"
    )
    print(f"  the provider layer adds {layer:.3f} ms; the interface alone {interface:.3f} ms")
    return layer


async def main(calls: int) -> int:
    transport = httpx2.MockTransport(InProcessOpenAI())
    async with httpx2.AsyncClient(transport=transport) as http_client:
        sdk = AsyncOpenAI(api_key="benchmark-key", base_url="http://openai.invalid/v1", http_client=http_client)
        # The process's shared client is this one, so the interface's calls go over the same transport.
        shared_client._clients.reset()
        shared_client._clients.get(lambda: sdk)
        text, annotations = render_cited_text(SENTENCES)
        print(
            f"median of {calls} calls per way, interleaved; the streamed answer: {len(text)} characters in "
            f"{-(-len(text) // CHUNK_CHARS)} deltas, {len(annotations)} citations of {len(PAGES)} pages"
        )
        structured = report("structured answer (QueryAnalysis)", await timed(structured_ways(sdk), calls))
        streamed = report("streamed web search", await timed(streamed_ways(sdk), calls))
    worst = max(structured, streamed)
    verdict = "within" if worst < TARGET_MS else "OVER"
    print(f"target: the layer adds under {TARGET_MS:g} ms per call: {verdict} ({worst:.3f} ms at most)")
    return 0 if worst < TARGET_MS else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=400)
    sys.exit(asyncio.run(main(parser.parse_args().calls)))
