"""Views outside the JSON API: the SSE stream of a run."""

from __future__ import annotations

import uuid
from functools import partial

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from django_eventstream.utils import get_storage

from chat import selectors
from chat.callers import AuthenticationFailed, resolve_caller
from chat.events import InvalidLastEventId, parse_last_event_id, stream_run_events
from chat.services.runs import reap_if_orphaned


def _error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


def api_not_found(request: HttpRequest, path: str = "") -> JsonResponse:
    """Unknown paths under /api/ answer in the API's JSON error shape, not with Django's HTML page."""
    return _error(404, "not_found", "No such API endpoint.")


@csrf_exempt
@require_GET
async def run_events(request: HttpRequest, run_id: str) -> HttpResponse:
    """The run's events as SSE. Ownership is checked here, before the library sees the channel."""
    try:
        caller = await resolve_caller(request)
    except AuthenticationFailed as exc:
        return _error(401, "unauthorized", str(exc))
    try:
        run_uuid = uuid.UUID(run_id)
    except ValueError:
        return _error(404, "not_found", "No such run.")
    run = await sync_to_async(selectors.run_for)(caller, run_uuid)
    if run is None:
        return _error(404, "not_found", "No such run.")
    resume_from = request.headers.get("Last-Event-ID") or request.GET.get("lastEventId")
    try:
        last_id = parse_last_event_id(resume_from, run.channel)
    except InvalidLastEventId as exc:
        return _error(400, "invalid_last_event_id", str(exc))
    if last_id > await sync_to_async(get_storage().get_current_id)(run.channel):
        return _error(400, "invalid_last_event_id", "Last-Event-ID is beyond the last event of this run.")
    await reap_if_orphaned(run.id)
    stream = stream_run_events(run.channel, last_id, on_idle=partial(reap_if_orphaned, run.id))
    response = StreamingHttpResponse(stream, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
