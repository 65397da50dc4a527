"""The brief endpoints: POST/GET /api/watchlists/{id}/briefs and GET /api/briefs/{id}, thin over
chat.services.briefs. Mounted on the API by config/urls.py; another owner's watchlist or brief is a 404."""

from __future__ import annotations

import uuid

from django.http import HttpRequest
from django.urls import reverse
from ninja import Router, Status

from chat import selectors
from chat.api import ERRORS, ApiError
from chat.api_watchlists import watchlist_or_404
from chat.brief_schemas import BriefAccepted, BriefOut, brief_out
from chat.db_calls import request_db_call
from chat.models import Brief
from chat.services.admission import AdmissionRefused
from chat.services.briefs import LIMIT_CODES, start_brief

router = Router(tags=["briefs"])
MAX_LISTED = 100


@router.post(
    "/watchlists/{watchlist_id}/briefs",
    response={202: BriefAccepted, **ERRORS},
    description="Make a brief now: what changed since the watchlist's last brief (the last 24 hours for its "
    "first), found by the data tools, then written by one research run whose events `events_url` streams. "
    "When nothing material changed, the brief is done at once, with no run (`run_id` null). Over the "
    "owner's run limits: 429, the brief recorded `failed`.",
)
async def create_brief(request: HttpRequest, watchlist_id: uuid.UUID):
    watchlist = await watchlist_or_404(request, watchlist_id)
    brief = await start_brief(watchlist)
    if brief.status == Brief.Status.FAILED and (brief.error or {}).get("code") in LIMIT_CODES:
        error = brief.error or {}
        raise AdmissionRefused(error["code"], error["message"], 5)
    events_url = reverse("run-events", kwargs={"run_id": brief.run_id}) if brief.run_id else None
    return Status(202, BriefAccepted(brief_id=brief.pk, run_id=brief.run_id, events_url=events_url))


@router.get(
    "/watchlists/{watchlist_id}/briefs",
    response={200: list[BriefOut], **ERRORS},
    description=f"The watchlist's briefs, newest first (at most {MAX_LISTED}).",
)
async def list_briefs(request: HttpRequest, watchlist_id: uuid.UUID):
    watchlist = await watchlist_or_404(request, watchlist_id)
    return [brief_out(brief) for brief in await request_db_call(selectors.briefs_of, watchlist, limit=MAX_LISTED)]


@router.get("/briefs/{brief_id}", response={200: BriefOut, **ERRORS})
async def get_brief(request: HttpRequest, brief_id: uuid.UUID):
    brief = await request_db_call(selectors.brief_for, request.auth, brief_id)
    if brief is None:
        raise ApiError(404, "not_found", "No such brief.")
    return brief_out(brief)
