"""The Responses API's wire format as the fake OpenAI server writes it: the Response object, and the stream
events in the order and shape the real API sends them (checked against `../shared/recorded/openai`).

What the real stream does that a tidy one would not, and so this one does too: every text delta carries an
`obfuscation` string; a `web_search_call` item is added without its action (the query arrives only with
`output_item.done`); a search may be followed by `open_page` and `find_in_page` actions; with reasoning
asked, a reasoning item comes before each search and before the message; the response names the model's
dated snapshot, whatever alias was asked; a failure inside a stream is an `error` event with its fields
nested under `error`, then `response.failed` with `usage: null`.
"""

from __future__ import annotations

import json
import random
import string
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tests.fakes.openai_replies import (
    FindInPage,
    Interrupt,
    OpenPage,
    Search,
    Sentence,
    Usage,
    WebAction,
    stream_error,
)
from tests.fakes.openai_requests import RecordedRequest


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _with_tracking(url: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}utm_source=openai"


def _without_tracking(url: str) -> str:
    return url.removesuffix("?utm_source=openai").removesuffix("&utm_source=openai")


def _domain(url: str) -> str:
    host = urlsplit(url).hostname or url
    return host.removeprefix("www.")


def render_cited_text(sentences: Sequence[Sentence | str]) -> tuple[str, list[dict[str, Any]]]:
    """The answer text as web_search writes it, with its `url_citation` annotations.

    Each citation is an inline link after its sentence, `([domain](url?utm_source=openai))`; the
    annotation spans the whole parenthesised link.
    """
    text = ""
    annotations: list[dict[str, Any]] = []
    for sentence in sentences:
        if isinstance(sentence, str):
            sentence = Sentence(sentence)
        text += (" " if text and not text.endswith("\n") else "") + sentence.text
        for url, title in sentence.cites:
            tracked = _with_tracking(url)
            link = f"([{_domain(url)}]({tracked}))"
            text += " "
            annotations.append(
                {
                    "type": "url_citation",
                    "start_index": len(text),
                    "end_index": len(text) + len(link),
                    "title": title,
                    "url": tracked,
                }
            )
            text += link
    return text, annotations


