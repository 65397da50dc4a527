"""An OpenAI-compatible front door: `POST /v1/chat/completions` and `GET /v1/models`.

Any OpenAI client (the official SDKs, chat UIs that take a base URL) can ask the research router
questions with an API key. The views only translate: request → `start_completion` → the run's events →
the Chat Completions wire format, with errors in OpenAI's `{"error": {...}}` shape so client SDKs raise
their usual typed exceptions.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from functools import wraps
from typing import Annotated, Literal

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer, model_validator

from chat.callers import Caller, KeyRejected, bearer_token
from chat.db_calls import request_db_call
from chat.models import ResearchRun
from chat.schemas import MAX_QUESTION_CHARS
from chat.services.admission import AdmissionRefused, admit_caller_sync, admit_question
from chat.services.completions import (
    AnswerDelta,
    AnswerFinished,
    AnswerPiece,
    CompletionFailed,
    follow_answer,
    start_completion,
)
from chat.services.run_backends import QueueUnavailable, start_run
from chat.services.runs import cancel_run
from datascraper.schemas import ChatTurn, Mode, UsageLedger

logger = logging.getLogger(__name__)

MODEL_ID = "finance-research"
MODEL_OWNER = "finance-research-chat"
MODEL_CREATED = 1767225600  # 2026-01-01: a fixed date, so the model list is stable between calls
MAX_MESSAGES = 200
MAX_HISTORY_TURN_CHARS = 32_000


# --- errors ---------------------------------------------------------------------------------------------


ErrorType = Literal["invalid_request_error", "authentication_error", "rate_limit_error", "server_error"]


class OpenAIError(Exception):
    """A failure answered in OpenAI's error shape; the official SDKs map the status to their exceptions."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: ErrorType = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        retry_after_s: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"error": {"message": message, "type": type, "param": param, "code": code}}
        self.retry_after_s = retry_after_s

    def response(self) -> JsonResponse:
        response = JsonResponse(self.body, status=self.status)
        if self.status == 401:
            response["WWW-Authenticate"] = "Bearer"
        if self.retry_after_s is not None:
            # Turned away before anything was stored: the SDKs may retry once the wait is over.
            response["Retry-After"] = str(self.retry_after_s)
            return response
        # A failed run already spent its own bounded retries upstream; an SDK retry would start (and pay
        # for) a whole new research run, so tell the SDKs not to.
        response["x-should-retry"] = "false"
        return response


# Run error codes (datascraper.errors and chat.services.runs) → HTTP status and OpenAI error type.
_RUN_FAILURES: dict[str, tuple[int, ErrorType]] = {
    "provider_not_configured": (503, "server_error"),
    # The operator's provider set-up, not the caller's request: the key, its credit, the configured model.
    "provider_auth_failed": (503, "server_error"),
    "provider_quota_exceeded": (503, "server_error"),
    "model_unavailable": (503, "server_error"),
    "model_refused": (422, "invalid_request_error"),
    "rate_limited": (429, "rate_limit_error"),
    "upstream_timeout": (504, "server_error"),
    "deadline_exceeded": (504, "server_error"),
    "cancelled": (409, "invalid_request_error"),
    "internal_error": (500, "server_error"),
}
_UPSTREAM_FAILURE: tuple[int, ErrorType] = (502, "server_error")


def run_failure_error(failure: CompletionFailed) -> OpenAIError:
    status, error_type = _RUN_FAILURES.get(failure.code, _UPSTREAM_FAILURE)
    return OpenAIError(status, failure.message, type=error_type, code=failure.code)


View = Callable[..., Awaitable[HttpResponse]]


def openai_errors(view: View) -> View:
    """Answer `OpenAIError` in OpenAI's shape and anything unexpected as a 500 of the same shape."""

    @wraps(view)
    async def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        try:
            return await view(request, *args, **kwargs)
        except OpenAIError as exc:
            return exc.response()
        except RequestDataTooBig:
            return OpenAIError(413, "The request body is too large.", code="request_too_large").response()
        except Exception:
            logger.exception("unhandled error on %s", request.path)
            return OpenAIError(500, "Something went wrong on our side.", type="server_error").response()

    return wrapper


