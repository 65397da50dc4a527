"""A small SSE reader for tests: frames as (id, type, data) until the run's terminal event."""

from __future__ import annotations

import json
from dataclasses import dataclass

import httpx2

TERMINAL = {"done", "error"}
CONTROL = {"stream-open", "keep-alive"}


@dataclass
class SseEvent:
    id: str | None
    type: str
    data: object


def parse_frames(text: str) -> list[SseEvent]:
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, list[str]] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields.setdefault(name, []).append(value[1:] if value.startswith(" ") else value)
        if "event" not in fields:
            continue
        raw = "\n".join(fields.get("data", []))
        events.append(SseEvent(fields.get("id", [None])[0], fields["event"][0], json.loads(raw) if raw else None))
    return events


async def read_events(
    client: httpx2.AsyncClient,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    stop_after: int | None = None,
) -> list[SseEvent]:
    """Read the stream until a terminal event (or `stop_after` run events), skipping control frames."""
    received: list[SseEvent] = []
    buffer = ""
    async with client.stream("GET", url, headers=headers or {}) as response:
        assert response.status_code == 200, response.status_code
        assert response.headers["content-type"].startswith("text/event-stream")
        async for chunk in response.aiter_text():
            buffer += chunk
            complete, _, buffer = buffer.rpartition("\n\n")
            if not complete:
                continue
            for event in parse_frames(complete):
                if event.type in CONTROL:
                    continue
                received.append(event)
                if event.type in TERMINAL or (stop_after is not None and len(received) >= stop_after):
                    return received
    return received
