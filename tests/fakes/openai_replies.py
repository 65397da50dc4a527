"""What a test scripts the fake OpenAI server to answer (`tests.fakes.openai_server`), and the error bodies
it sends, worded and laid out as the real API's (checked against the recordings in `../shared/recorded/openai`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 120
    output_tokens: int = 80
    reasoning_tokens: int = 0
    cached_tokens: int = 0


@dataclass(frozen=True)
class Sentence:
    """A sentence of a cited answer; each `(url, title)` becomes an inline link and an annotation."""

    text: str
    cites: Sequence[tuple[str, str]] = ()


DEFAULT_SENTENCES: tuple[Sentence, ...] = (
    Sentence(
        "This is the fake OpenAI server's default answer.",
        cites=[("https://www.example.com/markets/overview", "Markets overview - Example News")],
    ),
    Sentence(
        "Figures quoted here are placeholders, not market data.",
        cites=[("https://www.example.org/data/placeholder", "Placeholder data - Example Data")],
    ),
)


# --- what the hosted web search does: one `web_search_call` item each ---------------------------------------


@dataclass(frozen=True)
class Search:
    """A `search` action. `query` defaults to the request's last line; `api` names sources that have no URL
    (`{"type": "api", "name": ...}`, as a weather lookup's), listed only when the request asks for sources."""

    query: str | None = None
    api: Sequence[str] = ()


@dataclass(frozen=True)
class OpenPage:
    url: str


@dataclass(frozen=True)
class FindInPage:
    pattern: str
    url: str


WebAction = Search | OpenPage | FindInPage

Interrupt = Literal["drop", "failed", "incomplete", "error"]


@dataclass(frozen=True)
class TextReply:
    """An answer, web-searched (one `web_search_call` item per action) when the request carries a
    `web_search` tool; with reasoning asked, a reasoning item comes before each search and the message.

    `interrupt` ends a stream early, after `after_deltas` text deltas: "drop" closes the connection,
    "incomplete" sends `response.incomplete`, "failed" sends `response.failed` with `error_code`, "error"
    sends what the real API sends: an `error` event with its fields nested under `error`, then
    `response.failed` with the code and `usage: null` (with `after_deltas=0`, right after
    `response.in_progress`, as for an account without credit). A request that is not streamed gets the
    HTTP error the API answers for that code instead (`ErrorReply.for_code`).

    `annotation_lag` sends each annotation that many deltas after the one that completes its link.
    `usage=None` estimates tokens from the request and the text.
    """

    sentences: Sequence[Sentence | str] = DEFAULT_SENTENCES
    usage: Usage | None = None
    chunk_chars: int = 6
    first_byte_delay: float = 0.0
    delta_delay: float = 0.0
    interrupt: Interrupt | None = None
    after_deltas: int = 0
    error_code: str = "server_error"
    annotation_lag: int = 0
    actions: Sequence[WebAction] = (Search(),)


@dataclass(frozen=True)
class JsonReply:
    """A structured-output answer: `data` as JSON, or `raw` verbatim (e.g. deliberately invalid JSON).

    With neither, the smallest JSON the request's schema allows. `data` is checked against the schema
    the caller sent (a mismatch lands in `FakeOpenAIServer.errors`) unless `validate=False`.
    """

    data: Mapping[str, Any] | BaseModel | None = None
    raw: str | None = None
    usage: Usage | None = None
    first_byte_delay: float = 0.0
    validate: bool = True


# The real API's wording where a recording shows it; the rest is marked as the fake's.
QUOTA_MESSAGE = (
    "You exceeded your current quota, please check your plan and billing details. For more information on this "
    "error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."
)
# code → (status when not streamed, type, message)
_ERRORS_BY_CODE: dict[str, tuple[int, str, str]] = {
    "insufficient_quota": (429, "insufficient_quota", QUOTA_MESSAGE),
    "rate_limit_exceeded": (429, "requests", "Rate limit reached (fake)."),
    "invalid_api_key": (401, "invalid_request_error", "Incorrect API key provided (fake)."),
    "server_error": (500, "server_error", "The server had an error while processing your request (fake)."),
}
_ERRORS_BY_STATUS: dict[int, tuple[str, str, str | None]] = {
    400: ("invalid_request_error", "Invalid request (fake).", None),
    401: ("invalid_request_error", "Incorrect API key provided (fake).", "invalid_api_key"),
    404: ("invalid_request_error", "Not found (fake).", None),
    429: ("requests", "Rate limit reached (fake).", "rate_limit_exceeded"),
    500: ("server_error", "The server had an error while processing your request (fake).", None),
    503: ("server_error", "The engine is currently overloaded (fake).", None),
}


def error_body(message: str, *, type: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    """OpenAI's error body, its fields in the order the API sends them."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def json_bytes(payload: Any) -> bytes:
    """JSON as the API writes it: pretty-printed, two spaces."""
    return json.dumps(payload, indent=2).encode()


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error with OpenAI's error body.

    `retry_after_ms` is sent as `retry-after-ms`; the default of 1 ms makes the SDK retry at once instead
    of backing off for seconds (it ignores 0). `None` leaves the header out.
    """

    status: int
    message: str | None = None
    type: str | None = None
    code: str | None = None
    retry_after_ms: int | None = 1
    first_byte_delay: float = 0.0

    @classmethod
    def for_code(cls, code: str) -> ErrorReply:
        """The error the API answers a call that is not streamed with, for a failure of this code."""
        status, kind, message = _ERRORS_BY_CODE.get(code, (500, "server_error", f"{code} (fake)."))
        return cls(status, message=message, type=kind, code=code)

    def body(self) -> dict[str, Any]:
        default_type, default_message, default_code = _ERRORS_BY_STATUS.get(
            self.status, ("server_error", f"HTTP {self.status} (fake).", None)
        )
        if self.code in _ERRORS_BY_CODE:
            _, default_type, default_message = _ERRORS_BY_CODE[self.code]
        return error_body(
            self.message or default_message, type=self.type or default_type, code=self.code or default_code
        )


def stream_error(code: str) -> dict[str, Any]:
    """The `error` object of an in-stream failure: an `error` event's (`type` included) and, without
    `type` and `param`, `response.failed`'s `response.error`."""
    _, kind, message = _ERRORS_BY_CODE.get(code, (500, "server_error", f"{code} (fake)."))
    return {"type": kind, "code": code, "message": message, "param": None}


# An account without credit: a streamed call answers 200, then fails inside the stream; any other call is a 429.
NO_CREDIT: Final = TextReply(interrupt="error", error_code="insufficient_quota")


@dataclass(frozen=True)
class RefusalReply:
    """The model declines: a `refusal` content part instead of text (`response.refusal.*` when streaming)."""

    refusal: str = "I'm sorry, but I can't help with that."
    usage: Usage | None = None
    first_byte_delay: float = 0.0


@dataclass(frozen=True)
class RawReply:
    """A reply served byte for byte, as recorded from the real API (`tests.fakes.openai_recorded`)."""

    status: int
    body: bytes
    content_type: str
    content_encoding: str | None = None
    first_byte_delay: float = 0.0


Reply = TextReply | JsonReply | ErrorReply | RefusalReply | RawReply
