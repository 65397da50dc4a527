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
    fake.set_default(NO_CREDIT)  # streams answer 200 and fail inside; other calls are a 429

As strict as the real API, as recorded (`tests.fakes.openai_models`; `../shared/recorded/openai`): a model
past its shutdown date (as of `fake.today`) or unknown is absent from `GET /v1/models`, a 404
`model_not_found` on `GET /v1/models/{id}` and a 400 `model_not_found` on `POST /v1/responses` (streamed or
not: a plain JSON 400); an unknown parameter, an option the model does not take, or a strict schema the API
would refuse answers 400; a request without a key, or with one in `fake.revoked_keys`, answers 401. Error
bodies are pretty-printed, as the API's are. Refusals come back before any script is used. The stream's
shapes (`tests.fakes.openai_wire`) are the real one's, failures inside a stream included.

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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

import jsonschema
from pydantic import BaseModel

from tests.asgi_server import ThreadedAsgiServer
from tests.fakes.openai_models import CATALOGUE, FakeModel, Refused, check_responses_request, live_model
from tests.fakes.openai_replies import (
    DEFAULT_SENTENCES,
    NO_CREDIT,
    ErrorReply,
    FindInPage,
    JsonReply,
    OpenPage,
    RawReply,
    RefusalReply,
    Reply,
    Search,
    Sentence,
    TextReply,
    Usage,
    json_bytes,
)
from tests.fakes.openai_requests import (
    Predicate,
    RecordedRequest,
    has_web_search,
    input_contains,
    model_is,
    wants_structured_output,
)
from tests.fakes.openai_wire import Answer, ResponseWriter, example_from_schema, new_id, render_cited_text, sse

__all__ = [
    "DEFAULT_SENTENCES",
    "NO_CREDIT",
    "ErrorReply",
    "FakeOpenAIServer",
    "FindInPage",
    "JsonReply",
    "OpenPage",
    "RawReply",
    "RecordedRequest",
    "RefusalReply",
    "Reply",
    "Search",
    "Sentence",
    "TextReply",
    "Usage",
    "example_from_schema",
    "has_web_search",
    "input_contains",
    "model_is",
    "render_cited_text",
    "wants_structured_output",
]


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
        pairs = [(b"content-type", content_type.encode()), (b"x-request-id", new_id("req").encode())]
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
        await self.write(json_bytes(payload), more=False)

    async def respond_raw(self, reply: RawReply) -> None:
        headers = {"content-encoding": reply.content_encoding} if reply.content_encoding else {}
        await self.start(reply.status, reply.content_type, headers)
        await self.write(reply.body, more=False)


@dataclass
class _Scripted:
    reply: Reply
    when: Predicate | None
    times: int | None


class FakeOpenAIServer:
    """The fake, running uvicorn in a background thread on a free port of 127.0.0.1."""

    # What each request is recorded as (the Chat Completions fake records its own kind).
    request_type: type[RecordedRequest] = RecordedRequest

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
        request = self.request_type(
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
        if isinstance(reply, RawReply):
            request.status = reply.status
            await exchange.respond_raw(reply)
            return
        interrupt = reply.interrupt if isinstance(reply, TextReply) else None
        if isinstance(reply, TextReply) and interrupt in ("error", "failed") and not request.stream:
            reply = ErrorReply.for_code(reply.error_code)  # what the API answers a call it does not stream
        if isinstance(reply, ErrorReply):
            headers = {} if reply.retry_after_ms is None else {"retry-after-ms": str(reply.retry_after_ms)}
            request.status = reply.status
            await exchange.respond_json(reply.status, reply.body(), headers)
            return
        actions = reply.actions if isinstance(reply, TextReply) else ()
        snapshot = self.catalogue[request.body["model"]].snapshot
        writer = ResponseWriter(request, self._answer(request, reply), snapshot=snapshot, actions=actions)
        if not request.stream and interrupt == "drop":
            request.status = 500
            await exchange.respond_json(500, ErrorReply(500).body())
            return
        request.status = 200
        if request.stream:
            await self._stream(writer, exchange, reply)
        elif interrupt == "incomplete":
            incomplete = writer.response("incomplete", writer.final_output(), incomplete_reason="max_output_tokens")
            await exchange.respond_json(200, incomplete)
        else:
            await exchange.respond_json(200, writer.response("completed", writer.final_output()))

    def _models(self, model_id: str) -> dict[str, Any]:
        if model_id:
            return live_model(self.catalogue, model_id, self.today).listing()
        live = [m for m in self.catalogue.values() if m.shutdown is None or m.shutdown > self.today]
        return {"object": "list", "data": [m.listing() for m in live]}

    def _answer(self, request: RecordedRequest, reply: TextReply | JsonReply | RefusalReply) -> Answer:
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
        return Answer(text, annotations, usage, refusal)

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
        self, writer: ResponseWriter, exchange: _Exchange, reply: TextReply | JsonReply | RefusalReply
    ) -> None:
        pacing = reply if isinstance(reply, TextReply) else TextReply()
        await exchange.start(200, "text/event-stream; charset=utf-8", {"cache-control": "no-cache"})
        failing_at_once = pacing.interrupt in ("error", "failed") and pacing.after_deltas == 0
        # A call that fails before it writes (no credit) has no items: created, in progress, then the failure.
        opening = writer.created_events() if failing_at_once else writer.opening_events()
        for event in opening:
            await exchange.write(sse(event), more=True)
        if not failing_at_once and not await self._deltas(writer, exchange, pacing):
            return
        if pacing.interrupt == "drop":
            return  # uvicorn closes the connection mid-body: the client sees an incomplete chunked read
        if pacing.interrupt is not None:
            for event in writer.failure_events(pacing.interrupt, pacing.error_code):
                await exchange.write(sse(event), more=True)
            await exchange.write(b"", more=False)
            return
        for event in writer.closing_events():
            await exchange.write(sse(event), more=True)
        await exchange.write(b"", more=False)

    async def _deltas(self, writer: ResponseWriter, exchange: _Exchange, pacing: TextReply) -> bool:
        """The text deltas, each annotation `annotation_lag` deltas after the one that completes its link;
        False when the client went away."""
        chunk = pacing.chunk_chars
        text, annotations = writer.answer.text, writer.answer.annotations
        due: list[int] = []  # the delta count at which each annotation goes out, in order
        for sent in range(chunk, len(text) + chunk, chunk):
            count = sent // chunk
            if pacing.interrupt is not None and count > pacing.after_deltas:
                return True
            if count > 1:
                await exchange.pause(pacing.delta_delay)
                if exchange.disconnected:
                    return False
            await exchange.write(sse(writer.delta_event(text[sent - chunk : sent])), more=True)
            while len(due) < len(annotations) and annotations[len(due)]["end_index"] <= sent:
                due.append(count + pacing.annotation_lag)
            for index in range(writer.annotations_sent, len(due)):
                if due[index] > count and sent < len(text):
                    break
                await exchange.write(sse(writer.annotation_event(index)), more=True)
        return True
