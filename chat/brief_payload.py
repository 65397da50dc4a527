"""A brief as JSON, in the contract's shape (`GET /api/briefs/{id}`): one function for the API and for the
webhook's body, so what a receiver gets is what the API shows.

The webhook's body leaves out `deliveries`: they change while the brief is delivered, and a body that
stays the same on every attempt lets a receiver compare a retry with what it already has.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from chat.models import Brief, Delivery


def _instant(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def delivery_payload(delivery: Delivery) -> dict[str, Any]:
    """One channel's delivery: its index in the watchlist's channels, its kind, its status and every
    attempt ({at, outcome, status_code, error})."""
    return {
        "channel": delivery.channel,
        "kind": delivery.kind,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "delivered_at": _instant(delivery.delivered_at),
    }


def brief_payload(brief: Brief, deliveries: Iterable[Delivery] | None = None) -> dict[str, Any]:
    """The brief with `id` first. `deliveries` (the brief's Delivery rows) are rendered when given; without
    them (the webhook's body) the key is left out."""
    payload: dict[str, Any] = {
        "id": str(brief.id),
        "watchlist_id": str(brief.watchlist_id),
        "status": brief.status,
        "since": _instant(brief.since),
        "until": _instant(brief.until),
        "changes": brief.changes,
        "run_id": str(brief.run_id) if brief.run_id is not None else None,
        "answer": brief.answer,
        "sources": brief.sources,
    }
    if deliveries is not None:
        payload["deliveries"] = [delivery_payload(delivery) for delivery in deliveries]
    return payload