def rate_limit_error(refused: AdmissionRefused) -> OpenAIError:
    return OpenAIError(
        429, refused.message, type="rate_limit_error", code=refused.code, retry_after_s=refused.retry_after_s
    )


async def authenticate(request: HttpRequest) -> Caller:
    """Bearer keys only: these endpoints never act on a browser session, so they need no CSRF check.
    Under the same limits as the JSON API: the owner's API rate, and wrong keys per client address."""
    if not bearer_token(request):
        raise OpenAIError(401, "Missing API key: send 'Authorization: Bearer <key>'.", code="invalid_api_key")
    try:
        return await request_db_call(admit_caller_sync, request)
    except KeyRejected as exc:
        raise OpenAIError(401, "The API key is revoked or unknown.", code="invalid_api_key") from exc
    except AdmissionRefused as refused:
        raise rate_limit_error(refused) from refused


def unknown_model(model: str) -> OpenAIError:
    return OpenAIError(
        404,
        f"The model '{model[:100]}' does not exist; this server offers '{MODEL_ID}'.",
        param="model",
        code="model_not_found",
    )


# --- request --------------------------------------------------------------------------------------------


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class ImageUrl(BaseModel):
    url: str


class ImagePart(BaseModel):
    type: Literal["image_url"]
    image_url: ImageUrl


class InputAudio(BaseModel):
    data: str
    format: str


class AudioPart(BaseModel):
    type: Literal["input_audio"]
    input_audio: InputAudio


class FileRef(BaseModel):
    file_id: str | None = None
    file_data: str | None = None
    filename: str | None = None


class FilePart(BaseModel):
    type: Literal["file"]
    file: FileRef


class RefusalPart(BaseModel):
    type: Literal["refusal"]
    refusal: str


UserPart = Annotated[TextPart | ImagePart | AudioPart | FilePart, Field(discriminator="type")]
AssistantPart = Annotated[TextPart | RefusalPart, Field(discriminator="type")]


def _text_of(content: str | Sequence[BaseModel] | None) -> str:
    """The text a research run can use: text parts joined; images, audio, files and refusals dropped."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content if isinstance(part, TextPart))


class _TextMessage(BaseModel):
    content: str | Sequence[BaseModel] | None

    @property
    def text(self) -> str:
        return _text_of(self.content)


class InstructionMessage(_TextMessage):
    """`system` or `developer`: accepted and dropped, since the research router writes its own instructions."""

    role: Literal["system", "developer"]
    content: str | list[TextPart]


class UserMessage(_TextMessage):
    role: Literal["user"]
    content: str | list[UserPart]


class AssistantTurnMessage(_TextMessage):
    """An earlier answer. As in OpenAI's API, `content` may be null when the turn called tools instead."""

    role: Literal["assistant"]
    content: str | list[AssistantPart] | None = None
    tool_calls: list[dict[str, object]] | None = None
    function_call: dict[str, object] | None = None

    @model_validator(mode="after")
    def _content_or_a_call(self) -> AssistantTurnMessage:
        if self.content is None and not self.tool_calls and not self.function_call:
            raise ValueError("an assistant message needs 'content' unless it has 'tool_calls' or 'function_call'")
        return self


class ToolResultMessage(BaseModel):
    """What the client's own tool returned (`tool`, or the older `function`): kept as context of the
    assistant's side, since the answer it fed may be what the next question is about."""

    role: Literal["tool", "function"]
    content: str | list[TextPart] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _names_its_call(self) -> ToolResultMessage:
        if self.role == "tool" and (not self.tool_call_id or self.content is None):
            raise ValueError("a tool message needs 'content' and 'tool_call_id'")
        if self.role == "function" and not self.name:
            raise ValueError("a function message needs 'name'")
        return self

    @property
    def text(self) -> str:
        result = _text_of(self.content).strip()
        return f"Result of the client's tool {self.name or self.tool_call_id}: {result}" if result else ""


