"""Request and response bodies of the HTTP API (they also make the OpenAPI document)."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator

from datascraper.providers.lifecycle import ModelLifecycleReport
from datascraper.schemas import Chart, CitationCheck, DomainType, Fact
from datascraper.trace_schemas import RunConfidence, TraceEntry

MAX_QUESTION_CHARS = 8000


def known_timezone(name: str) -> str:
    """`name` if it is an IANA time zone this machine knows; ValueError otherwise."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r}; use an IANA name such as 'America/New_York'") from None
    return name


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorDetail


class ConversationIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(default="", max_length=200)


class ConversationOut(BaseModel):
    id: uuid.UUID
    title: str
    created_at: datetime


class SourceOut(BaseModel):
    n: int
    title: str
    url: str
    kind: Literal["web", "market_data", "filing"]
    as_of: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,  # as in the run's `sources` event
        description="Market data: the time its figures describe (ISO date, or date-time for a quote).",
    )
    published: date | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Web: the day the page was published, where its address says.",
    )
    domain_type: DomainType | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Web: who publishes it: regulator, exchange, company_ir, government, academic, major_news, "
        "blog or other.",
    )
    form: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Filing: the SEC form, e.g. 10-K, 10-Q, 8-K or 4.",
    )
    period: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Filing: the period it reports on: a fiscal label (FY2024, Q1 FY2025), or the ISO day of "
        "an 8-K's event or a Form 4's trade.",
    )
    filed: date | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Filing: the day it was filed.",
    )


class MessageOut(BaseModel):
    id: uuid.UUID
    role: Literal["user", "assistant"]
    content: str
    sources: list[SourceOut]
    status: Literal["complete", "incomplete"]
    run_id: uuid.UUID | None = Field(
        description="Assistant messages: the run whose answer this is (its charts, confidence and checks are "
        "at GET /api/runs/{run_id}); null for questions."
    )
    created_at: datetime


class ConversationDetailOut(ConversationOut):
    messages: list[MessageOut]


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str
    mode: Literal["auto", "quick", "research"] = "auto"
    timezone: str | None = Field(
        default=None,
        max_length=64,
        description="The asker's IANA time zone (e.g. Europe/Paris), so that 'today' and 'last quarter' are theirs.",
    )

    @field_validator("content")
    @classmethod
    def _trimmed_and_bounded(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("content must not be empty")
        if len(value) > MAX_QUESTION_CHARS:
            raise ValueError(f"content must be at most {MAX_QUESTION_CHARS} characters")
        return value

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        return None if value is None else known_timezone(value)


class MessageAccepted(BaseModel):
    message_id: uuid.UUID
    run_id: uuid.UUID
    events_url: str


class RunOut(BaseModel):
    id: uuid.UUID
    conversation_id: uuid.UUID
    status: Literal["queued", "running", "done", "error", "cancelled"]
    requested_mode: Literal["auto", "quick", "research"]
    mode: str
    plan: dict
    rounds: list
    timings: dict
    usage: dict
    signals: dict
    facts: list[Fact] = Field(description="Figures computed in code from the market data, each with its inputs.")
    charts: list[Chart] = Field(description="The run's `chart` events, as sent, so a reopened answer draws them again.")
    verification: list[CitationCheck] = Field(
        description="Each [n] marker of the answer checked against its source; empty when not verified."
    )
    confidence: RunConfidence | None = Field(
        description="Research runs: the evidence confidence after the last round (score and components in 0-1, "
        "shallow) and how it was reached; null for quick answers."
    )
    trace: list[TraceEntry] = Field(description="Research runs: one entry per round.")
    error: ErrorDetail | None
    message_id: uuid.UUID | None = Field(description="The stored answer, once there is one.")
    created_at: datetime
    finished_at: datetime | None


class Accepted(BaseModel):
    status: str


class RunCountsOut(BaseModel):
    queued: int
    running: int


class AdmissionLimitsOut(BaseModel):
    rate: str | None = Field(description="Questions per owner, e.g. '30/m'; null when off.")
    api_rate: str | None = Field(description="Any API request per owner; null when off.")
    max_concurrent_runs: int = Field(description="Runs queued or running per owner; 0 when off.")
    max_streams_per_owner: int = Field(description="Event streams open at once per owner; 0 when off.")
    address_rate: str | None = Field(description="Questions per client address (IPv6 by /64); null when off.")
    address_session_rate: str | None = Field(description="New anonymous sessions per client address; null when off.")
    auth_failure_rate: str | None = Field(description="Wrong API keys per client address; null when off.")
    max_streams_per_address: int = Field(description="Event streams open at once per client address; 0 when off.")


class StatusOut(BaseModel):
    runs: RunCountsOut = Field(description="Every owner's runs in flight: the queue's depth and the runs answering.")
    oldest_queued_s: float | None = Field(description="Age of the oldest queued run, in seconds.")
    oldest_running_s: float | None = Field(description="Time since the longest-running run started, in seconds.")
    limits: AdmissionLimitsOut
    backend: str = Field(description="Where runs execute: 'inprocess' or 'queue'.")
    workers: int | None = Field(description="Queue backend: workers alive (null in-process).")
    models: ModelLifecycleReport | None = Field(
        default=None,
        description="This process's last check of the configured models against the provider's list (shutdown "
        "dates, models no longer served); null before the first check or without a key.",
    )
