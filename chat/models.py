"""Conversations, their messages, the research runs that answer them, API keys, watchlists and their briefs.

Every conversation and every watchlist belongs to one owner: a user (API key or logged-in session) or an
anonymous browser session. Messages and runs are owned through their conversation.
"""

from __future__ import annotations

import hashlib
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from chat.schedules import MAX_CRON_CHARS


class Conversation(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="conversations"
    )
    session_key = models.CharField(max_length=64, null=True, blank=True, db_index=True)
    title = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False, session_key__isnull=True)
                | Q(user__isnull=True, session_key__isnull=False),
                name="conversation_has_exactly_one_owner",
            )
        ]

    def __str__(self) -> str:
        return self.title or str(self.id)


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"

    class Status(models.TextChoices):
        COMPLETE = "complete"
        INCOMPLETE = "incomplete"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField()
    sources = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.COMPLETE)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["conversation", "created_at"])]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


def run_channel(run_id: uuid.UUID) -> str:
    """The django-eventstream channel carrying a run's events."""
    return f"run-{run_id}"


class ResearchRun(models.Model):
    """One answer being produced: its lifecycle, what the router did, and what it cost."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        ERROR = "error"
        CANCELLED = "cancelled"

    class Mode(models.TextChoices):
        AUTO = "auto"
        QUICK = "quick"
        RESEARCH = "research"

    FINISHED = (Status.DONE, Status.ERROR, Status.CANCELLED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="runs")
    user_message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="runs")
    answer = models.OneToOneField(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="produced_by"
    )
    requested_mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.AUTO)
    timezone = models.CharField(max_length=64, blank=True, help_text="The asker's IANA time zone, if given.")
    mode = models.CharField(max_length=16, blank=True, help_text="The path the router took: quick or research.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    cancel_requested = models.BooleanField(default=False)
    # Who answers the run. Each attempt (a first execution, a resume after a crash, a takeover that ends
    # the run) takes the next number; every write of an attempt is fenced by it, so a stale process can
    # change nothing once a newer attempt exists. The lease is renewed while the attempt lives.
    attempt = models.PositiveIntegerField(default=0)
    lease_owner = models.CharField(max_length=120, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    checkpoint = models.JSONField(
        default=dict, blank=True, help_text="The plan and finished rounds, from which a resumed attempt goes on."
    )
    # The database event store's counters (unused when events live in Redis).
    last_event_id = models.PositiveIntegerField(default=0)
    events_closed = models.BooleanField(default=False)
    plan = models.JSONField(default=dict, blank=True)
    rounds = models.JSONField(default=list, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    signals = models.JSONField(default=dict, blank=True)
    facts = models.JSONField(
        default=list, blank=True, help_text="Figures computed from the market data, each with its inputs."
    )
    charts = models.JSONField(default=list, blank=True, help_text="The run's chart events, as sent.")
    confidence = models.JSONField(
        default=dict, blank=True, help_text="Evidence confidence after the last round: score, components, shallow."
    )
    trace = models.JSONField(default=list, blank=True, help_text="One entry per research round.")
    verification = models.JSONField(
        default=list, blank=True, help_text="Per cited marker: supported, unsupported or unreachable."
    )
    error = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run {self.id} ({self.status})"

    @property
    def channel(self) -> str:
        return run_channel(self.id)

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED


class RunEvent(models.Model):
    """One stored event of a run (the database event store; with Redis, events live there instead)."""

    run = models.ForeignKey(ResearchRun, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=32)
    data = models.TextField(help_text="The event's JSON, as sent.")

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="run_event_seq_unique")]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.seq} {self.type}"


class ApiKey(models.Model):
    """A bearer key. Only a SHA-256 digest is stored: keys are random, so a slow hash buys nothing."""

    PREFIX = "frk_"  # every key starts so: anything else is not one of ours, and costs no query

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, help_text="The first characters of the key, to recognise it.")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @staticmethod
    def digest_of(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()


class Watchlist(models.Model):
    """Symbols followed on a schedule, and where their briefs go (docs/briefs.md). The fields are checked
    by chat.services.watchlist_input before they are stored; `next_run_at` is the schedule's next firing
    (a UTC instant, chat.schedules), kept for the scheduler to come."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="watchlists"
    )
    session_key = models.CharField(max_length=64, null=True, blank=True, db_index=True)
    name = models.CharField(max_length=100)
    symbols = models.JSONField(default=list, help_text="Yahoo symbols, upper-case, each once.")
    schedule = models.CharField(max_length=MAX_CRON_CHARS, help_text="A 5-field cron expression, read in `timezone`.")
    timezone = models.CharField(max_length=64, help_text="The IANA time zone the schedule is read in.")
    channels = models.JSONField(
        default=list,
        blank=True,
        help_text="Where briefs go: {type: webhook, url, secret} or {type: email, to}. Secrets are never sent back.",
    )
    next_run_at = models.DateTimeField(null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False, session_key__isnull=True)
                | Q(user__isnull=True, session_key__isnull=False),
                name="watchlist_has_exactly_one_owner",
            )
        ]

    def __str__(self) -> str:
        return self.name


class Brief(models.Model):
    """One brief of a watchlist: what changed for its symbols between `since` and `until`, found by the data
    tools, and the research run that wrote it up (none when nothing material changed). A scheduled brief
    names its slot (`scheduled_for`, the schedule's firing it answers): one brief per watchlist per slot,
    enforced by the unique constraint, whatever the number of processes that try to start it."""

    class Status(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    watchlist = models.ForeignKey(Watchlist, on_delete=models.CASCADE, related_name="briefs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING, db_index=True)
    scheduled_for = models.DateTimeField(null=True, blank=True, help_text="The schedule's firing; null: run on demand.")
    since = models.DateTimeField()
    until = models.DateTimeField()
    changes = models.JSONField(default=list, blank=True, help_text="[{symbol, kind, summary, source}], as found.")
    run = models.OneToOneField(
        ResearchRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="brief"
    )
    answer = models.TextField(blank=True)
    sources = models.JSONField(default=list, blank=True)
    error = models.JSONField(null=True, blank=True, help_text="{code, message} when the brief failed.")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["watchlist", "scheduled_for"], name="one_brief_per_watchlist_slot")
        ]


class Delivery(models.Model):
    """A brief's delivery to one of its watchlist's channels (as the channel was when the brief was made),
    with every attempt recorded; once `delivered`, never sent again."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RETRYING = "retrying"
        DELIVERED = "delivered"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    brief = models.ForeignKey(Brief, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.PositiveSmallIntegerField(help_text="The channel's index in the watchlist's channels.")
    kind = models.CharField(max_length=16, help_text="webhook or email")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempts = models.JSONField(
        default=list, blank=True, help_text="One entry per attempt: {at, outcome, status_code?, error?}."
    )
    next_attempt_at = models.DateTimeField(null=True, blank=True, db_index=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["channel"]
        constraints = [models.UniqueConstraint(fields=["brief", "channel"], name="one_delivery_per_brief_channel")]
