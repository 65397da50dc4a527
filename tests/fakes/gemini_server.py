"""A fake Gemini API on 127.0.0.1 at its wire: `POST /v1beta/models/{model}:generateContent`,
`:streamGenerateContent?alt=sse` and `GET /v1beta/models` (paginated with `nextPageToken`).

As strict as the real API, from its reference and the google-genai SDK: the key travels in
`x-goog-api-key` (none: 403 PERMISSION_DENIED; one it does not know: the real **400** INVALID_ARGUMENT with
reason `API_KEY_INVALID`); a model it does not serve is a 404 NOT_FOUND; a field the API does not know, a
role other than `user`/`model`, a JSON schema without `responseMimeType: application/json`, or both schema
fields at once is a 400 INVALID_ARGUMENT; errors in Google's body shape
`{"error": {"code", "message", "status", "details"}}`. Replies are in the wire's camelCase
(`tests.fakes.gemini_wire`), grounding metadata included.

    gemini = FakeGemini().start()
    gemini.script(GeminiJson(QueryAnalysis(...)), when=wants_schema("QueryAnalysis"))
    gemini.script(GeminiText((Cited("Revenue rose 6%.", ((redirect, "reuters.com"),)),)), when=searches)
    gemini.script(resource_exhausted(per_day=True))

Each request takes the first scripted reply whose `when` matches (in the order scripted), using up one of
its `times` (None: unlimited); with none, a structured request gets the smallest JSON its schema allows
and a text request a short answer.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jsonschema
from pydantic import BaseModel

from tests.fakes.gemini_wire import (
    GeminiBlocked,
    GeminiError,
    GeminiJson,
    GeminiText,
    Reply,
    error_body,
    invalid_key,
    model_not_found,
    response_body,
    sse_events,
)
from tests.fakes.openai_wire import example_from_schema
from tests.fakes.page_server import _QuietServer

TEST_GEMINI_KEY = "placeholder-key-gemini"
MODELS = ("gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-2.5-pro", "gemini-3-flash-preview")
_REQUEST_FIELDS = {
    "contents",
    "systemInstruction",
    "tools",
    "toolConfig",
    "safetySettings",
    "generationConfig",
    "cachedContent",
}
_GENERATION_FIELDS = {
    "candidateCount", "frequencyPenalty", "logprobs", "maxOutputTokens", "mediaResolution", "presencePenalty",
    "responseJsonSchema", "responseLogprobs", "responseMimeType", "responseModalities", "responseSchema", "seed",
    "speechConfig", "stopSequences", "temperature", "thinkingConfig", "topK", "topP",
}  # fmt: skip
_TOOL_FIELDS = {"codeExecution", "functionDeclarations", "googleSearch", "googleSearchRetrieval", "urlContext"}


@dataclass
class GeminiRequest:
    """One request as the fake saw it (the key left out)."""

    method: str
    path: str
    model: str | None
    stream: bool
    body: dict[str, Any]

    @property
    def generation(self) -> dict[str, Any]:
        return self.body.get("generationConfig") or {}

    @property
    def schema(self) -> dict[str, Any] | None:
        return self.generation.get("responseJsonSchema") or self.generation.get("responseSchema")

    @property
    def searches(self) -> bool:
        return any("googleSearch" in tool for tool in self.body.get("tools") or ())

    @property
    def text(self) -> str:
        """The system instruction's and the contents' text, joined: what predicates match against."""
        contents = [self.body.get("systemInstruction") or {}, *(self.body.get("contents") or ())]
        return "\n".join(part.get("text", "") for content in contents for part in content.get("parts") or ())


Predicate = Callable[[GeminiRequest], bool]


def wants_schema(title: str) -> Predicate:
    return lambda request: (request.schema or {}).get("title") == title


def searches(request: GeminiRequest) -> bool:
    return request.searches


def writes_without_search(request: GeminiRequest) -> bool:
    return request.schema is None and not request.searches and request.model is not None


@dataclass
class _Script:
    reply: Reply
    when: Predicate | None
    times: int | None


class FakeGemini:
    def __init__(self) -> None:
        self.keys = {TEST_GEMINI_KEY}
        self.models = set(MODELS)
        self.page_size = 2  # the most models a page lists, whatever `pageSize` asks: pagination is exercised
        self.requests: list[GeminiRequest] = []
        self.errors: list[str] = []  # a script the fake could not honour
        self._scripts: list[_Script] = []
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-gemini", daemon=True
        )

    @property
    def base_url(self) -> str:
        """What GEMINI_BASE_URL holds: the host alone."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeGemini:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeGemini:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def script(self, reply: Reply, *, when: Predicate | None = None, times: int | None = 1) -> None:
        with self._lock:
            self._scripts.append(_Script(reply, when, times))

    def _next_reply(self, request: GeminiRequest) -> Reply | None:
        with self._lock:
            for script in self._scripts:
                if script.when is None or script.when(request):
                    if script.times is not None:
                        script.times -= 1
                        if script.times == 0:
                            self._scripts.remove(script)
                    return script.reply
        return None

    # --- answering ---------------------------------------------------------------------------------------

    def _answer(self, method: str, target: str, key: str | None, raw: bytes) -> tuple[int, str, bytes]:
        split = urlsplit(target)
        if key is None:
            return _error(
                403,
                "PERMISSION_DENIED",
                "Method doesn't allow unregistered callers (callers without established identity). Please use "
                "API Key or other form of API consumer identity to call this API.",
            )
        if key not in self.keys:
            return _json(invalid_key())
        if method == "GET" and split.path == "/v1beta/models":
            return self._list_models(parse_qs(split.query))
        model, _, action = split.path.removeprefix("/v1beta/models/").partition(":")
        if (
            method != "POST"
            or not split.path.startswith("/v1beta/models/")
            or action
            not in (
                "generateContent",
                "streamGenerateContent",
            )
        ):
            return _error(404, "NOT_FOUND", f"Path {split.path} not found.")
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return _error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        request = GeminiRequest(method, split.path, model, action == "streamGenerateContent", body)
        with self._lock:
            self.requests.append(request)
        if model not in self.models:
            return _json(model_not_found(model))
        refused = _refusal(body)
        if refused:
            return _error(400, "INVALID_ARGUMENT", refused)
        reply = self._next_reply(request) or _default(request)
        sse = parse_qs(split.query).get("alt") == ["sse"]
        return self._reply(request, reply, sse=sse)

    def _reply(self, request: GeminiRequest, reply: Reply, *, sse: bool) -> tuple[int, str, bytes]:
        if isinstance(reply, GeminiError):
            return _json(reply)
        if isinstance(reply, GeminiBlocked):
            blocked = {"promptFeedback": {"blockReason": reply.reason}, "usageMetadata": {"promptTokenCount": 8}}
            if request.stream and sse:
                return 200, "text/event-stream", b"data: " + json.dumps(blocked).encode() + b"\r\n\r\n"
            return 200, "application/json", json.dumps(blocked).encode()
        if isinstance(reply, GeminiJson):
            value = reply.value.model_dump(mode="json") if isinstance(reply.value, BaseModel) else reply.value
            if request.schema is not None:
                try:
                    jsonschema.validate(value, request.schema)
                except jsonschema.ValidationError as exc:
                    self.errors.append(f"scripted JSON does not match the request's schema: {exc.message}")
            body = response_body(request.model or "", json.dumps(value), usage=reply.usage, finish=reply.finish_reason)
            return 200, "application/json", json.dumps(body).encode()
        events = sse_events(request.model or "", reply, grounded=request.searches)
        if reply.cut_after is not None:
            events = events[: reply.cut_after]
        if request.stream and sse:
            return 200, "text/event-stream", b"".join(events)
        chunks = [json.loads(event.removeprefix(b"data: ")) for event in events]
        if request.stream:  # without alt=sse the API streams one JSON array
            return 200, "application/json", json.dumps(chunks).encode()
        return 200, "application/json", json.dumps(_joined(chunks)).encode()

    def _list_models(self, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        names = sorted(self.models)
        start = int(query.get("pageToken", ["0"])[0] or 0)
        size = min(int(query.get("pageSize", ["50"])[0]), self.page_size)
        page: dict[str, Any] = {"models": [_model_entry(name) for name in names[start : start + size]]}
        if start + size < len(names):
            page["nextPageToken"] = str(start + size)
        return 200, "application/json", json.dumps(page).encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self, method: str) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, content_type, body = server._answer(method, self.path, self.headers.get("x-goog-api-key"), raw)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        return Handler


