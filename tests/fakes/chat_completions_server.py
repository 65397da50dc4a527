"""A fake OpenAI-compatible Chat Completions server on 127.0.0.1 (an Ollama, a vLLM, an LM Studio), at its wire.

It speaks what such servers speak, from OpenAI's Chat Completions reference and the openai SDK's types
(`types/chat/chat_completion*.py`): `POST /v1/chat/completions`, answered as one `chat.completion` or, with
`stream: true`, as SSE `chat.completion.chunk`s (a role chunk, content deltas, a chunk with the
`finish_reason`, with `stream_options.include_usage` a last chunk of `usage` and no choices, then
`data: [DONE]`); `GET /v1/models`. As strict as they are: no `/v1/responses` (Ollama's plain 404 there, as
on any unknown path); a model it does not serve is a 404 in OpenAI's error shape with Ollama's words and a
null code; an unknown parameter, a message without a role or content, `stream_options` without `stream`,
or a malformed `response_format` is a 400.

Modes, as real servers differ:

    fake.models = {"qwen2.5:14b"}          # what it serves (Ollama: what is pulled)
    fake.json_schema = False                # refuses response_format json_schema with a 400 naming it
    fake.stream_options = False             # refuses stream_options with a 400 naming it (older servers)
    fake.lists_models = False               # no GET /v1/models (404)
    fake.api_key = "placeholder-key-compat" # requires this bearer key (401 otherwise); None: any or none

Scripting is the fake OpenAI server's (`script`, `set_default`, `requests`): `JsonReply` for a structured
answer (checked against the request's schema when it sent one), `TextReply` whose sentences are plain text
(`interrupt`: "drop" closes the connection, "incomplete" ends with `finish_reason: "length"`, "error"
sends an `error` object inside the stream, as OpenRouter does), `RefusalReply`, `ErrorReply`, `RawReply`.
Unscripted, a structured request gets the smallest JSON its schema allows and any other one a short answer.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from tests.fakes.openai_replies import (
    ErrorReply,
    JsonReply,
    RawReply,
    RefusalReply,
    Reply,
    TextReply,
    Usage,
    error_body,
)
from tests.fakes.openai_requests import RecordedRequest
from tests.fakes.openai_server import FakeOpenAIServer, _Exchange
from tests.fakes.openai_wire import new_id

DEFAULT_MODELS = frozenset({"qwen2.5:14b", "llama3.1:8b"})
DEFAULT_ANSWER = ("This is the fake Chat Completions server's default answer.",)
# OpenAI's Chat Completions parameters; anything else is refused.
CHAT_PARAMETERS = frozenset(
    {
        "model", "messages", "stream", "stream_options", "response_format", "temperature", "top_p", "max_tokens",
        "max_completion_tokens", "seed", "stop", "tools", "tool_choice", "frequency_penalty", "presence_penalty",
        "n", "user", "logprobs", "top_logprobs", "logit_bias", "parallel_tool_calls", "reasoning_effort",
    }
)  # fmt: skip
ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
NOT_FOUND_PAGE = RawReply(404, b"404 page not found", "text/plain; charset=utf-8")


@dataclass
class ChatRequest(RecordedRequest):
    """A Chat Completions request as the fake saw it; read as the research tests' predicates read one."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [m for m in self.body.get("messages") or [] if isinstance(m, dict)]

    @property
    def input_text(self) -> str:
        return "\n".join(str(m.get("content") or "") for m in self.messages if m.get("role") != "system")

    @property
    def instructions(self) -> str:
        return "\n".join(str(m.get("content") or "") for m in self.messages if m.get("role") == "system")

    @property
    def text_format(self) -> dict[str, Any] | None:
        """The `json_schema` response format as the Responses API nests it (`type`, `name`, `schema`)."""
        response_format = self.body.get("response_format") or {}
        if response_format.get("type") != "json_schema":
            return None
        return {"type": "json_schema", **(response_format.get("json_schema") or {})}

    @property
    def wants_usage(self) -> bool:
        return bool((self.body.get("stream_options") or {}).get("include_usage"))


