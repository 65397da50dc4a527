"""A fake OpenAI Responses API on 127.0.0.1, speaking the real wire format (JSON and SSE).

A real HTTP server rather than a mock transport: the openai SDK (httpx2) is exercised end to end, retries,
timeouts and broken connections included, and the running app can be pointed at it through
`OPENAI_BASE_URL` for black-box tests and benchmarks.

Scripting, in a test::

    fake.script(TextReply([Sentence("Revenue rose 6%.", cites=[("https://www.reuters.com/a", "Reuters")])]))
    fake.script(JsonReply({"needs_decomposition": False, "sub_questions": []}), when=wants_structured_output)
    fake.script(ErrorReply(429), times=3)
    fake.script(TextReply(interrupt="drop", after_deltas=4), when=model_is("gpt-5.4"))
    fake.script(RefusalReply("I can't help with that."))

As strict as the real API (`tests.fakes.openai_models`): a model past its shutdown date (as of `fake.today`)
or unknown answers 404 `model_not_found` and is absent from `GET /v1/models`; an unknown parameter, an
option the model does not take, or a strict schema the API would refuse answers 400; a request without a
key, or with one in `fake.revoked_keys`, answers 401. Refusals come back before any script is used.

Each request takes the first scripted reply whose `when` matches (in the order scripted) and uses up one
of its `times` (`None`: unlimited); with nothing matching it gets the default reply: a short cited answer,
or for a structured-output request the smallest JSON its schema allows.

Outside pytest: ``with FakeOpenAIServer() as fake: os.environ["OPENAI_BASE_URL"] = fake.base_url``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal
from urllib.parse import urlsplit

import jsonschema
from pydantic import BaseModel

from tests.asgi_server import ThreadedAsgiServer
from tests.fakes.openai_models import CATALOGUE, FakeModel, Refused, check_responses_request, live_model

# --- replies: what a test scripts -------------------------------------------------------------------------


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

Interrupt = Literal["drop", "failed", "incomplete", "error"]


@dataclass(frozen=True)
class TextReply:
    """An answer, web-searched when the request carries a `web_search` tool.

    `interrupt` ends a stream early, after `after_deltas` text deltas: "drop" closes the connection,
    "failed" / "incomplete" send `response.failed` / `response.incomplete`, "error" sends an `error`
    event. A non-streaming request that would be interrupted gets an HTTP 500 instead.
    `usage=None` estimates tokens from the request and the text.
    """

    sentences: Sequence[Sentence | str] = DEFAULT_SENTENCES
    usage: Usage | None = None
    chunk_chars: int = 6
    first_byte_delay: float = 0.0
    delta_delay: float = 0.0
    interrupt: Interrupt | None = None
    after_deltas: int = 0


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


_ERROR_DEFAULTS: dict[int, tuple[str, str, str | None]] = {
    400: ("invalid_request_error", "Invalid request (fake).", None),
    401: ("invalid_request_error", "Incorrect API key provided (fake).", "invalid_api_key"),
    404: ("invalid_request_error", "Not found (fake).", None),
    429: ("requests", "Rate limit reached (fake).", "rate_limit_exceeded"),
    500: ("server_error", "The server had an error while processing your request (fake).", None),
    503: ("server_error", "The engine is currently overloaded (fake).", None),
}


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

    def body(self) -> dict[str, Any]:
        default_type, default_message, default_code = _ERROR_DEFAULTS.get(
            self.status, ("server_error", f"HTTP {self.status} (fake).", None)
        )
        return {
            "error": {
                "message": self.message or default_message,
                "type": self.type or default_type,
                "param": None,
                "code": self.code or default_code,
            }
        }


@dataclass(frozen=True)
class RefusalReply:
    """The model declines: a `refusal` content part instead of text (`response.refusal.*` when streaming)."""

    refusal: str = "I'm sorry, but I can't help with that."
    usage: Usage | None = None
    first_byte_delay: float = 0.0


Reply = TextReply | JsonReply | ErrorReply | RefusalReply


# --- requests: what a test asserts on ---------------------------------------------------------------------


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


# --- the wire format --------------------------------------------------------------------------------------


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _with_tracking(url: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}utm_source=openai"


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


@dataclass
class _Answer:
    """What a reply writes, independent of JSON or SSE delivery."""

    text: str
    annotations: list[dict[str, Any]]
    usage: Usage
    refusal: str | None = None


class _ResponseWriter:
    """Builds the Response object and stream events for one request, numbering events as it goes."""

    def __init__(self, request: RecordedRequest, answer: _Answer) -> None:
        self.request = request
        self.answer = answer
        self.id = _new_id("resp")
        self.created_at = int(time.time())
        self.sequence = 0
        body = request.body
        self.reasoning_id = _new_id("rs") if body.get("reasoning") else None
        self.search_id = _new_id("ws") if request.has_web_search else None
        self.message_id = _new_id("msg")
        self.message_index = int(self.reasoning_id is not None) + int(self.search_id is not None)

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
            "model": body.get("model", ""),
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": body.get("previous_response_id"),
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

    def reasoning_item(self) -> dict[str, Any]:
        return {"id": self.reasoning_id, "type": "reasoning", "summary": []}

    def search_item(self, status: str) -> dict[str, Any]:
        query = self.request.input_text.splitlines()[-1][:200] if self.request.input_text else ""
        action: dict[str, Any] = {"type": "search", "query": query}
        if status == "completed":
            urls = dict.fromkeys(a["url"] for a in self.answer.annotations)
            action["sources"] = [{"type": "url", "url": url} for url in urls]
        return {"id": self.search_id, "type": "web_search_call", "status": status, "action": action}

    def text_part(self, text: str, annotations: list[dict[str, Any]]) -> dict[str, Any]:
        if self.answer.refusal is not None:
            return {"type": "refusal", "refusal": text}
        return {"type": "output_text", "text": text, "annotations": annotations, "logprobs": []}

    def message_item(self, status: str, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": self.message_id, "type": "message", "status": status, "role": "assistant", "content": content}

    def final_output(self) -> list[dict[str, Any]]:
        output: list[dict[str, Any]] = []
        if self.reasoning_id:
            output.append(self.reasoning_item())
        if self.search_id:
            output.append(self.search_item("completed"))
        part = self.text_part(self.answer.text, self.answer.annotations)
        output.append(self.message_item("completed", [part]))
        return output

    def opening_events(self) -> Iterator[dict[str, Any]]:
        """Everything before the first text delta."""
        yield self.event("response.created", response=self.response("in_progress", [], usage=False))
        yield self.event("response.in_progress", response=self.response("in_progress", [], usage=False))
        index = 0
        if self.reasoning_id:
            yield self.event("response.output_item.added", output_index=index, item=self.reasoning_item())
            yield self.event("response.output_item.done", output_index=index, item=self.reasoning_item())
            index += 1
        if self.search_id:
            ids = {"output_index": index, "item_id": self.search_id}
            yield self.event("response.output_item.added", output_index=index, item=self.search_item("in_progress"))
            yield self.event("response.web_search_call.in_progress", **ids)
            yield self.event("response.web_search_call.searching", **ids)
            yield self.event("response.web_search_call.completed", **ids)
            yield self.event("response.output_item.done", output_index=index, item=self.search_item("completed"))
        yield self.event(
            "response.output_item.added",
            output_index=self.message_index,
            item=self.message_item("in_progress", []),
        )
        yield self.event("response.content_part.added", **self.part_ids(), part=self.text_part("", []))

    def part_ids(self) -> dict[str, Any]:
        return {"item_id": self.message_id, "output_index": self.message_index, "content_index": 0}

    def delta_event(self, delta: str) -> dict[str, Any]:
        if self.answer.refusal is not None:
            return self.event("response.refusal.delta", **self.part_ids(), delta=delta)
        return self.event("response.output_text.delta", **self.part_ids(), delta=delta, logprobs=[])

    def annotation_event(self, index: int) -> dict[str, Any]:
        annotation = self.answer.annotations[index]
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

    def failure_event(self, interrupt: Interrupt) -> dict[str, Any]:
        if interrupt == "failed":
            error = {"code": "server_error", "message": "The model failed to generate a response (fake)."}
            return self.event("response.failed", response=self.response("failed", [], error=error))
        if interrupt == "incomplete":
            return self.event(
                "response.incomplete", response=self.response("incomplete", [], incomplete_reason="max_output_tokens")
            )
        return self.event("error", code="server_error", message="An error occurred while streaming (fake).", param=None)


# --- the server ---------------------------------------------------------------------------------------------


def _sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


class _Exchange:
    """One HTTP exchange under ASGI: sending, and pauses that end early when the client goes away."""

    def __init__(
        self,
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None:
        self._receive = receive
        self._send = send
        self.started = False
        self.disconnected = False
        self.on_last_write: Callable[[], None] | None = None

    async def read_body(self) -> bytes:
        chunks: list[bytes] = []
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self.disconnected = True
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        return b"".join(chunks)

    async def pause(self, seconds: float) -> None:
        """Sleep, unless the client disconnects first (a timed-out client must not hold the server)."""
        if seconds <= 0 or self.disconnected:
            return
        try:
            message = await asyncio.wait_for(self._receive(), timeout=seconds)
        except TimeoutError:
            return
        if message["type"] == "http.disconnect":
            self.disconnected = True

    async def start(self, status: int, content_type: str, headers: Mapping[str, str] | None = None) -> None:
        pairs = [(b"content-type", content_type.encode()), (b"x-request-id", _new_id("req").encode())]
        pairs += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
        await self._send({"type": "http.response.start", "status": status, "headers": pairs})
        self.started = True

    async def write(self, data: bytes, *, more: bool) -> None:
        if not more and self.on_last_write is not None:
            # Called before the last byte leaves: a client that has read the response sees its effect.
            self.on_last_write()
        await self._send({"type": "http.response.body", "body": data, "more_body": more})

    async def respond_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        await self.start(status, "application/json", headers)
        await self.write(json.dumps(payload).encode(), more=False)


@dataclass
class _Scripted:
    reply: Reply
    when: Predicate | None
    times: int | None


class FakeOpenAIServer:
    """The fake, running uvicorn in a background thread on a free port of 127.0.0.1."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scripted: list[_Scripted] = []
        self._default: Reply | None = None
        self._requests: list[RecordedRequest] = []
        self.errors: list[str] = []
        self._server: ThreadedAsgiServer | None = None
        self.port = 0
        # The provider's side: its models, the date their shutdowns are judged by, and refused keys.
        self.catalogue: dict[str, FakeModel] = dict(CATALOGUE)
        self.today: date = date.today()
        self.revoked_keys: set[str] = set()
        self.models_delay_s = 0.0  # how long `GET /v1/models` takes (a slow provider at process start)

    # lifecycle

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAIServer:
        self._server = ThreadedAsgiServer(self._app, name="fake-openai").start()
        self.port = self._server.port
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # scripting

    def script(self, reply: Reply, *, when: Predicate | None = None, times: int | None = 1) -> None:
        """Queue `reply` for the next `times` requests matching `when` (any request when `None`)."""
        with self._lock:
            self._scripted.append(_Scripted(reply, when, times))

    def set_default(self, reply: Reply | None) -> None:
        """The reply when nothing scripted matches; `None` restores the built-in default."""
        with self._lock:
            self._default = reply

    def pending(self) -> int:
        """Scripted replies not used up yet (unlimited ones excluded)."""
        with self._lock:
            return sum(s.times for s in self._scripted if s.times is not None)

    # assertions

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def max_concurrency(self) -> int:
        """The largest number of requests that were in flight at one moment."""
        edges: list[tuple[float, int]] = []
        for request in self.requests:
            edges.append((request.started_at, 1))
            edges.append((request.ended_at if request.ended_at is not None else float("inf"), -1))
        in_flight = peak = 0
        for _, step in sorted(edges, key=lambda edge: (edge[0], edge[1])):
            in_flight += step
            peak = max(peak, in_flight)
        return peak

    # serving

    def _choose(self, request: RecordedRequest) -> Reply:
        with self._lock:
            for scripted in self._scripted:
                if scripted.times != 0 and (scripted.when is None or scripted.when(request)):
                    if scripted.times is not None:
                        scripted.times -= 1
                    return scripted.reply
            if self._default is not None:
                return self._default
        return JsonReply() if request.is_structured else TextReply()

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        exchange = _Exchange(receive, send)
        raw = await exchange.read_body()
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        key = headers.get("authorization", "").removeprefix("Bearer ").strip()
        if "authorization" in headers:
            headers["authorization"] = headers["authorization"].split(" ", 1)[0] + " <redacted>"
        request = RecordedRequest(
            method=scope["method"], path=scope["path"], headers=headers, body={}, started_at=time.monotonic()
        )
        exchange.on_last_write = request.mark_ended
        with self._lock:
            self._requests.append(request)
        try:
            request.body = json.loads(raw) if raw else {}
            await self._serve(request, exchange, key)
        except Exception as exc:  # a bug in the fake or a test's script: surface it, not a hang
            with self._lock:
                self.errors.append(f"{scope['method']} {scope['path']}: {type(exc).__name__}: {exc}")
            if not exchange.started:
                await exchange.respond_json(500, ErrorReply(500).body())
                request.status = 500
        finally:
            request.client_closed = exchange.disconnected
            if request.ended_at is None:
                request.mark_ended()

    async def _serve(self, request: RecordedRequest, exchange: _Exchange, key: str) -> None:
        try:
            if not key or key in self.revoked_keys:
                raise Refused(401, "Incorrect API key provided (fake).", code="invalid_api_key")
            if request.method == "GET" and request.path.startswith("/v1/models"):
                await exchange.pause(self.models_delay_s)
                request.status = 200
                await exchange.respond_json(200, self._models(request.path.removeprefix("/v1/models").strip("/")))
                return
            if request.method != "POST" or request.path != "/v1/responses":
                raise Refused(404, f"Unknown path {request.path} (fake).", code="unknown_url")
            check_responses_request(request.body, self.catalogue, self.today)
        except Refused as refused:
            request.status = refused.status
            await exchange.respond_json(refused.status, refused.body())
            return
        reply = request.reply = self._choose(request)
        await exchange.pause(reply.first_byte_delay)
        if exchange.disconnected:
            return
        if isinstance(reply, ErrorReply):
            headers = {} if reply.retry_after_ms is None else {"retry-after-ms": str(reply.retry_after_ms)}
            request.status = reply.status
            await exchange.respond_json(reply.status, reply.body(), headers)
            return
        writer = _ResponseWriter(request, self._answer(request, reply))
        interrupt = reply.interrupt if isinstance(reply, TextReply) else None
        if not request.stream:
            if interrupt is not None:
                request.status = 500
                await exchange.respond_json(500, ErrorReply(500).body())
                return
            request.status = 200
            await exchange.respond_json(200, writer.response("completed", writer.final_output()))
            return
        request.status = 200
        await self._stream(writer, exchange, reply)

    def _models(self, model_id: str) -> dict[str, Any]:
        if model_id:
            return live_model(self.catalogue, model_id, self.today).listing()
        live = [m for m in self.catalogue.values() if m.shutdown is None or m.shutdown > self.today]
        return {"object": "list", "data": [m.listing() for m in live]}

    def _answer(self, request: RecordedRequest, reply: TextReply | JsonReply | RefusalReply) -> _Answer:
        refusal = None
        if isinstance(reply, RefusalReply):
            text, annotations, refusal = reply.refusal, [], reply.refusal
        elif isinstance(reply, TextReply):
            text, annotations = render_cited_text(reply.sentences)
        else:
            text, annotations = self._json_text(request, reply), []
        usage = reply.usage or Usage(
            input_tokens=max(1, len(json.dumps(request.body.get("input", ""))) // 4),
            output_tokens=max(1, len(text) // 4) + (64 if request.body.get("reasoning") else 0),
            reasoning_tokens=64 if request.body.get("reasoning") else 0,
        )
        return _Answer(text, annotations, usage, refusal)

    def _json_text(self, request: RecordedRequest, reply: JsonReply) -> str:
        if reply.raw is not None:
            return reply.raw
        schema = (request.text_format or {}).get("schema") or {}
        if reply.data is None:
            return json.dumps(example_from_schema(schema))
        data = reply.data.model_dump(mode="json") if isinstance(reply.data, BaseModel) else dict(reply.data)
        if reply.validate and schema:
            try:
                jsonschema.validate(data, schema)
            except jsonschema.ValidationError as exc:
                with self._lock:
                    self.errors.append(f"scripted JSON does not satisfy the request's schema: {exc.message}")
        return json.dumps(data)

    async def _stream(
        self, writer: _ResponseWriter, exchange: _Exchange, reply: TextReply | JsonReply | RefusalReply
    ) -> None:
        pacing = reply if isinstance(reply, TextReply) else TextReply()
        chunk = pacing.chunk_chars
        await exchange.start(200, "text/event-stream; charset=utf-8", {"cache-control": "no-cache"})
        for event in writer.opening_events():
            await exchange.write(_sse(event), more=True)
        text, annotations = writer.answer.text, writer.answer.annotations
        next_annotation = 0
        for sent in range(chunk, len(text) + chunk, chunk):
            count = sent // chunk
            if pacing.interrupt is not None and count > pacing.after_deltas:
                break
            if count > 1:
                await exchange.pause(pacing.delta_delay)
                if exchange.disconnected:
                    return
            await exchange.write(_sse(writer.delta_event(text[sent - chunk : sent])), more=True)
            # An annotation follows the delta that completes the text it spans, as in the real API.
            while next_annotation < len(annotations) and annotations[next_annotation]["end_index"] <= sent:
                await exchange.write(_sse(writer.annotation_event(next_annotation)), more=True)
                next_annotation += 1
        if pacing.interrupt == "drop":
            return  # uvicorn closes the connection mid-body: the client sees an incomplete chunked read
        if pacing.interrupt is not None:
            await exchange.write(_sse(writer.failure_event(pacing.interrupt)), more=False)
            return
        for event in writer.closing_events():
            await exchange.write(_sse(event), more=True)
        await exchange.write(b"", more=False)