ChatMessage = Annotated[
    InstructionMessage | UserMessage | AssistantTurnMessage | ToolResultMessage, Field(discriminator="role")
]
"""One message of the request, as OpenAI's API accepts it; fields a research run has no use for (`name`,
`audio`, ...) are ignored. An unknown role, an unknown content part, or a part missing its fields is a 400,
as there."""


class StreamOptions(BaseModel):
    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """The request body. Sampling options (`temperature`, `max_tokens`, ...) are accepted and ignored:
    the research router chooses its own models and settings."""

    model_config = ConfigDict(extra="ignore")

    model: str
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    stream_options: StreamOptions | None = None
    mode: Mode = Field(default="auto", description="Extension: 'quick' or 'research' forces a path.")

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage


def parse_request(raw: bytes) -> ChatCompletionRequest:
    try:
        return ChatCompletionRequest.model_validate_json(raw)
    except ValidationError as exc:
        errors = exc.errors()
        if errors[0]["type"] == "json_invalid":
            raise OpenAIError(400, "We could not parse the JSON body of your request.") from exc
        # A union reports one error per branch; the deepest one says what is wrong ("messages.0.content.0:
        # unknown part type", not "content: not a string").
        first = max(errors, key=lambda error: len(error["loc"]))
        param = _param(first["loc"]) or None
        message = first["msg"].removeprefix("Value error, ")
        raise OpenAIError(400, f"{param}: {message}" if param else message, param=param) from exc


_TAGS = frozenset(
    {"system", "developer", "user", "assistant", "tool", "function"}
    | {"text", "image_url", "input_audio", "file", "refusal"}
)


def _param(location: tuple[str | int, ...]) -> str:
    """The request's path of a validation error: without the union branches pydantic names in it
    ("messages.0.user.content.list[...].0.image_url.image_url" is "messages.0.content.0.image_url")."""
    parts: list[str] = []
    previous: str | int | None = None
    for part in location:
        tagged = isinstance(previous, int) and part in _TAGS
        branch = isinstance(part, str) and ("[" in part or part == "str" or tagged)
        if not branch:
            parts.append(str(part))
        previous = part
    return ".".join(parts)


def split_conversation(messages: list[ChatMessage]) -> tuple[list[ChatTurn], str]:
    """The earlier turns and the question: the last message, which must be the user's.

    System and developer messages are dropped: the research router writes its own instructions. Tool and
    function results become assistant-side context; turns with no text left (an image alone, an assistant
    turn that only called tools) are skipped.
    """
    last = len(messages) - 1
    if messages[last].role != "user":
        raise OpenAIError(400, "The last message must be a user message.", param=f"messages.{last}.role")
    question = messages[last].text.strip()
    if not question:
        raise OpenAIError(
            400, "The question must have text (images, audio and files are not read).", param=f"messages.{last}.content"
        )
    if len(question) > MAX_QUESTION_CHARS:
        raise OpenAIError(
            400, f"The question must be at most {MAX_QUESTION_CHARS} characters.", param=f"messages.{last}.content"
        )
    history: list[ChatTurn] = []
    for index, message in enumerate(messages[:last]):
        text = message.text.strip()
        if isinstance(message, InstructionMessage) or not text:
            continue
        if len(text) > MAX_HISTORY_TURN_CHARS:
            raise OpenAIError(
                400,
                f"Earlier messages must be at most {MAX_HISTORY_TURN_CHARS} characters.",
                param=f"messages.{index}.content",
            )
        history.append(ChatTurn(role="user" if isinstance(message, UserMessage) else "assistant", content=text))
    return history, question


# --- response -------------------------------------------------------------------------------------------


