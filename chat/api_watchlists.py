"""The watchlist endpoints: /api/watchlists and /api/watchlists/{id}, thin over the watchlist services.

Mounted on the API by config/urls.py. Every read and write is scoped to the caller: another owner's
watchlist is a 404. Refusals are the services' named codes (chat.services.watchlist_input); a channel of
the wrong shape is `invalid_channel` like one of the wrong value.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from django.http import HttpRequest
from ninja import Router, Status
from ninja.errors import ValidationError

from chat import selectors
from chat.api import ERRORS, ApiError, json_body, read_payload
from chat.db_calls import request_db_call
from chat.models import Watchlist
from chat.schemas import ErrorOut
from chat.services.watchlist_input import WatchlistRefused
from chat.services.watchlists import (
    check_room,
    checked_new,
    checked_patch,
    create_watchlist,
    delete_watchlist,
    update_watchlist,
)
from chat.watchlist_schemas import (
    EmailChannelOut,
    WatchlistIn,
    WatchlistOut,
    WatchlistPatch,
    WebhookChannelOut,
)

router = Router(tags=["watchlists"])
REFUSALS = {**ERRORS, 503: ErrorOut}


def watchlist_out(watchlist: Watchlist) -> WatchlistOut:
    """The watchlist as the API shows it: a webhook's secret is never sent back."""
    channels: list[WebhookChannelOut | EmailChannelOut] = [
        WebhookChannelOut(type="webhook", url=channel["url"], secret_set=bool(channel.get("secret")))
        if channel["type"] == "webhook"
        else EmailChannelOut(type="email", to=channel["to"])
        for channel in watchlist.channels
    ]
    return WatchlistOut(
        id=watchlist.id,
        name=watchlist.name,
        symbols=watchlist.symbols,
        schedule=watchlist.schedule,
        timezone=watchlist.timezone,
        channels=channels,
        next_run_at=watchlist.next_run_at,
        created_at=watchlist.created_at,
        updated_at=watchlist.updated_at,
    )


@contextmanager
def refusals_as_errors() -> Iterator[None]:
    """A refused watchlist as the API's error: its code and status, its message naming the field."""
    try:
        yield
    except WatchlistRefused as exc:
        raise ApiError(exc.status, exc.code, exc.message) from None


async def _payload(request: HttpRequest, model: type[WatchlistIn] | type[WatchlistPatch]):
    try:
        return await read_payload(request, model)
    except ValidationError as exc:
        first = exc.errors[0] if exc.errors else {}
        location = [str(part) for part in first.get("loc", ()) if part != "body"]
        if location[:1] == ["channels"]:
            # The union's branch name ("webhook", "email") is not part of the field's path.
            where = ".".join(part for part in location if part not in ("webhook", "email"))
            raise ApiError(400, "invalid_channel", f"{where}: {first.get('msg', 'invalid channel')}") from None
        raise


async def watchlist_or_404(request: HttpRequest, watchlist_id: uuid.UUID) -> Watchlist:
    watchlist = await request_db_call(selectors.watchlist_for, request.auth, watchlist_id)
    if watchlist is None:
        raise ApiError(404, "not_found", "No such watchlist.")
    return watchlist


@router.post(
    "",
    response={201: WatchlistOut, **REFUSALS},
    openapi_extra=json_body(WatchlistIn),
    description="Follow symbols on a schedule. Every symbol must be known to Yahoo Finance; the schedule's "
    "firings at least BRIEFS_MIN_INTERVAL seconds apart; a webhook public and signed with its secret.",
)
async def create_watchlist_view(request: HttpRequest):
    payload = await _payload(request, WatchlistIn)
    with refusals_as_errors():
        await request_db_call(check_room, request.auth)  # before the look-ups, which take time
        new = await checked_new(payload)
        watchlist = await request_db_call(create_watchlist, request.auth, new)
    return Status(201, watchlist_out(watchlist))


@router.get("", response={200: list[WatchlistOut], **ERRORS}, description="The caller's watchlists, newest first.")
async def list_watchlists(request: HttpRequest):
    watchlists = await request_db_call(list, selectors.watchlists_for(request.auth))
    return [watchlist_out(watchlist) for watchlist in watchlists]


@router.get("/{watchlist_id}", response={200: WatchlistOut, **ERRORS})
async def get_watchlist(request: HttpRequest, watchlist_id: uuid.UUID):
    return watchlist_out(await watchlist_or_404(request, watchlist_id))


@router.patch(
    "/{watchlist_id}",
    response={200: WatchlistOut, **REFUSALS},
    openapi_extra=json_body(WatchlistPatch),
    description="Change some fields, checked as on creation; `channels` replaces the list.",
)
async def patch_watchlist(request: HttpRequest, watchlist_id: uuid.UUID):
    payload = await _payload(request, WatchlistPatch)
    watchlist = await watchlist_or_404(request, watchlist_id)
    with refusals_as_errors():
        changes = await checked_patch(watchlist, payload)
    return watchlist_out(await request_db_call(update_watchlist, watchlist, changes))


@router.delete("/{watchlist_id}", response={204: None, **ERRORS})
async def delete_watchlist_view(request: HttpRequest, watchlist_id: uuid.UUID):
    if not await request_db_call(delete_watchlist, request.auth, watchlist_id):
        raise ApiError(404, "not_found", "No such watchlist.")
    return Status(204, None)
