"""An OpenAI-compatible front door: `POST /v1/chat/completions` and `GET /v1/models`.

Any OpenAI client (the official SDKs, chat UIs that take a base URL) can ask the research router
questions with an API key. The views only translate: request (`chat.openai_schemas`) → `store_and_start`
→ the run's answer (`chat.services.completions`) → the Chat Completions wire format, with errors in
OpenAI's `{"error": {...}}` shape so client SDKs raise their usual typed exceptions.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Mapping
from functools import wraps
from typing import Literal

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from pydantic import BaseModel

from chat.callers import Caller, KeyRejected, bearer_token
from chat.db_calls import request_db_call
from chat.models import ResearchRun
from chat.openai_schemas import (
    MODEL_ID,
    AssistantMessage,
    ChatCompletion,
    ChatCompletionChunk,
    Choice,
    ChoiceDelta,
    ChunkChoice,
    CompletionUsage,
    InvalidRequest,
    Model,
    ModelList,
    parse_request,
    split_conversation,
)
from chat.services.admission import AdmissionRefused, admit_caller_sync, admit_question
from chat.services.completions import (
    AnswerDelta,
    AnswerFinished,
    AnswerPiece,
    CompletionFailed,
    abandon_completion,
    follow_answer,
    store_and_start,
)
from chat.services.run_backends import QueueUnavailable

logger = logging.getLogger(__name__)


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


def rate_limit_error(refused: AdmissionRefused) -> OpenAIError:
    return OpenAIError(
        429, refused.message, type="rate_limit_error", code=refused.code, retry_after_s=refused.retry_after_s
    )


def unknown_model(model: str) -> OpenAIError:
    return OpenAIError(
        404,
        f"The model '{model[:100]}' does not exist; this server offers '{MODEL_ID}'.",
        param="model",
        code="model_not_found",
    )


def _named_failure(exc: Exception) -> OpenAIError | None:
    """A failure the views or the services name, in OpenAI's shape; None for anything unexpected."""
    if isinstance(exc, OpenAIError):
        return exc
    if isinstance(exc, InvalidRequest):
        return OpenAIError(400, exc.message, param=exc.param)
    if isinstance(exc, AdmissionRefused):
        return rate_limit_error(exc)
    if isinstance(exc, CompletionFailed):
        return run_failure_error(exc)
    if isinstance(exc, QueueUnavailable):
        message = "The question could not be queued; ask again."
        return OpenAIError(503, message, type="server_error", code="queue_unavailable")
    if isinstance(exc, RequestDataTooBig):
        return OpenAIError(413, "The request body is too large.", code="request_too_large")
    return None


View = Callable[..., Awaitable[HttpResponse]]


def openai_errors(view: View) -> View:
    """Answer a named failure in OpenAI's shape, and anything unexpected as a logged 500 of the same shape."""

    @wraps(view)
    async def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        try:
            return await view(request, *args, **kwargs)
        except Exception as exc:
            error = _named_failure(exc)
            if error is None:
                logger.exception("unhandled error on %s", request.path)
                error = OpenAIError(500, "Something went wrong on our side.", type="server_error")
            return error.response()

    return wrapper


async def authenticate(request: HttpRequest) -> Caller:
    """Bearer keys only: these endpoints never act on a browser session, so they need no CSRF check.
    Under the same limits as the JSON API: the owner's API rate, and wrong keys per client address."""
    if not bearer_token(request):
        raise OpenAIError(401, "Missing API key: send 'Authorization: Bearer <key>'.", code="invalid_api_key")
    try:
        return await request_db_call(admit_caller_sync, request)
    except KeyRejected as exc:
        raise OpenAIError(401, "The API key is revoked or unknown.", code="invalid_api_key") from exc


# --- views ----------------------------------------------------------------------------------------------


def _json(model: BaseModel) -> HttpResponse:
    return HttpResponse(model.model_dump_json(), content_type="application/json")


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
    await admit_question(request, caller)
    run = await store_and_start(caller, history=history, question=question, mode=body.mode)
    completion_id = f"chatcmpl-{run.id.hex}"
    created = int(time.time())
    pieces = follow_answer(run)
    try:
        if not body.stream:
            return await _complete(pieces, completion_id, created)
        # Wait for the run's first event before committing to a 200 stream: a run that fails at once
        # (no provider configured) then gets a proper HTTP error, which the SDKs raise from `create()`.
        first = await anext(pieces)
    except asyncio.CancelledError:
        await abandon_completion(run)
        raise
    response = StreamingHttpResponse(
        _stream(run, first, pieces, completion_id, created, include_usage=body.include_usage),
        content_type="text/event-stream",
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


# --- the answer in the Chat Completions format ----------------------------------------------------------


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
    finally:
        await pieces.aclose()
    raise OpenAIError(502, "The run ended without an answer.", type="server_error", code="research_failed")


def _frame(payload: BaseModel | Mapping[str, object] | str) -> str:
    if isinstance(payload, BaseModel):
        payload = payload.model_dump_json()
    elif not isinstance(payload, str):
        payload = json.dumps(payload)
    return f"data: {payload}\n\n"


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
            await abandon_completion(run)
        await pieces.aclose()
    yield _frame("[DONE]")