class Refused(Exception):
    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.reply = ErrorReply(status, message=message, type="invalid_request_error", code=code, retry_after_ms=None)
        self.param = param

    def body(self) -> dict[str, Any]:
        body = self.reply.body()
        body["error"]["param"] = self.param
        return body


class FakeChatCompletionsServer(FakeOpenAIServer):
    request_type = ChatRequest

    def __init__(self) -> None:
        super().__init__()
        self.models: set[str] = set(DEFAULT_MODELS)
        self.json_schema = True
        self.stream_options = True
        self.lists_models = True
        self.api_key: str | None = None

    def _choose(self, request: RecordedRequest) -> Reply:
        reply = super()._choose(request)
        if isinstance(reply, TextReply) and reply.sentences is TextReply().sentences:
            return TextReply(DEFAULT_ANSWER, usage=reply.usage)  # the Responses fake's default cites links
        return reply

    async def _serve(self, request: RecordedRequest, exchange: _Exchange, key: str) -> None:
        assert isinstance(request, ChatRequest)
        if self.api_key is not None and key != self.api_key:
            body = error_body("Invalid API key (fake).", type="invalid_request_error", code="invalid_api_key")
            await self._respond(request, exchange, 401, body)
            return
        if request.method == "GET" and request.path == "/v1/models" and self.lists_models:
            listing = [{"id": m, "object": "model", "created": 0, "owned_by": "library"} for m in sorted(self.models)]
            await self._respond(request, exchange, 200, {"object": "list", "data": listing})
            return
        if (request.method, request.path) != ("POST", "/v1/chat/completions"):
            request.status = 404
            await exchange.respond_raw(NOT_FOUND_PAGE)
            return
        try:
            self._check(request.body)
        except Refused as refused:
            await self._respond(request, exchange, refused.reply.status, refused.body())
            return
        reply = request.reply = self._choose(request)
        await exchange.pause(reply.first_byte_delay)
        if exchange.disconnected:
            return
        if isinstance(reply, RawReply):
            request.status = reply.status
            await exchange.respond_raw(reply)
        elif isinstance(reply, ErrorReply):
            headers = {} if reply.retry_after_ms is None else {"retry-after-ms": str(reply.retry_after_ms)}
            await self._respond(request, exchange, reply.status, reply.body(), headers)
        elif request.stream:
            request.status = 200
            await self._stream(request, exchange, reply)
        elif isinstance(reply, TextReply) and reply.interrupt == "drop":
            await self._respond(request, exchange, 500, ErrorReply(500).body())
        else:
            await self._respond(request, exchange, 200, self._completion(request, reply))

    async def _respond(
        self,
        request: RecordedRequest,
        exchange: _Exchange,
        status: int,
        body: Any,
        headers: dict[str, str] | None = None,
    ) -> None:
        request.status = status
        await exchange.respond_json(status, body, headers)

    def _check(self, body: dict[str, Any]) -> None:
        for name in body:
            if name not in CHAT_PARAMETERS:
                raise Refused(400, f"Unrecognized request argument supplied: {name}")
        if body.get("model") not in self.models:
            # Ollama's words; a 404 in OpenAI's error shape, with no code.
            message = f'model "{body.get("model")}" not found, try pulling it first'
            raise Refused(404, message)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Refused(400, "'messages' must be a non-empty array.", param="messages")
        for message in messages:
            if not isinstance(message, dict) or message.get("role") not in ROLES:
                raise Refused(400, "Each message needs a valid 'role'.", param="messages")
            if not isinstance(message.get("content"), str):
                raise Refused(400, "Each message needs a string 'content'.", param="messages")
        if "stream_options" in body:
            if not self.stream_options:
                raise Refused(400, "stream_options is not supported", param="stream_options")
            if not body.get("stream"):
                raise Refused(
                    400,
                    "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                    param="stream_options",
                )
        self._check_response_format(body.get("response_format"))

    def _check_response_format(self, response_format: Any) -> None:
        if response_format is None:
            return
        kind = response_format.get("type") if isinstance(response_format, dict) else None
        if kind not in ("text", "json_object", "json_schema"):
            raise Refused(400, "Invalid 'response_format.type'.", param="response_format")
        if kind != "json_schema":
            return
        if not self.json_schema:
            raise Refused(400, "response_format type 'json_schema' is not supported", param="response_format")
        spec = response_format.get("json_schema")
        if not isinstance(spec, dict) or not spec.get("name") or not isinstance(spec.get("schema"), dict):
            raise Refused(400, "'response_format.json_schema' needs a 'name' and a 'schema'.", param="response_format")

    def _text(self, request: ChatRequest, reply: TextReply | JsonReply | RefusalReply) -> str:
        if isinstance(reply, RefusalReply):
            return ""
        if isinstance(reply, JsonReply):
            return self._json_text(request, reply)
        return " ".join(s if isinstance(s, str) else s.text for s in reply.sentences)

    def _usage(self, request: ChatRequest, reply: TextReply | JsonReply | RefusalReply, text: str) -> dict[str, Any]:
        usage = reply.usage or Usage(
            input_tokens=max(1, len(json.dumps(request.messages)) // 4), output_tokens=max(1, len(text) // 4)
        )
        fields: dict[str, Any] = {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
        }
        # Most servers send the three totals only; the details where there are some (vLLM, OpenRouter).
        if usage.cached_tokens:
            fields["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
        if usage.reasoning_tokens:
            fields["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
        return fields

    def _envelope(self, request: ChatRequest, kind: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": new_id("chatcmpl"),
            "object": kind,
            "created": int(time.time()),
            "model": request.model,
            "system_fingerprint": "fp_fake",
            "choices": choices,
        }

    def _completion(self, request: ChatRequest, reply: TextReply | JsonReply | RefusalReply) -> dict[str, Any]:
        text = self._text(request, reply)
        refusal = reply.refusal if isinstance(reply, RefusalReply) else None
        finish = "length" if isinstance(reply, TextReply) and reply.interrupt == "incomplete" else "stop"
        message = {"role": "assistant", "content": None if refusal else text, "refusal": refusal}
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        return {**self._envelope(request, "chat.completion", [choice]), "usage": self._usage(request, reply, text)}

    def _chunk(self, request: ChatRequest, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _data(self._envelope(request, "chat.completion.chunk", [choice]))

    async def _stream(
        self, request: ChatRequest, exchange: _Exchange, reply: TextReply | JsonReply | RefusalReply
    ) -> None:
        pacing = reply if isinstance(reply, TextReply) else TextReply()
        text = self._text(request, reply)
        await exchange.start(200, "text/event-stream", {"cache-control": "no-cache"})
        await exchange.write(self._chunk(request, {"role": "assistant", "content": ""}), more=True)
        if isinstance(reply, RefusalReply):
            await exchange.write(self._chunk(request, {"refusal": reply.refusal}), more=True)
        for count, start in enumerate(range(0, len(text), pacing.chunk_chars), start=1):
            if pacing.interrupt in ("drop", "error", "failed") and count > pacing.after_deltas:
                break
            if count > 1:
                await exchange.pause(pacing.delta_delay)
                if exchange.disconnected:
                    return
            await exchange.write(self._chunk(request, {"content": text[start : start + pacing.chunk_chars]}), more=True)
        if pacing.interrupt == "drop":
            return  # uvicorn closes the connection mid-body
        if pacing.interrupt in ("error", "failed"):
            error = {"message": f"{pacing.error_code} (fake).", "code": pacing.error_code}
            await exchange.write(_data({"error": error}), more=True)
            await exchange.write(b"", more=False)
            return
        finish = "length" if pacing.interrupt == "incomplete" else "stop"
        await exchange.write(self._chunk(request, {}, finish), more=True)
        if request.wants_usage:
            usage_chunk = {
                **self._envelope(request, "chat.completion.chunk", []),
                "usage": self._usage(request, reply, text),
            }
            await exchange.write(_data(usage_chunk), more=True)
        await exchange.write(b"data: [DONE]\n\n", more=False)


def _data(payload: dict[str, Any]) -> bytes:
    """One SSE frame as Chat Completions servers send it: `data:` only, no `event:` line."""
    return f"data: {json.dumps(payload)}\n\n".encode()