class CompletionTokensDetails(BaseModel):
    reasoning_tokens: int


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    completion_tokens_details: CompletionTokensDetails

    @classmethod
    def from_ledger(cls, ledger: UsageLedger) -> CompletionUsage:
        """Summed over every model the run called; reasoning tokens are part of the completion tokens."""
        prompt = sum(usage.input_tokens for usage in ledger.by_model.values())
        completion = sum(usage.output_tokens for usage in ledger.by_model.values())
        reasoning = sum(usage.reasoning_tokens for usage in ledger.by_model.values())
        return cls(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=prompt + completion,
            completion_tokens_details=CompletionTokensDetails(reasoning_tokens=reasoning),
        )


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str
    refusal: None = None


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"
    logprobs: None = None


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str = MODEL_ID
    choices: list[Choice]
    usage: CompletionUsage
    system_fingerprint: None = None


class ChoiceDelta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: ChoiceDelta
    finish_reason: Literal["stop"] | None = None
    logprobs: None = None

    @field_serializer("delta")
    def _only_present_fields(self, delta: ChoiceDelta) -> dict[str, str]:
        # OpenAI sends `{"role": ...}` first and `{"content": ...}` after, never explicit nulls.
        return delta.model_dump(exclude_none=True)


class ChatCompletionChunk(BaseModel):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str = MODEL_ID
    choices: list[ChunkChoice]
    usage: CompletionUsage | None = None
    system_fingerprint: None = None


class Model(BaseModel):
    id: str = MODEL_ID
    object: Literal["model"] = "model"
    created: int = MODEL_CREATED
    owned_by: str = MODEL_OWNER


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]


def _json(model: BaseModel) -> HttpResponse:
    return HttpResponse(model.model_dump_json(), content_type="application/json")


# --- views ----------------------------------------------------------------------------------------------


@csrf_exempt
@require_GET
@openai_errors
async def list_models(request: HttpRequest) -> HttpResponse:
    await authenticate(request)
    return _json(ModelList(data=[Model()]))


@csrf_exempt
@require_GET
@openai_errors
async def retrieve_model(request: HttpRequest, model: str) -> HttpResponse:
    await authenticate(request)
    if model != MODEL_ID:
        raise unknown_model(model)
    return _json(Model())


