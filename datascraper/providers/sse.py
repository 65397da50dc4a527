"""The JSON objects of a provider's server-sent event stream, read from the raw response's lines.

Both the Responses API and the Messages API stream `event:`/`data:` frames whose data is a JSON object
repeating the event's `type`. The providers read those few fields from the JSON: the SDKs' own streams
build a typed event model for every frame, most of them text deltas, and that was the largest part of a
research run's CPU.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Protocol


class MalformedStreamEvent(ValueError):
    """An SSE frame of the answer stream whose data is not a JSON object."""


class StreamedLines(Protocol):
    """An SDK's raw streamed response (the openai and anthropic SDKs' `AsyncAPIResponse`)."""

    def iter_lines(self) -> AsyncIterator[str]: ...


async def stream_event_payloads(response: StreamedLines) -> AsyncIterator[dict[str, Any]]:
    """The JSON object of each server-sent event, in order; `[DONE]` ends the stream."""
    data: list[str] = []
    async for line in response.iter_lines():
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif not line and data:
            payload, data = "\n".join(data), []
            if payload.startswith("[DONE]"):
                return
            try:
                event = json.loads(payload)
            except ValueError as exc:
                raise MalformedStreamEvent("An answer stream event is not JSON.") from exc
            if not isinstance(event, dict):
                raise MalformedStreamEvent("An answer stream event is not a JSON object.")
            yield event
