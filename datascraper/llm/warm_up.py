"""Process start-up: build what a process's first model calls would otherwise build on the way."""

from __future__ import annotations

import logging
from typing import Any

import httpx2
from openai import AsyncOpenAI

from datascraper.llm.client import get_openai_client
from datascraper.llm.structured import text_format
from datascraper.models_config import get_research_config
from datascraper.plan_schemas import GapReport, QueryAnalysis

logger = logging.getLogger(__name__)

# A structured answer with every field the Responses API sends (a reasoning item, then the message), so
# that the warm-up walks the same response types as a planner call; `text` is added per call.
_WARM_UP_RESPONSE: dict[str, Any] = {
    "id": "resp_warm_up",
    "object": "response",
    "created_at": 0,
    "status": "completed",
    "background": False,
    "completed_at": 0,
    "error": None,
    "incomplete_details": None,
    "instructions": "",
    "metadata": {},
    "model": "warm-up",
    "output": [
        {"id": "rs_warm_up", "type": "reasoning", "summary": []},
        {
            "id": "msg_warm_up",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "{}", "annotations": [], "logprobs": []}],
        },
    ],
    "parallel_tool_calls": True,
    "reasoning": {"effort": "low", "summary": None},
    "service_tier": "default",
    "store": True,
    "temperature": 1.0,
    "tool_choice": "auto",
    "tools": [],
    "top_logprobs": 0,
    "top_p": 1.0,
    "truncation": "disabled",
    "usage": {
        "input_tokens": 0,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 0,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 0,
    },
}


async def warm_up_models() -> None:
    """Build at process start what a process's first model calls would otherwise build on the way: the
    planner schemas' `text.format`, the SDK's responses module and its response types (pydantic builds
    their validators on first use), and this loop's client with its connection pool and TLS context.
    That was 0.3-0.8 s of the first research run of a fresh process.

    No request leaves the process: the SDK's response handling runs against a local transport that
    answers one canned response (the model provider costs money and may be unconfigured). Never raises:
    a failure is logged and the first call builds what is missing. Call it on the loop that serves.
    """
    try:
        for schema in (QueryAnalysis, GapReport):
            text_format(schema)
        text = {"format": text_format(QueryAnalysis), "verbosity": "medium"}
        local = httpx2.MockTransport(lambda request: httpx2.Response(200, json={**_WARM_UP_RESPONSE, "text": text}))
        async with httpx2.AsyncClient(transport=local) as http_client:
            sdk = AsyncOpenAI(api_key="warm-up", base_url="http://warm-up.invalid/v1", http_client=http_client)
            await sdk.responses.create(model="warm-up", input="", extra_body={"text": text})
            # The web search streams through this wrapper; building it loads the SDK's streaming types.
            sdk.responses.with_streaming_response  # noqa: B018
        if get_research_config().is_configured:
            get_openai_client()
    except Exception:  # a warm-up never stops a process from serving
        logger.warning("The model client was not warmed up; the first call builds what it needs.", exc_info=True)