@csrf_exempt
@require_POST
@openai_errors
async def chat_completions(request: HttpRequest) -> HttpResponse:
    caller = await authenticate(request)
    body = parse_request(request.body)
    if body.model != MODEL_ID:
        raise unknown_model(body.model)
    history, question = split_conversation(body.messages)
    try:
        await admit_question(request, caller)
    except AdmissionRefused as refused:
        raise rate_limit_error(refused) from refused
    try:
        run = await _store_and_start(caller, history=history, question=question, mode=body.mode)
    except QueueUnavailable as exc:
        message = "The question could not be queued; ask again."
        raise OpenAIError(503, message, type="server_error", code="queue_unavailable") from exc
    completion_id = f"chatcmpl-{run.id.hex}"
    created = int(time.time())
    pieces = follow_answer(run)
    try:
        if not body.stream:
            return await _complete(pieces, completion_id, created)
        # Wait for the run's first event before committing to a 200 stream: a run that fails at once
        # (no provider configured) then gets a proper HTTP error, which the SDKs raise from `create()`.
        try:
            first = await anext(pieces)
        except CompletionFailed as exc:
            raise run_failure_error(exc) from exc
    except asyncio.CancelledError:
        await _abandon(run)
        raise
    response = StreamingHttpResponse(
        _stream(run, first, pieces, completion_id, created, include_usage=body.include_usage),
        content_type="text/event-stream",
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


async def _store_and_start(caller: Caller, *, history: list[ChatTurn], question: str, mode: Mode) -> ResearchRun:
    """Store the conversation and its run, then start the run.

    A client that hangs up meanwhile cancels this task, but the database thread still commits: the run
    it stored is then ended at once, instead of being left queued (or answered by a worker) for nobody.
    """
    storing = asyncio.ensure_future(
        request_db_call(start_completion, caller, history=history, question=question, mode=mode)
    )
    try:
        run = await asyncio.shield(storing)
    except asyncio.CancelledError:
        await asyncio.wait({storing})
        if storing.exception() is None:
            await _abandon(storing.result())
        raise
    start_run(run.id)
    return run


async def _complete(pieces: AsyncGenerator[AnswerPiece, None], completion_id: str, created: int) -> HttpResponse:
    text = ""
    try:
        async for piece in pieces:
            if isinstance(piece, AnswerDelta):
                text += piece.text
            elif isinstance(piece, AnswerFinished):
                completion = ChatCompletion(
                    id=completion_id,
                    created=created,
                    choices=[Choice(message=AssistantMessage(content=text + piece.sources_text))],
                    usage=CompletionUsage.from_ledger(piece.usage),
                )
                return _json(completion)
    except CompletionFailed as exc:
        raise run_failure_error(exc) from exc
    finally:
        await pieces.aclose()
    raise OpenAIError(502, "The run ended without an answer.", type="server_error", code="research_failed")


def _frame(payload: BaseModel | Mapping[str, object] | str) -> str:
    if isinstance(payload, BaseModel):
        payload = payload.model_dump_json()
    elif not isinstance(payload, str):
        payload = json.dumps(payload)
    return f"data: {payload}\n\n"


async def _abandon(run: ResearchRun) -> None:
    """The client went away (a timeout, a closed tab): stop paying for an answer nobody will read.
    What was written so far stays in the conversation, marked incomplete."""
    await asyncio.shield(cancel_run(run.id))


async def _stream(
    run: ResearchRun,
    first: AnswerPiece,
    pieces: AsyncGenerator[AnswerPiece, None],
    completion_id: str,
    created: int,
    *,
    include_usage: bool,
) -> AsyncIterator[str]:
    """Chunks in OpenAI's order: role, content deltas, sources, stop, usage (when asked), [DONE].

    A failure mid-answer becomes an `error` frame, which the official SDKs raise as `APIError`.
    """

    def chunk(delta: ChoiceDelta, finish_reason: Literal["stop"] | None = None) -> str:
        choice = ChunkChoice(delta=delta, finish_reason=finish_reason)
        return _frame(ChatCompletionChunk(id=completion_id, created=created, choices=[choice]))

    def frames_for(piece: AnswerPiece) -> Iterator[str]:
        if piece is None:
            yield ": keep-alive\n\n"  # an SSE comment: clients skip it, proxies see a live stream
        elif isinstance(piece, AnswerDelta):
            yield chunk(ChoiceDelta(content=piece.text))
        else:
            if piece.sources_text:
                yield chunk(ChoiceDelta(content=piece.sources_text))
            yield chunk(ChoiceDelta(), finish_reason="stop")
            if include_usage:
                usage = CompletionUsage.from_ledger(piece.usage)
                yield _frame(ChatCompletionChunk(id=completion_id, created=created, choices=[], usage=usage))

    ended = False  # the run finished, one way or the other
    yield chunk(ChoiceDelta(role="assistant", content=""))
    piece = first
    try:
        while True:
            for frame in frames_for(piece):
                yield frame
            if isinstance(piece, AnswerFinished):
                ended = True
                break
            piece = await anext(pieces)
    except CompletionFailed as exc:
        ended = True
        yield _frame(run_failure_error(exc).body)
    except Exception:
        logger.exception("completion stream %s failed", completion_id)
        yield _frame(OpenAIError(500, "Something went wrong on our side.", type="server_error").body)
    finally:
        # Reached early when the client hangs up (Django's ASGI handler hears `http.disconnect` while it
        # streams, cancels the response and closes this generator) or the server stops: the run must not
        # go on being paid for.
        if not ended:
            await _abandon(run)
        await pieces.aclose()
    yield _frame("[DONE]")
