"""Request and response bodies of the watchlist endpoints (they also make the OpenAPI document).

Only the shape is checked here; what the values may be (known symbols, a cron that fires often enough but
not too often, a public webhook) is chat.services.watchlist_input's, which answers with named codes.
A webhook's secret goes in and never comes out: a watchlist read back says `secret_set` instead.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_SECRET_CHARS = 256


class WebhookChannelIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["webhook"]
    url: str = Field(max_length=2000, description="An http(s) URL on a public address.")
    secret: str | None = Field(
        default=None,
        max_length=MAX_SECRET_CHARS,
        description="The key of the body's HMAC-SHA256 signature (X-Signature-256). Required, except in a PATCH "
        "that keeps a webhook's URL: its stored secret is kept.",
    )


class EmailChannelIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["email"]
    to: str = Field(max_length=254, description="One e-mail address.")


ChannelIn = Annotated[WebhookChannelIn | EmailChannelIn, Field(discriminator="type")]


class WatchlistIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="1 to 100 characters after trimming.")
    symbols: list[str] = Field(description="1 to 50 Yahoo Finance symbols (AAPL, BRK-B, MC.PA); each must be known.")
    schedule: str = Field(description="A 5-field cron expression (minute hour day month weekday), e.g. '30 7 * * 1-5'.")
    timezone: str = Field(default="UTC", description="The IANA time zone the schedule is read in, e.g. Europe/Paris.")
    channels: list[ChannelIn] = Field(default_factory=list, description="Where briefs are delivered.")


class WatchlistPatch(BaseModel):
    """The fields to change; those left out stay as they are. `channels` replaces the whole list."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    symbols: list[str] | None = None
    schedule: str | None = None
    timezone: str | None = None
    channels: list[ChannelIn] | None = None


class WebhookChannelOut(BaseModel):
    type: Literal["webhook"]
    url: str
    secret_set: bool = Field(description="A secret is stored; it is never returned.")


class EmailChannelOut(BaseModel):
    type: Literal["email"]
    to: str


class WatchlistOut(BaseModel):
    id: uuid.UUID
    name: str
    symbols: list[str]
    schedule: str
    timezone: str
    channels: list[WebhookChannelOut | EmailChannelOut]
    next_run_at: datetime | None = Field(description="The schedule's next firing (UTC).")
    created_at: datetime
    updated_at: datetime
