"""Response bodies of the brief endpoints (they also make the OpenAPI document), and a brief as they show it."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from chat.models import Brief
from chat.schemas import SourceOut


class BriefAccepted(BaseModel):
    brief_id: uuid.UUID
    run_id: uuid.UUID | None = Field(description="The run writing the brief; null when nothing material changed.")
    events_url: str | None = Field(description="The run's events; null without a run.")


class ChangeSourceOut(BaseModel):
    url: str
    title: str
    publisher: str
    date: str | None = None
    form: str | None = Field(default=None, exclude_if=lambda value: value is None)
    accession: str | None = Field(default=None, exclude_if=lambda value: value is None)


class ChangeOut(BaseModel):
    symbol: str
    kind: Literal["price", "filing", "earnings", "analyst", "news"]
    summary: str
    source: ChangeSourceOut


class DeliveryOut(BaseModel):
    channel: Literal["webhook", "email"]
    status: Literal["pending", "retrying", "delivered", "failed"]
    attempts: int = Field(description="Attempts made so far.")
    delivered_at: datetime | None


class BriefOut(BaseModel):
    id: uuid.UUID
    watchlist_id: uuid.UUID
    status: Literal["running", "done", "failed"]
    since: datetime
    until: datetime
    changes: list[ChangeOut] = Field(description="What the data tools found, symbol by symbol.")
    run_id: uuid.UUID | None
    answer: str
    sources: list[SourceOut]
    deliveries: list[DeliveryOut]


def brief_out(brief: Brief) -> BriefOut:
    """The brief as the API shows it (its deliveries prefetched or read here)."""
    return BriefOut(
        id=brief.pk,
        watchlist_id=brief.watchlist_id,
        status=brief.status,
        since=brief.since,
        until=brief.until,
        changes=[ChangeOut.model_validate(change) for change in brief.changes],
        run_id=brief.run_id,
        answer=brief.answer,
        sources=[SourceOut.model_validate(source) for source in brief.sources],
        deliveries=[
            DeliveryOut(
                channel=delivery.kind,
                status=delivery.status,
                attempts=len(delivery.attempts),
                delivered_at=delivery.delivered_at,
            )
            for delivery in brief.deliveries.all()
        ],
    )
