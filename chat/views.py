"""Views outside the JSON API: the SSE stream of a run."""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from datetime import timedelta
from functools import partial

from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from chat import selectors
from chat.callers import AuthenticationFailed, Caller
from chat.db_calls import request_db_call
from chat.event_store import get_event_store
from chat.events import OPENING, TERMINAL_EVENTS, InvalidLastEventId, parse_last_event_id, stream_run_events
from chat.models import ResearchRun
from chat.services.admission import AdmissionRefused, StreamSlots, admit_caller_sync, open_stream
from chat.services.runs import reap_if_orphaned

EXPIRED_AFTER = timedelta(minutes=1)


def _error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


@csrf_exempt  # it acts on nothing: a POST here is a JSON 404, not the CSRF middleware's HTML 403
def api_not_found(request: HttpRequest, path: str = "") -> JsonResponse:
    """Unknown paths under /api/ answer in the API's JSON error shape, not with Django's HTML page."""
    return _error(404, "not_found", "No such API endpoint.")


def _run_of_caller(request: HttpRequest, run_id: str) -> tuple[Caller, ResearchRun | None]:
    """The caller (counted toward its API rate) and its run (None if it is not theirs). On a database
    thread, which hands the connection back after the call, so an open stream holds none for its whole life."""
    caller = admit_caller_sync(request)
    try:
        return caller, selectors.run_for(caller, uuid.UUID(run_id))
    except ValueError:
        return caller, None


class RunEventStream(StreamingHttpResponse):
    """An open event stream, holding its place under the caller's cap until the server closes it.

    Released in `close()`, which Django's ASGI handler calls once the response is over, whether the
    stream ended, the client left or the stream was never started."""

    def __init__(self, stream: AsyncIterator[str], slots: StreamSlots) -> None:
        super().__init__(stream, content_type="text/event-stream")
        self._slots = slots
        self["Cache-Control"] = "no-cache"
        self["X-Accel-Buffering"] = "no"

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._slots.release()


async def _opening_only() -> AsyncGenerator[str, None]:
    yield OPENING


async def _nothing_more(run: ResearchRun, last_id: int, current: int) -> bool:
    """No event will follow `last_id`: it is the run's final event, or a long-finished run's events have
    expired. (A run can be finished a moment before its final event is stored: that one is still sent.)"""
    if not run.is_finished or last_id != current:
        return False
    if current == 0:
        return run.finished_at is not None and timezone.now() - run.finished_at > EXPIRED_AFTER
    last = await get_event_store().read_after(run.id, current - 1, limit=1)
    return bool(last) and last[0].type in TERMINAL_EVENTS


@csrf_exempt
@require_GET
async def run_events(request: HttpRequest, run_id: str) -> HttpResponse:
    """The run's events as SSE. Ownership is checked here, before the library sees the channel."""
    try:
        caller, run = await request_db_call(_run_of_caller, request, run_id)
    except AuthenticationFailed as exc:
        return _error(401, "unauthorized", str(exc))
    except AdmissionRefused as refused:
        return _refused(refused)
    if run is None:
        return _error(404, "not_found", "No such run.")
    resume_from = request.headers.get("Last-Event-ID") or request.GET.get("lastEventId")
    try:
        last_id = parse_last_event_id(resume_from, run.channel)
    except InvalidLastEventId as exc:
        return _error(400, "invalid_last_event_id", str(exc))
    current = await get_event_store().last_id(run.id)
    if last_id > current:
        return _error(400, "invalid_last_event_id", "Last-Event-ID is beyond the last event of this run.")
    await reap_if_orphaned(run.id)
    if await _nothing_more(run, last_id, current):
        stream = _opening_only()
    else:
        stream = stream_run_events(run.id, last_id, on_idle=partial(reap_if_orphaned, run.id))
    try:
        slots = await request_db_call(open_stream, caller)
    except AdmissionRefused as refused:
        await stream.aclose()
        return _refused(refused)
    return RunEventStream(stream, slots)


def _refused(refused: AdmissionRefused) -> JsonResponse:
    response = _error(429, refused.code, refused.message)
    response["Retry-After"] = str(refused.retry_after_s)
    return response
