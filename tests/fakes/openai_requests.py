"""What a test asserts on: each request the fake OpenAI server saw, and predicates that pick requests out
(for scripting replies with `when=` and for assertions)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tests.fakes.openai_replies import Reply


@dataclass
class RecordedRequest:
    """One request as the fake saw it. `headers` has the Authorization value redacted."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    started_at: float
    ended_at: float | None = None
    status: int | None = None
    reply: Reply | None = None
    client_closed: bool = False  # the client went away before the reply was complete (seen while pausing)

    @property
    def model(self) -> str | None:
        return self.body.get("model")

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def tool_types(self) -> list[str]:
        return [tool.get("type", "") for tool in self.body.get("tools") or []]

    @property
    def has_web_search(self) -> bool:
        return any(t.startswith("web_search") for t in self.tool_types)

    @property
    def wants_sources(self) -> bool:
        """Whether the search's sources were asked for: the API lists them only then."""
        return "web_search_call.action.sources" in (self.body.get("include") or [])

    @property
    def text_format(self) -> dict[str, Any] | None:
        return (self.body.get("text") or {}).get("format")

    @property
    def is_structured(self) -> bool:
        return (self.text_format or {}).get("type") == "json_schema"

    @property
    def input_text(self) -> str:
        """The input messages' text, joined: what predicates and assertions match against."""
        return "\n".join(_texts(self.body.get("input")))

    @property
    def instructions(self) -> str:
        return self.body.get("instructions") or ""

    def mark_ended(self) -> None:
        self.ended_at = time.monotonic()

    def overlaps(self, other: RecordedRequest) -> bool:
        end = self.ended_at if self.ended_at is not None else float("inf")
        other_end = other.ended_at if other.ended_at is not None else float("inf")
        return self.started_at < other_end and other.started_at < end


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        if isinstance(value.get("text"), str):
            yield value["text"]
        yield from _texts(value.get("content"))


Predicate = Callable[[RecordedRequest], bool]


def model_is(*models: str) -> Predicate:
    return lambda request: request.model in models


def input_contains(text: str) -> Predicate:
    return lambda request: text.lower() in request.input_text.lower()


def has_web_search(request: RecordedRequest) -> bool:
    return request.has_web_search


def wants_structured_output(request: RecordedRequest) -> bool:
    return request.is_structured
