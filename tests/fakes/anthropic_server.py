"""A fake Anthropic Messages API on 127.0.0.1, speaking the real wire format (JSON and SSE) to the real SDK.

Scripting, in a test::

    fake.script(TextAnswer([Sentence("Revenue rose 6%.", cites=[("https://www.reuters.com/a", "Reuters")])]))
    fake.script(JsonAnswer(QueryAnalysis(...)), when=schema_is("QueryAnalysis"))
    fake.script(ErrorAnswer(529), times=3)
    fake.script(TextAnswer(error_after_deltas=3))  # an `overloaded_error` event part way
    fake.set_default(NO_CREDIT)

As strict as the real API (`tests.fakes.anthropic_models`): every request needs the `anthropic-version`
header and a key (`x-api-key`, or `Authorization: Bearer` as the SDK sends it) among `fake.api_keys`
(else a 401 `authentication_error`); a field the API does not take, a `max_tokens` above the model's, a
tool or a schema it refuses is a 400 `invalid_request_error`; an unknown or retired model a 404
`not_found_error`. Error bodies are `{"type": "error", "error": {"type", "message"}, "request_id"}` with a
`request-id` header. `GET /v1/models` pages as the API does (`limit`, `after_id`, `before_id`; `data`,
`has_more`, `first_id`, `last_id`), newest first, retired models left out; `GET /v1/models/{id}` takes an
alias. Each request takes the first scripted answer whose `when` matches; with none, the default: a short
cited answer, or for a structured request the smallest JSON its schema allows.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import jsonschema
from pydantic import BaseModel

from tests.asgi_server import ThreadedAsgiServer
from tests.fakes.anthropic_models import (
    API_VERSIONS,
    CATALOGUE,
    FakeClaude,
    Refused,
    check_messages_request,
    find_model,
)
from tests.fakes.anthropic_wire import (
    Answer,
    Block,
    ErrorAnswer,
    JsonAnswer,
    TextAnswer,
    Usage,
    block_events,
    error_body,
    message,
    new_id,
    search_blocks,
    sse,
    text_blocks,
    usage_payload,
)
from tests.fakes.openai_requests import Predicate, RecordedRequest, _texts
from tests.fakes.openai_server import _Exchange
from tests.fakes.openai_wire import example_from_schema

API_KEY = "placeholder-key-anthropic"


@dataclass
class AnthropicRequest(RecordedRequest):
    """A request to the fake Anthropic API; `headers` has the key removed."""

    query: str = ""

    @property
    def output_schema(self) -> dict[str, Any] | None:
        schema = ((self.body.get("output_config") or {}).get("format") or {}).get("schema")
        return schema if isinstance(schema, dict) else None

    @property
    def is_structured(self) -> bool:
        return self.output_schema is not None

    @property
    def schema_name(self) -> str | None:
        return (self.output_schema or {}).get("title")

    @property
    def input_text(self) -> str:
        return "\n".join(_texts(self.body.get("messages")))

    @property
    def instructions(self) -> str:
        system = self.body.get("system")
        return system if isinstance(system, str) else "\n".join(_texts(system))


def schema_is(name: str) -> Predicate:
    return lambda request: isinstance(request, AnthropicRequest) and request.schema_name == name


def is_written_answer(request: RecordedRequest) -> bool:
    return not request.is_structured and not request.has_web_search


@dataclass
class _Scripted:
    answer: Answer
    when: Predicate | None
    times: int | None


class FakeAnthropicServer:
    """The fake, running uvicorn in a background thread on a free port of 127.0.0.1."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scripted: list[_Scripted] = []
        self._default: Answer | None = None
        self._requests: list[AnthropicRequest] = []
        self.errors: list[str] = []
        self._server: ThreadedAsgiServer | None = None
        self.port = 0
        self.catalogue: dict[str, FakeClaude] = {model.id: model for model in CATALOGUE}
        self.api_keys: set[str] = {API_KEY}
        self.delay_s = 0.0  # how long a `POST /v1/messages` waits before it answers (a hung provider)

    @property
    def base_url(self) -> str:
        """The host alone, as `ANTHROPIC_BASE_URL` takes it."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeAnthropicServer:
        self._server = ThreadedAsgiServer(self._app, name="fake-anthropic").start()
        self.port = self._server.port
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> FakeAnthropicServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def script(self, answer: Answer, *, when: Predicate | None = None, times: int | None = 1) -> None:
        with self._lock:
            self._scripted.append(_Scripted(answer, when, times))

    def set_default(self, answer: Answer | None) -> None:
        with self._lock:
            self._default = answer

    @property
    def requests(self) -> list[AnthropicRequest]:
        with self._lock:
            return list(self._requests)

    def _choose(self, request: AnthropicRequest) -> Answer:
        with self._lock:
            for scripted in self._scripted:
                if scripted.times != 0 and (scripted.when is None or scripted.when(request)):
                    if scripted.times is not None:
                        scripted.times -= 1
                    return scripted.answer
            if self._default is not None:
                return self._default
        return JsonAnswer() if request.is_structured else TextAnswer()

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        exchange = _Exchange(receive, send)
        raw = await exchange.read_body()
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        key = headers.pop("x-api-key", "") or headers.pop("authorization", "").removeprefix("Bearer ").strip()
        headers.pop("authorization", None)
        request = AnthropicRequest(
            method=scope["method"], path=scope["path"], headers=headers, body={}, started_at=time.monotonic()
        )
        request.query = scope.get("query_string", b"").decode()
        exchange.on_last_write = request.mark_ended
        with self._lock:
            self._requests.append(request)
        try:
            request.body = json.loads(raw) if raw else {}
            await self._serve(request, exchange, key)
        except Refused as refused:
            request.status = refused.status
            await _respond(exchange, refused.status, error_body(refused.error_type, refused.message, new_id("req")))
        except Exception as exc:  # a bug in the fake or a test's script: surface it, not a hang
            with self._lock:
                self.errors.append(f"{scope['method']} {scope['path']}: {type(exc).__name__}: {exc}")
            if not exchange.started:
                await _respond(exchange, 500, ErrorAnswer(500).body(new_id("req")))
        finally:
            if request.ended_at is None:
                request.mark_ended()

    async def _serve(self, request: AnthropicRequest, exchange: _Exchange, key: str) -> None:
        if not key:
            raise Refused(401, "authentication_error", "x-api-key header is required")
        if key not in self.api_keys:
            raise Refused(401, "authentication_error", "invalid x-api-key")
        if request.headers.get("anthropic-version") not in API_VERSIONS:
            raise Refused(400, "invalid_request_error", "anthropic-version: header is required")
        if request.method == "GET" and request.path.startswith("/v1/models"):
            request.status = 200
            await _respond(exchange, 200, self._models(request.path.removeprefix("/v1/models").strip("/"), request))
            return
        if request.method != "POST" or request.path != "/v1/messages":
            raise Refused(404, "not_found_error", f"Not found: {request.path} (fake)")
        model = check_messages_request(request.body, self.catalogue)
        answer = self._choose(request)
        await exchange.pause(self.delay_s)
        if exchange.disconnected:
            return
        if isinstance(answer, ErrorAnswer):
            request.status = answer.status
            retry = {} if answer.retry_after is None else {"retry-after": str(answer.retry_after)}
            await _respond(exchange, answer.status, answer.body(new_id("req")), retry)
            return
        blocks, searches = self._blocks(request, answer)
        usage = usage_payload(answer.usage or _estimate(request, blocks), searches)
        request.status = 200
        if not request.stream:
            await _respond(exchange, 200, message(model.id, blocks, answer.stop_reason, usage))
            return
        text = (
            answer
            if isinstance(answer, TextAnswer)
            else TextAnswer(chunk_chars=1_000_000, stop_reason=answer.stop_reason)
        )
        await _stream(exchange, message(model.id, [], None, {**usage, "output_tokens": 1}), blocks, text, usage)

    def _blocks(self, request: AnthropicRequest, answer: TextAnswer | JsonAnswer) -> tuple[list[Block], int]:
        if isinstance(answer, JsonAnswer):
            return [Block("text", self._json_text(request, answer))], 0
        searches = answer.searches if request.has_web_search else 0
        query = request.input_text.strip().splitlines()[-1] if request.input_text.strip() else ""
        tools = [
            block for _ in range(searches) for block in search_blocks(query, answer.sentences, narrate=answer.narrate)
        ]
        return [*tools, *text_blocks(answer.sentences)], searches

    def _json_text(self, request: AnthropicRequest, answer: JsonAnswer) -> str:
        if answer.raw is not None:
            return answer.raw
        schema = request.output_schema or {}
        if answer.data is None:
            return json.dumps(example_from_schema(schema))
        data = answer.data.model_dump(mode="json") if isinstance(answer.data, BaseModel) else dict(answer.data)
        try:
            jsonschema.validate(data, schema)
        except jsonschema.ValidationError as exc:
            with self._lock:
                self.errors.append(f"scripted JSON does not satisfy the request's schema: {exc.message}")
        return json.dumps(data)

    def _models(self, model_id: str, request: AnthropicRequest) -> dict[str, Any]:
        if model_id:
            return find_model(self.catalogue, model_id).info()
        listed = sorted(
            (m for m in self.catalogue.values() if m.lifecycle != "retired"), key=lambda m: m.created_at, reverse=True
        )
        params = dict(pair.split("=", 1) for pair in request.query.split("&") if "=" in pair)
        limit = int(params.get("limit", "20"))
        if not 1 <= limit <= 1000:
            raise Refused(400, "invalid_request_error", "limit: Input should be between 1 and 1000")
        ids = [m.id for m in listed]
        start = ids.index(params["after_id"]) + 1 if params.get("after_id") in ids else 0
        page = listed[start : start + limit]
        return {
            "data": [m.info() for m in page],
            "has_more": start + limit < len(listed),
            "first_id": page[0].id if page else None,
            "last_id": page[-1].id if page else None,
        }


def _estimate(request: AnthropicRequest, blocks: list[Block]) -> Usage:
    written = sum(len(block.text) for block in blocks)
    return Usage(
        input_tokens=max(1, len(json.dumps(request.body.get("messages"))) // 4), output_tokens=max(1, written // 4)
    )


async def _respond(exchange: _Exchange, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
    request_id = payload.get("request_id") if isinstance(payload, dict) else None
    await exchange.start(status, "application/json", {"request-id": request_id or new_id("req"), **(headers or {})})
    await exchange.write(json.dumps(payload).encode(), more=False)


async def _stream(
    exchange: _Exchange, opening: dict[str, Any], blocks: list[Block], answer: TextAnswer, usage: dict[str, Any]
) -> None:
    """The events of one streamed message, failing part way as `answer` says."""
    await exchange.start(
        200, "text/event-stream; charset=utf-8", {"request-id": new_id("req"), "cache-control": "no-cache"}
    )
    await exchange.write(sse({"type": "message_start", "message": opening}), more=True)
    await exchange.write(sse({"type": "ping"}), more=True)
    deltas = 0
    for index, block in enumerate(blocks):
        for event in block_events(index, block, answer.chunk_chars, citations_last=answer.citations_last):
            if event.pop("_text", False):
                if deltas == answer.drop_after_deltas:
                    return  # uvicorn closes the connection mid-body: the client sees an incomplete read
                if deltas == answer.error_after_deltas:
                    failure = error_body(answer.error_type, "Overloaded", new_id("req"))
                    await exchange.write(sse(failure), more=True)
                    await exchange.write(b"", more=False)
                    return
                deltas += 1
            await exchange.write(sse(event), more=True)
    delta = {"stop_reason": answer.stop_reason, "stop_sequence": None}
    await exchange.write(sse({"type": "message_delta", "delta": delta, "usage": usage}), more=True)
    await exchange.write(sse({"type": "message_stop"}), more=True)
    await exchange.write(b"", more=False)
