"""The JSON API. Views stay thin: callers, selectors for reads, services for writes."""

from __future__ import annotations

import logging
import uuid
from functools import partial
from typing import TypeVar

import pydantic
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import NinjaAPI, Status
from ninja.errors import HttpError, ValidationError
from ninja.security.http import HttpAuthBase

from chat import selectors
from chat.callers import AuthenticationFailed, Caller, CsrfFailed
from chat.db_calls import request_db_call
from chat.models import Conversation, ResearchRun
from chat.request_bodies import TooManyContainers, parse_body, too_large_message
from chat.schemas import (
    Accepted,
    ConversationDetailOut,
    ConversationIn,
    ConversationOut,
    ErrorOut,
    MessageAccepted,
    MessageIn,
    MessageOut,
    RunOut,
    StatusOut,
)
from chat.services.admission import (
    AdmissionRefused,
    admission_status,
    admit_caller_sync,
    admit_question,
    may_see_status,
)
from chat.services.conversations import create_conversation, post_user_message
from chat.services.run_backends import QueueUnavailable, start_run
from chat.services.runs import cancel_run, reap_if_orphaned
from datascraper.providers.lifecycle import latest_report

logger = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class CallerAuth(HttpAuthBase):
    """A bearer API key, or else the browser session (anonymous sessions allowed)."""

    openapi_scheme = "bearer"

    async def __call__(self, request: HttpRequest) -> Caller:
        # One trip off the event loop for the key or session lookup and the limits' counts.
        return await request_db_call(admit_caller_sync, request)


class ResearchChatAPI(NinjaAPI):
    def get_openapi_schema(self, *args, **kwargs):
        """Add the SSE endpoint, which is a plain Django view so that it can stream exactly-once."""
        schema = super().get_openapi_schema(*args, **kwargs)
        schema["paths"]["/api/runs/{run_id}/events"] = {"get": EVENTS_OPERATION}
        return schema


EVENTS_OPERATION = {
    "tags": ["runs"],
    "summary": "Run events (Server-Sent Events)",
    "description": (
        "The run's events in order: status, plan, step, round, chart, delta, sources, then exactly one done or "
        "error. "
        "Events are stored: a late subscriber gets them all, and `Last-Event-ID` (or `?lastEventId=`) resumes "
        "after the given id exactly once."
    ),
    "operationId": "run_events",
    "parameters": [
        {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}},
        {"name": "lastEventId", "in": "query", "required": False, "schema": {"type": "string"}},
        {"name": "Last-Event-ID", "in": "header", "required": False, "schema": {"type": "string"}},
    ],
    "responses": {
        "200": {"description": "An SSE stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
        "400": {"description": "Invalid Last-Event-ID"},
        "404": {"description": "No such run for this caller"},
    },
    "security": [{"CallerAuth": []}],
}


api = ResearchChatAPI(
    title="Finance research chat",
    version="1.0",
    description="Ask finance questions; answers stream as Server-Sent Events with numbered citations.",
    auth=CallerAuth(),
    urls_namespace="api",
)


def error_response(request: HttpRequest, status: int, code: str, message: str) -> HttpResponse:
    return api.create_response(request, {"error": {"code": code, "message": message}}, status=status)


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    return error_response(request, exc.status, exc.code, exc.message)


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    first = exc.errors[0] if exc.errors else {}
    if first.get("loc", ("",))[0] == "path":
        return error_response(request, 404, "not_found", "No such resource.")
    where = ".".join(str(part) for part in first.get("loc", ()) if part not in ("body", "payload"))
    message = first.get("msg", "invalid request").removeprefix("Value error, ")
    return error_response(request, 400, "invalid_request", f"{where}: {message}" if where else message)


@api.exception_handler(AuthenticationFailed)
def _unauthenticated(request: HttpRequest, exc: AuthenticationFailed) -> HttpResponse:
    response = error_response(request, 401, "unauthorized", str(exc))
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(CsrfFailed)
def _csrf_failed(request: HttpRequest, exc: CsrfFailed) -> HttpResponse:
    return error_response(request, 403, "csrf_failed", str(exc))


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return error_response(request, exc.status_code, "http_error", str(exc))


@api.exception_handler(TooManyContainers)
def _too_many_containers(request: HttpRequest, exc: TooManyContainers) -> HttpResponse:
    return error_response(request, 400, "invalid_request", str(exc))


@api.exception_handler(AdmissionRefused)
def _refused(request: HttpRequest, exc: AdmissionRefused) -> HttpResponse:
    response = error_response(request, 429, exc.code, exc.message)
    response["Retry-After"] = str(exc.retry_after_s)
    return response


