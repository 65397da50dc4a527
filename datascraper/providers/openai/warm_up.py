"""Process start-up: build what a process's first OpenAI calls would otherwise build on the way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx2
from openai import AsyncOpenAI
from pydantic import BaseModel

from datascraper.models_config import get_research_config
from datascraper.providers.openai.client import get_openai_client
from datascraper.providers.openai.structured import text_format

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


async def warm_up_openai(schemas: Sequence[type[BaseModel]]) -> None:
    """Build at process start what a process's first model calls would otherwise build on the way: the
    structured calls' `text.format` of `schemas`, the SDK's responses module and its response types
    (pydantic builds their validators on first use), and this loop's client with its connection pool and
    TLS context. That was 0.3-0.8 s of the first research run of a fresh process.

    No request leaves the process: the SDK's response handling runs against a local transport that
    answers one canned response (the model provider costs money and may be unconfigured). Call it on the
    loop that serves.
    """
    for schema in schemas:
        text_format(schema)
    text = {"format": text_format(schemas[0]), "verbosity": "medium"}
    local = httpx2.MockTransport(lambda request: httpx2.Response(200, json={**_WARM_UP_RESPONSE, "text": text}))
    async with httpx2.AsyncClient(transport=local) as http_client:
        sdk = AsyncOpenAI(api_key="warm-up", base_url="http://warm-up.invalid/v1", http_client=http_client)
        await sdk.responses.create(model="warm-up", input="", extra_body={"text": text})
        # The web search streams through this wrapper; building it loads the SDK's streaming types.
        sdk.responses.with_streaming_response  # noqa: B018
    if get_research_config().provider_configured("openai"):
        get_openai_client()
