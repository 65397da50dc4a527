"""The real Responses API's replies recorded in `../shared/recorded/openai/` (its index.json says what each is),
as replies the fake OpenAI server serves byte for byte, and read back as the events they carry.

Nothing is copied into the repository: each call reads the recording beside it, and the calling test skips
(with `tests.recorded`'s reason) where the folder is absent.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from tests.fakes.openai_replies import RawReply
from tests.recorded import recorded_json, recorded_path


def recorded_entry(name: str) -> dict[str, Any]:
    """The index entry of one recording: how it is served, its model, what it covers."""
    entries = {entry["name"]: entry for entry in recorded_json("openai", "index.json")}
    if name not in entries:
        pytest.skip(f"{name} is not among the recorded OpenAI replies")
    return entries[name]


def recorded_reply(name: str) -> RawReply:
    """The recording as the API served it: its status, content type and encoding, its bytes (gzip included)."""
    entry = recorded_entry(name)
    return RawReply(
        status=entry["status"],
        body=recorded_path("openai", entry["file"]).read_bytes(),
        content_type=entry["content_type"],
        content_encoding=entry["content_encoding"],
    )


def recorded_body(name: str) -> bytes:
    """The body as a client reads it (decompressed)."""
    reply = recorded_reply(name)
    return gzip.decompress(reply.body) if reply.content_encoding == "gzip" else reply.body


def recorded_events(name: str) -> list[dict[str, Any]]:
    """The JSON of each server-sent event of a recorded stream, in order."""
    events = []
    for frame in recorded_body(name).decode().split("\n\n"):
        data = [line[5:].lstrip() for line in frame.splitlines() if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events
