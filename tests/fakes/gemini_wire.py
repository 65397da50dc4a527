"""What the fake Gemini API sends: replies to script, and their bodies in the real wire's camelCase shape.

From the API reference and the google-genai SDK's types (`GenerateContentResponse`, `GroundingMetadata`):
a response has `candidates` (`content.parts[].text`, role `model`, `finishReason`, `index`,
`groundingMetadata`), `usageMetadata` (`promptTokenCount`, `candidatesTokenCount`, `totalTokenCount`,
`thoughtsTokenCount`, `cachedContentTokenCount`, `toolUsePromptTokenCount`, `promptTokensDetails`),
`modelVersion` and `responseId`. A streamed answer is one such response per SSE event (`data: {...}`
then a blank line), each with the running usage; the last has `finishReason` and the grounding.

Grounding, as the API gives it: `groundingChunks[].web` is `{"uri": <a grounding-api-redirect address>,
"title": <the page's domain>}`; `groundingSupports[].segment` has `startIndex` (left out when 0, as
proto3 JSON leaves out zeros), `endIndex` (both in bytes of UTF-8) and `text`; `webSearchQueries` and a
`searchEntryPoint` with its rendered HTML.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from tests.fakes.page_server import FakePageServer

REDIRECT_PATH = "/grounding-api-redirect/"


@dataclass(frozen=True)
class Cited:
    """A sentence the search grounds in pages: each `(redirect uri, domain)`."""

    text: str
    pages: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Usage:
    prompt: int = 120
    candidates: int = 60
    thoughts: int = 0
    cached: int = 0
    tool_use: int = 0


@dataclass(frozen=True)
class GeminiText:
    """A text answer; with the search tool, `Cited` sentences become grounding supports."""

    sentences: tuple[str | Cited, ...] = ("Apple reported revenue of $391.04 billion for fiscal 2024.",)
    queries: tuple[str, ...] = ("apple fiscal 2024 revenue",)
    finish_reason: str = "STOP"
    usage: Usage = field(default_factory=Usage)
    cut_after: int | None = None  # streamed: the connection closes after this many chunks


@dataclass(frozen=True)
class GeminiJson:
    value: BaseModel | dict[str, Any]
    finish_reason: str = "STOP"
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class GeminiBlocked:
    """The prompt refused by the safety filters: HTTP 200, `promptFeedback.blockReason`, no candidates."""

    reason: str = "SAFETY"


@dataclass(frozen=True)
class GeminiError:
    status: int
    body: dict[str, Any]


Reply = GeminiText | GeminiJson | GeminiBlocked | GeminiError


def error_body(code: int, status: str, message: str, *details: dict[str, Any]) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return {"error": error}


def invalid_key() -> GeminiError:
    """A key the API does not know: a 400, not a 401."""
    message = "API key not valid. Please pass a valid API key."
    return GeminiError(
        400,
        error_body(
            400,
            "INVALID_ARGUMENT",
            message,
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            },
            {"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US", "message": message},
        ),
    )


def resource_exhausted(*, per_day: bool, model: str = "gemini-2.5-flash") -> GeminiError:
    """A 429: the message is the same for a per-minute rate limit and a used-up daily quota; only the
    `QuotaFailure`'s `quotaId` tells them apart."""
    period = "PerDay" if per_day else "PerMinute"
    return GeminiError(
        429,
        error_body(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details. For more information "
            "on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current "
            "usage, head to: https://ai.dev/rate-limit. \n* Quota exceeded for metric: "
            f"generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 20, model: {model}\n"
            "Please retry in 36.4s.",
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                        "quotaId": f"GenerateRequests{period}PerProjectPerModel-FreeTier",
                        "quotaDimensions": {"location": "global", "model": model},
                        "quotaValue": "20",
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "36s"},
        ),
    )


def overloaded() -> GeminiError:
    return GeminiError(503, error_body(503, "UNAVAILABLE", "The model is overloaded. Please try again later."))


def model_not_found(model: str) -> GeminiError:
    return GeminiError(
        404,
        error_body(
            404,
            "NOT_FOUND",
            f"models/{model} is not found for API version v1beta, or is not supported for generateContent. "
            "Call ListModels to see the list of available models and their supported methods.",
        ),
    )


def grounding_redirect(pages: FakePageServer, target: str) -> str:
    """A grounding redirect address on the page server that leads to `target`, as the real ones lead to
    the page (`https://vertexaisearch.cloud.google.com/grounding-api-redirect/<token>`)."""
    return pages.add(f"{REDIRECT_PATH}{uuid.uuid4().hex}", redirect_to=target)


def usage_body(usage: Usage, *, output: int | None = None) -> dict[str, Any]:
    candidates = usage.candidates if output is None else output
    body: dict[str, Any] = {
        "promptTokenCount": usage.prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": usage.prompt + candidates + usage.thoughts + usage.tool_use,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": usage.prompt}],
    }
    for key, value in (
        ("thoughtsTokenCount", usage.thoughts),
        ("cachedContentTokenCount", usage.cached),
        ("toolUsePromptTokenCount", usage.tool_use),
    ):
        if value:
            body[key] = value
    return body


def response_body(
    model: str, text: str | None, *, usage: Usage, finish: str | None = None, output: int | None = None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": [{"text": text}] if text else [], "role": "model"}}
    if finish is not None:
        candidate["finishReason"] = finish
    candidate["index"] = 0
    return {
        "candidates": [candidate],
        "usageMetadata": usage_body(usage, output=output),
        "modelVersion": model,
        "responseId": uuid.uuid4().hex[:22],
    }


def grounding_metadata(reply: GeminiText) -> tuple[str, dict[str, Any]]:
    """The answer's text (sentences joined by a space) and its grounding metadata."""
    chunks: dict[tuple[str, str], int] = {}
    supports: list[dict[str, Any]] = []
    text, offset = "", 0
    for sentence in reply.sentences:
        plain = sentence.text if isinstance(sentence, Cited) else sentence
        if text:
            text, offset = text + " ", offset + 1
        start, end = offset, offset + len(plain.encode())
        text, offset = text + plain, end
        if isinstance(sentence, Cited):
            indices = [chunks.setdefault(page, len(chunks)) for page in sentence.pages]
            segment: dict[str, Any] = {"endIndex": end, "text": plain}
            if start:
                segment = {"startIndex": start, **segment}
            supports.append({"segment": segment, "groundingChunkIndices": indices})
    metadata = {
        "searchEntryPoint": {"renderedContent": '<style>.container{}</style><div class="container"></div>'},
        "groundingChunks": [{"web": {"uri": uri, "title": title}} for uri, title in chunks],
        "groundingSupports": supports,
        "webSearchQueries": list(reply.queries),
    }
    return text, metadata


def sse_events(model: str, reply: GeminiText, *, grounded: bool) -> list[bytes]:
    """The streamed answer: a response per piece of text (about eight words), the last with the finish
    reason and, with the search tool, the grounding metadata."""
    text, metadata = grounding_metadata(reply)
    words = text.split(" ")
    pieces = [" ".join(words[i : i + 8]) + (" " if i + 8 < len(words) else "") for i in range(0, len(words), 8)]
    events = []
    for n, piece in enumerate(pieces, start=1):
        last = n == len(pieces)
        output = reply.usage.candidates * n // len(pieces)
        body = response_body(
            model, piece, usage=reply.usage, finish=reply.finish_reason if last else None, output=output
        )
        if last and grounded:
            body["candidates"][0]["groundingMetadata"] = metadata
        events.append(b"data: " + json.dumps(body).encode() + b"\r\n\r\n")
    return events