@api.exception_handler(RequestDataTooBig)
def _too_large(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return error_response(request, 413, "request_too_large", too_large_message())


@api.exception_handler(QueueUnavailable)
def _queue_unavailable(request: HttpRequest, exc: QueueUnavailable) -> HttpResponse:
    logger.error("could not queue a run: %s", exc)
    return error_response(
        request, 503, "queue_unavailable", "The question could not be queued; nothing was stored. Ask again."
    )


@api.exception_handler(Exception)
def _unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("unhandled API error on %s", request.path)
    return error_response(request, 500, "internal_error", "Something went wrong on our side.")


# --- request bodies -------------------------------------------------------------------------------------

Payload = TypeVar("Payload", bound=pydantic.BaseModel)


async def read_payload(request: HttpRequest, model: type[Payload]) -> Payload:
    """The body, validated as `model` off the event loop (chat.request_bodies), where ninja would parse
    and validate it on the loop. Its 400s are ninja's own (`_validation_error`), a 413 past the limit."""
    return await parse_body(request, partial(_validated, model))


def _validated(model: type[Payload], body: bytes) -> Payload:
    try:
        return model.model_validate_json(body)
    except pydantic.ValidationError as exc:
        # Without their input, which may be most of the body (a large value of an unknown field).
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        if errors[0]["type"] == "json_invalid":
            raise ApiError(400, "malformed_json", "The request body is not valid JSON.") from None
        raise ValidationError([{**error, "loc": ("body", *error["loc"])} for error in errors]) from None


def json_body(model: type[pydantic.BaseModel], *, required: bool = True) -> dict[str, object]:
    """The body in the OpenAPI document, for the views that read it themselves (`read_payload`)."""
    schema = {"application/json": {"schema": model.model_json_schema()}}
    return {"requestBody": {"required": required, "content": schema}}


def _not_found(kind: str) -> ApiError:
    return ApiError(404, "not_found", f"No such {kind}.")


async def _conversation_or_404(caller: Caller, conversation_id: uuid.UUID) -> Conversation:
    conversation = await request_db_call(selectors.conversation_for, caller, conversation_id)
    if conversation is None:
        raise _not_found("conversation")
    return conversation


async def _run_or_404(caller: Caller, run_id: uuid.UUID) -> ResearchRun:
    run = await request_db_call(selectors.run_for, caller, run_id)
    if run is None:
        raise _not_found("run")
    return run


ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 429: ErrorOut}


@api.post(
    "/conversations",
    response={201: ConversationOut, **ERRORS},
    tags=["conversations"],
    openapi_extra=json_body(ConversationIn, required=False),
)
async def create_conversation_view(request: HttpRequest):
    payload = await read_payload(request, ConversationIn) if request.body else ConversationIn()
    conversation = await request_db_call(create_conversation, request.auth, title=payload.title)
    return Status(201, ConversationOut.model_validate(conversation, from_attributes=True))


@api.get("/conversations", response={200: list[ConversationOut], **ERRORS}, tags=["conversations"])
async def list_conversations(request: HttpRequest, limit: int = 50, offset: int = 0):
    limit = max(1, min(limit, 200))
    queryset = selectors.conversations_for(request.auth)[max(offset, 0) : max(offset, 0) + limit]
    return [ConversationOut.model_validate(c, from_attributes=True) for c in await request_db_call(list, queryset)]


@api.get("/conversations/{conversation_id}", response={200: ConversationDetailOut, **ERRORS}, tags=["conversations"])
async def get_conversation(request: HttpRequest, conversation_id: uuid.UUID):
    conversation = await _conversation_or_404(request.auth, conversation_id)
    messages = await request_db_call(selectors.messages_of, conversation)
    return ConversationDetailOut(
        id=conversation.id,
        title=conversation.title,
        created_at=conversation.created_at,
        messages=[MessageOut.model_validate(m, from_attributes=True) for m in messages],
    )


@api.post(
    "/conversations/{conversation_id}/messages",
    response={202: MessageAccepted, **ERRORS},
    tags=["conversations"],
    description="Store the question and start answering it. Watch `events_url` for the answer.",
    openapi_extra=json_body(MessageIn),
)
async def post_message(request: HttpRequest, conversation_id: uuid.UUID):
    payload = await read_payload(request, MessageIn)
    conversation = await _conversation_or_404(request.auth, conversation_id)
    await admit_question(request, request.auth)
    run = await request_db_call(
        post_user_message,
        conversation, content=payload.content, mode=payload.mode, timezone=payload.timezone or ""
    )
    start_run(run.id)
    return Status(
        202,
        MessageAccepted(
            message_id=run.user_message_id,
            run_id=run.id,
            events_url=reverse("run-events", kwargs={"run_id": run.id}),
        ),
    )


def _run_out(run: ResearchRun) -> RunOut:
    return RunOut(
        id=run.id,
        conversation_id=run.conversation_id,
        status=run.status,
        requested_mode=run.requested_mode,
        mode=run.mode,
        plan=run.plan,
        rounds=run.rounds,
        timings=run.timings,
        usage=run.usage,
        signals=run.signals,
        facts=run.facts,
        charts=run.charts,
        verification=run.verification,
        confidence=run.confidence or None,
        trace=run.trace,
        error=run.error,
        message_id=run.answer_id,
        created_at=run.created_at,
        finished_at=run.finished_at,
    )


@api.get("/runs/{run_id}", response={200: RunOut, **ERRORS}, tags=["runs"])
async def get_run(request: HttpRequest, run_id: uuid.UUID):
    run = await _run_or_404(request.auth, run_id)
    if await reap_if_orphaned(run.id):
        run = await _run_or_404(request.auth, run_id)
    return _run_out(run)


@api.post("/runs/{run_id}/cancel", response={202: Accepted, 409: ErrorOut, **ERRORS}, tags=["runs"])
async def cancel_run_view(request: HttpRequest, run_id: uuid.UUID):
    run = await _run_or_404(request.auth, run_id)
    if not await cancel_run(run.id):
        raise ApiError(409, "run_finished", f"The run has already finished ({run.status}).")
    return Status(202, Accepted(status="cancelling"))


@api.get(
    "/status",
    response={200: StatusOut, **ERRORS},
    tags=["admin"],
    description="Staff only (others get 404): runs queued and running over all owners, and the limits in force.",
)
async def admission_status_view(request: HttpRequest):
    if not await may_see_status(request.auth):
        raise ApiError(404, "not_found", "No such API endpoint.")
    status = StatusOut.model_validate(await admission_status(), from_attributes=True)
    return status.model_copy(update={"models": latest_report()})
