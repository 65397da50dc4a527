"""What a test scripts the fake Anthropic API to answer, and the Messages API's wire format as the fake writes it:
the Message object, the stream's events in the real order and shape, and the error bodies.

A web-searched answer is, as the real one: a `server_tool_use` block (its query streamed as
`input_json_delta`s), a `web_search_tool_result` block with the results, then text blocks; a block that
states what a page says carries its `citations` (`web_search_result_location`: url, title, cited_text,
encrypted_index), streamed as `citations_delta`s before the block's text, and the sentence's period
comes in the next, uncited block. A `ping` follows `message_start`; `message_delta` carries the stop
reason and the cumulative usage (`server_tool_use.web_search_requests`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from tests.fakes.openai_replies import DEFAULT_SENTENCES, Sentence


def new_id(prefix: str) -> str:
    return f"{prefix}_01{uuid.uuid4().hex[:22]}"


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 120
    output_tokens: int = 80
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


@dataclass(frozen=True)
class TextAnswer:
    """A written answer; with the request's web search tool, `searches` searches (the question's last line
    as the query) before it, each after a sentence of narration as Claude writes one (`narrate`). `error_after_deltas` sends an `error` event (`error_type`) after that many
    text deltas and ends the stream; `drop_after_deltas` closes the connection there. `stop_reason`
    `max_tokens` or `refusal` ends the message that way."""

    sentences: Sequence[Sentence | str] = DEFAULT_SENTENCES
    usage: Usage | None = None
    searches: int = 1
    narrate: bool = True
    citations_last: bool = False
    chunk_chars: int = 7
    stop_reason: str = "end_turn"
    error_after_deltas: int | None = None
    error_type: str = "overloaded_error"
    drop_after_deltas: int | None = None


@dataclass(frozen=True)
class JsonAnswer:
    """A structured answer: `data` as JSON, or `raw` verbatim; with neither, the smallest JSON the schema allows.
    `data` is checked against the request's schema (a mismatch lands in the fake's `errors`)."""

    data: Mapping[str, Any] | BaseModel | None = None
    raw: str | None = None
    usage: Usage | None = None
    stop_reason: str = "end_turn"


# The real API's wording where it is known; the rest is marked as the fake's.
NO_CREDIT_MESSAGE = (
    "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or "
    "purchase credits."
)
_DEFAULT_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request (fake)."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "Not found (fake)."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit (fake)."),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


@dataclass(frozen=True)
class ErrorAnswer:
    """An HTTP error with the API's error body. `retry_after` (seconds) is sent as `retry-after`; the SDK
    then waits that long before its retry (0 retries at once)."""

    status: int
    error_type: str | None = None
    message: str | None = None
    retry_after: float | None = 0
    error_code: str | None = None  # `error.details.error_code`

    def body(self, request_id: str) -> dict[str, Any]:
        default_type, default_message = _DEFAULT_ERRORS.get(self.status, ("api_error", f"HTTP {self.status} (fake)."))
        body = error_body(self.error_type or default_type, self.message or default_message, request_id)
        if self.error_code is not None:
            body["error"]["details"] = {"error_code": self.error_code}
        return body


NO_CREDIT = ErrorAnswer(400, "invalid_request_error", NO_CREDIT_MESSAGE)
Answer = TextAnswer | JsonAnswer | ErrorAnswer


def error_body(error_type: str, message: str, request_id: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}, "request_id": request_id}


def sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


# --- the answer's content blocks -------------------------------------------------------------------------


@dataclass
class Block:
    """One content block, whole: what a Message holds and what the stream sends in parts."""

    type: str
    text: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)
    payload: dict[str, Any] = field(default_factory=dict)  # a tool block's fields

    def whole(self) -> dict[str, Any]:
        if self.type != "text":
            return {"type": self.type, **self.payload}
        block: dict[str, Any] = {"type": "text", "text": self.text}
        block["citations"] = self.citations or None
        return block


def _citation(url: str, title: str, cited_text: str) -> dict[str, Any]:
    return {
        "type": "web_search_result_location",
        "url": url,
        "title": title,
        "cited_text": cited_text,
        "encrypted_index": uuid.uuid4().hex,
    }


def text_blocks(sentences: Sequence[Sentence | str]) -> list[Block]:
    """The answer's text blocks: each cited sentence a block of its own without its period, which opens the
    next, uncited block."""
    blocks: list[Block] = []
    pending = ""  # uncited text not yet in a block
    for item in sentences:
        sentence = Sentence(item) if isinstance(item, str) else item
        text = (" " if blocks or pending else "") + sentence.text
        if not sentence.cites:
            pending += text
            continue
        claim = text.rstrip(".")
        if pending:
            blocks.append(Block("text", pending))
        citations = [_citation(url, title, sentence.text) for url, title in sentence.cites]
        blocks.append(Block("text", claim, citations))
        pending = text[len(claim) :]
    if pending:
        blocks.append(Block("text", pending))
    return blocks


def search_blocks(query: str, sentences: Sequence[Sentence | str], *, narrate: bool) -> list[Block]:
    """One web search: the narration before it, its `server_tool_use` and its results (every page the
    answer cites)."""
    tool_id = new_id("srvtoolu")
    pages = dict.fromkeys(cite for s in sentences if isinstance(s, Sentence) for cite in s.cites)
    results = [
        {
            "type": "web_search_result",
            "url": url,
            "title": title,
            "encrypted_content": uuid.uuid4().hex,
            "page_age": None,
        }
        for url, title in pages
    ]
    narration = [Block("text", f"I'll search for {query}")] if narrate else []
    return [
        *narration,
        Block("server_tool_use", payload={"id": tool_id, "name": "web_search", "input": {"query": query}}),
        Block("web_search_tool_result", payload={"tool_use_id": tool_id, "content": results}),
    ]


# --- the stream ----------------------------------------------------------------------------------------


def block_events(
    index: int, block: Block, chunk_chars: int, *, citations_last: bool = False
) -> Iterator[dict[str, Any]]:
    """A block as the stream sends it: start (empty), deltas, stop. A text delta is marked `"_text": True`
    so the fake can count them (to fail part way); the mark is removed before the event is sent."""
    if block.type == "server_tool_use":
        start = {**block.payload, "type": block.type, "input": {}}
        yield {"type": "content_block_start", "index": index, "content_block": start}
        query_json = json.dumps(block.payload["input"])
        for i in range(0, len(query_json), 12):
            delta = {"type": "input_json_delta", "partial_json": query_json[i : i + 12]}
            yield {"type": "content_block_delta", "index": index, "delta": delta}
    elif block.type == "text":
        yield from _text_block_events(index, block, chunk_chars, citations_last=citations_last)
    else:
        yield {"type": "content_block_start", "index": index, "content_block": block.whole()}
    yield {"type": "content_block_stop", "index": index}


def _text_block_events(index: int, block: Block, chunk_chars: int, *, citations_last: bool) -> Iterator[dict[str, Any]]:
    """A text block's start and deltas: its citations before its text, or after it (`citations_last`), as
    streams have both."""
    start: dict[str, Any] = {"type": "text", "text": ""}
    if block.citations:
        start["citations"] = []
    yield {"type": "content_block_start", "index": index, "content_block": start}
    citations = [
        {"type": "content_block_delta", "index": index, "delta": {"type": "citations_delta", "citation": citation}}
        for citation in block.citations
    ]
    if not citations_last:
        yield from citations
    for i in range(0, len(block.text), chunk_chars):
        delta = {"type": "text_delta", "text": block.text[i : i + chunk_chars]}
        yield {"type": "content_block_delta", "index": index, "delta": delta, "_text": True}
    if citations_last:
        yield from citations


def message(model: str, blocks: Sequence[Block], stop_reason: str | None, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block.whole() for block in blocks],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def usage_payload(usage: Usage, searches: int) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": usage.output_tokens,
        "service_tier": "standard",
    }
    if searches:
        payload["server_tool_use"] = {"web_search_requests": searches, "web_fetch_requests": 0}
    return payload