def example_from_schema(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """The smallest value a JSON schema (as pydantic/the SDK write them) allows."""
    root = root or schema
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return example_from_schema(target, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for combinator in ("anyOf", "oneOf", "allOf"):
        if combinator in schema:
            options = schema[combinator]
            if any(option.get("type") == "null" for option in options):
                return None
            return example_from_schema(options[0], root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        properties = schema.get("properties", {})
        required = schema.get("required", list(properties))
        return {name: example_from_schema(properties[name], root) for name in required}
    if kind == "array":
        return [example_from_schema(schema.get("items", {}), root) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "x" * schema.get("minLength", 0)
    if kind in ("integer", "number"):
        return max(0, schema.get("minimum", 0))
    if kind == "boolean":
        return False
    return None


def sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


_OBFUSCATION = string.ascii_letters + string.digits


def _obfuscation() -> str:
    """Padding the real API adds to every text delta, so a delta's size does not tell its token."""
    return "".join(random.choices(_OBFUSCATION, k=random.randint(1, 15)))


@dataclass
class Answer:
    """What a reply writes, independent of JSON or SSE delivery."""

    text: str
    annotations: list[dict[str, Any]]
    usage: Usage
    refusal: str | None = None


@dataclass(frozen=True)
class _Item:
    """One output item before the message: a reasoning item, or a web search call doing `action`."""

    id: str
    action: WebAction | None = None


class ResponseWriter:
    """Builds the Response object and stream events for one request, numbering events as it goes."""

    def __init__(
        self, request: RecordedRequest, answer: Answer, *, snapshot: str, actions: Sequence[WebAction] = (Search(),)
    ) -> None:
        self.request = request
        self.answer = answer
        self.snapshot = snapshot
        self.id = new_id("resp")
        self.created_at = int(time.time())
        self.sequence = 0
        reasoning = bool(request.body.get("reasoning"))
        searches = actions if request.has_web_search else ()
        self.items: list[_Item] = []
        for action in searches:
            if reasoning:
                self.items.append(_Item(new_id("rs")))
            self.items.append(_Item(new_id("ws"), action))
        if reasoning:
            self.items.append(_Item(new_id("rs")))
        self.message_id = new_id("msg")
        self.message_index = len(self.items)
        self.annotations_sent = 0

    def event(self, kind: str, **fields: Any) -> dict[str, Any]:
        payload = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return payload

    def response(
        self,
        status: str,
        output: list[dict[str, Any]],
        *,
        usage: bool = True,
        error: dict[str, Any] | None = None,
        incomplete_reason: str | None = None,
    ) -> dict[str, Any]:
        body = self.request.body
        reasoning = body.get("reasoning")
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "background": False,
            "completed_at": int(time.time()) if status == "completed" else None,
            "error": error,
            "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "max_tool_calls": None,
            "metadata": body.get("metadata") or {},
            "model": self.snapshot,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": body.get("previous_response_id"),
            "prompt_cache_key": body.get("prompt_cache_key"),
            "prompt_cache_retention": None,
            "frequency_penalty": 0.0,
            "presence_penalty": 0.0,
            "safety_identifier": body.get("safety_identifier"),
            "reasoning": {"effort": (reasoning or {}).get("effort"), "summary": None},
            "service_tier": "default",
            "store": True,
            "temperature": body.get("temperature", 1.0),
            "text": {"format": self.request.text_format or {"type": "text"}, "verbosity": "medium"},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "top_logprobs": 0,
            "top_p": body.get("top_p", 1.0),
            "truncation": "disabled",
            "usage": self.usage() if usage else None,
            "user": None,
        }

    def usage(self) -> dict[str, Any]:
        usage = self.answer.usage
        return {
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_tokens, "cache_write_tokens": 0},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
            "total_tokens": usage.input_tokens + usage.output_tokens,
        }

    def item(self, item: _Item, *, done: bool) -> dict[str, Any]:
        if item.action is None:
            return {"id": item.id, "type": "reasoning", "summary": []}
        if not done:  # the query, page or pattern arrives only with `output_item.done`
            return {"id": item.id, "type": "web_search_call", "status": "in_progress"}
        return {"id": item.id, "type": "web_search_call", "status": "completed", "action": self.action(item.action)}

    def action(self, action: WebAction) -> dict[str, Any]:
        if isinstance(action, OpenPage):
            return {"type": "open_page", "url": action.url}
        if isinstance(action, FindInPage):
            return {"type": "find_in_page", "pattern": action.pattern, "url": action.url}
        query = action.query or (self.request.input_text.splitlines()[-1][:200] if self.request.input_text else "")
        found: dict[str, Any] = {"type": "search", "queries": [query], "query": query}
        if self.request.wants_sources:
            urls = dict.fromkeys(_without_tracking(a["url"]) for a in self.answer.annotations)
            found["sources"] = [{"type": "url", "url": url} for url in urls] + [
                {"type": "api", "name": name} for name in action.api
            ]
        return found

    def text_part(self, text: str, annotations: list[dict[str, Any]]) -> dict[str, Any]:
        if self.answer.refusal is not None:
            return {"type": "refusal", "refusal": text}
        return {"type": "output_text", "text": text, "annotations": annotations, "logprobs": []}

    def message_item(self, status: str, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": self.message_id, "type": "message", "status": status, "role": "assistant", "content": content}

    def final_output(self) -> list[dict[str, Any]]:
        output = [self.item(item, done=True) for item in self.items]
        part = self.text_part(self.answer.text, self.answer.annotations)
        output.append(self.message_item("completed", [part]))
        return output

    def opening_events(self) -> Iterator[dict[str, Any]]:
        """Everything before the first text delta."""
        yield from self.created_events()
        for index, item in enumerate(self.items):
            yield self.event("response.output_item.added", output_index=index, item=self.item(item, done=False))
            if item.action is not None:
                ids = {"output_index": index, "item_id": item.id}
                yield self.event("response.web_search_call.in_progress", **ids)
                yield self.event("response.web_search_call.searching", **ids)
                yield self.event("response.web_search_call.completed", **ids)
            yield self.event("response.output_item.done", output_index=index, item=self.item(item, done=True))
        yield self.event(
            "response.output_item.added",
            output_index=self.message_index,
            item=self.message_item("in_progress", []),
        )
        yield self.event("response.content_part.added", **self.part_ids(), part=self.text_part("", []))

    def created_events(self) -> Iterator[dict[str, Any]]:
        yield self.event("response.created", response=self.response("in_progress", [], usage=False))
        yield self.event("response.in_progress", response=self.response("in_progress", [], usage=False))

    def part_ids(self) -> dict[str, Any]:
        return {"item_id": self.message_id, "output_index": self.message_index, "content_index": 0}

    def delta_event(self, delta: str) -> dict[str, Any]:
        if self.answer.refusal is not None:
            return self.event("response.refusal.delta", **self.part_ids(), delta=delta)
        return self.event(
            "response.output_text.delta", **self.part_ids(), delta=delta, logprobs=[], obfuscation=_obfuscation()
        )

    def annotation_event(self, index: int) -> dict[str, Any]:
        annotation = self.answer.annotations[index]
        self.annotations_sent = index + 1
        return self.event(
            "response.output_text.annotation.added", **self.part_ids(), annotation_index=index, annotation=annotation
        )

    def closing_events(self) -> Iterator[dict[str, Any]]:
        """Everything after the last text delta of a completed answer."""
        text, annotations = self.answer.text, self.answer.annotations
        if self.answer.refusal is not None:
            yield self.event("response.refusal.done", **self.part_ids(), refusal=text)
        else:
            yield self.event("response.output_text.done", **self.part_ids(), text=text, logprobs=[])
        yield self.event("response.content_part.done", **self.part_ids(), part=self.text_part(text, annotations))
        yield self.event(
            "response.output_item.done",
            output_index=self.message_index,
            item=self.message_item("completed", [self.text_part(text, annotations)]),
        )
        yield self.event("response.completed", response=self.response("completed", self.final_output()))

    def failure_events(self, interrupt: Interrupt, code: str) -> Iterator[dict[str, Any]]:
        """How a stream that is not dropped ends early: as the real API ends it."""
        if interrupt == "incomplete":
            yield self.event(
                "response.incomplete", response=self.response("incomplete", [], incomplete_reason="max_output_tokens")
            )
            return
        error = stream_error(code)
        if interrupt == "error":
            yield self.event("error", error=error)
        failed = {"code": error["code"], "message": error["message"]}
        yield self.event("response.failed", response=self.response("failed", [], usage=False, error=failed))
