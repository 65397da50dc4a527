"""Response bodies of the brief endpoints (they also make the OpenAPI document), and a brief as they show it:
the API's answer and the webhook's body are one shape."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from chat.models import Brief, Delivery
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


class AttemptOut(BaseModel):
    at: datetime
    outcome: Literal["delivered", "temporary_failure", "permanent_failure"]
    status_code: int | None = Field(description="The HTTP status, or the SMTP reply code; null when nothing answered.")
    error: str | None = Field(description="A short code, with at most 200 characters of what the far end said.")


class DeliveryOut(BaseModel):
    channel: Literal["webhook", "email"]
    index: int = Field(description="The channel's place in the watchlist's channels.")
    status: Literal["pending", "retrying", "delivered", "failed"]
    attempts: int = Field(description="Attempts made so far.")
    attempt_log: list[AttemptOut] = Field(description="Each attempt, oldest first.")
    delivered_at: datetime | None


class BriefError(BaseModel):
    code: str
    message: str


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
    error: BriefError | None = Field(description="Why a failed brief failed (a limit's code among them); else null.")


def brief_out(brief: Brief, deliveries: Iterable[Delivery] | None = None) -> BriefOut:
    """The brief as the API shows it, with its deliveries (given, or read here)."""
    rows = brief.deliveries.all() if deliveries is None else deliveries
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
        error=BriefError.model_validate(brief.error) if brief.error else None,
        deliveries=[
            DeliveryOut(
                channel=row.kind,
                index=row.channel,
                status=row.status,
                attempts=len(row.attempts),
                attempt_log=[AttemptOut.model_validate(attempt) for attempt in row.attempts],
                delivered_at=row.delivered_at,
            )
            for row in rows
        ],
    )


def webhook_body(brief: Brief) -> bytes:
    """The webhook's body: the brief exactly as the API shows it, `id` first, without `deliveries` (they
    change while it is delivered; the body stays the same bytes on every attempt)."""
    return brief_out(brief, deliveries=()).model_dump_json(exclude={"deliveries"}).encode()