def _refusal(body: dict[str, Any]) -> str | None:
    """The API's 400 message for a request it refuses, or None."""
    unknown = [f for f in body if f not in _REQUEST_FIELDS]
    unknown += [f"generation_config.{f}" for f in body.get("generationConfig") or {} if f not in _GENERATION_FIELDS]
    unknown += [f"tools.{f}" for tool in body.get("tools") or () for f in tool if f not in _TOOL_FIELDS]
    if unknown:
        return f'Invalid JSON payload received. Unknown name "{unknown[0]}": Cannot find field.'
    roles = {content.get("role", "user") for content in body.get("contents") or ()}
    if not body.get("contents") or not roles <= {"user", "model"}:
        return "Please use a valid role: user, model." if body.get("contents") else "* contents: must not be empty"
    generation = body.get("generationConfig") or {}
    if "responseJsonSchema" in generation and "responseSchema" in generation:
        return "responseSchema and responseJsonSchema cannot both be set."
    if ("responseJsonSchema" in generation or "responseSchema" in generation) and generation.get(
        "responseMimeType"
    ) != "application/json":
        return "JSON schema output requires responseMimeType application/json."
    return None


def _default(request: GeminiRequest) -> Reply:
    if request.schema is not None:
        return GeminiJson(example_from_schema(request.schema))
    return GeminiText()


def _joined(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """A non-streamed answer: the stream's responses as one."""
    last = chunks[-1]
    text = "".join(part["text"] for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"])
    last["candidates"][0]["content"]["parts"] = [{"text": text}]
    return last


def _model_entry(name: str) -> dict[str, Any]:
    return {
        "name": f"models/{name}",
        "version": "001",
        "displayName": name.replace("-", " ").title(),
        "description": f"The {name} model.",
        "inputTokenLimit": 1048576,
        "outputTokenLimit": 65536,
        "supportedGenerationMethods": ["generateContent", "countTokens", "createCachedContent", "batchGenerateContent"],
        "temperature": 1,
        "topP": 0.95,
        "topK": 64,
        "maxTemperature": 2,
        "thinking": True,
    }


def _json(error: GeminiError) -> tuple[int, str, bytes]:
    return error.status, "application/json; charset=UTF-8", json.dumps(error.body, indent=2).encode()


def _error(code: int, status: str, message: str) -> tuple[int, str, bytes]:
    return _json(GeminiError(code, error_body(code, status, message)))
