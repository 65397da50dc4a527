"""Admission control: whether an owner may make one more request, or start one more run, right now.

The owner is the caller: a user (API key or logged-in session) or an anonymous browser session. Three
limits, each answered 429 with a `Retry-After` and nothing stored:

- a rate of questions (`CHAT_RATE_LIMIT`), shared by the JSON API and `/v1/chat/completions`;
- a looser rate of any JSON API request (`CHAT_API_RATE_LIMIT`), which keeps polling clients in check;
- a cap on the owner's runs in flight, queued or running (`CHAT_MAX_CONCURRENT_RUNS`).

Rates are fixed windows counted by django-ratelimit in Django's cache (Redis when REDIS_URL is set, so
every process shares the counts; otherwise each process counts alone). Runs in flight are counted in the
database, which every process shares anyway.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Count, Min, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django_ratelimit.core import get_usage

from chat.callers import Caller
from chat.db_calls import request_db_call
from chat.models import ResearchRun
from chat.services.runs import reap_if_orphaned

logger = logging.getLogger(__name__)

QUESTIONS = "chat.questions"  # django-ratelimit groups: one counter per group and owner
API_REQUESTS = "chat.api"
# A run takes tens of seconds: there is no exact time at which a slot frees up, so ask for a short wait.
TOO_MANY_RUNS_RETRY_AFTER_S = 5
IN_FLIGHT = (ResearchRun.Status.QUEUED, ResearchRun.Status.RUNNING)


class AdmissionRefused(Exception):
    """The owner is over a limit (`code`: `rate_limited` or `too_many_runs`); nothing was stored."""

    def __init__(self, code: str, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s


def owner_key(caller: Caller) -> str:
    return f"user:{caller.user_id}" if caller.user_id is not None else f"session:{caller.session_key}"


def _count_request(request: HttpRequest, caller: Caller, group: str, rate: str) -> int | None:
    """Count this request in the owner's current window: seconds until the window ends if over `rate`."""
    try:
        usage = get_usage(request, group=group, key=lambda *_: owner_key(caller), rate=rate, increment=True)
    except Exception:
        # Django's Redis cache raises when Redis is down: admit, as RATELIMIT_FAIL_OPEN does for misses.
        logger.warning("rate limit %s not checked: the cache failed", group, exc_info=True)
        return None
    if usage is None or not usage["should_limit"]:
        return None
    return max(1, usage["time_left"])


def _check_rate(request: HttpRequest, caller: Caller, group: str, rate: str | None, what: str) -> None:
    if rate is None:
        return
    retry_after_s = _count_request(request, caller, group, rate)
    if retry_after_s is not None:
        raise AdmissionRefused(
            "rate_limited", f"Too many {what} (the limit is {rate}); try again in {retry_after_s} s.", retry_after_s
        )


def check_api_rate(request: HttpRequest, caller: Caller) -> None:
    """Count one JSON API request of the owner; AdmissionRefused when over `CHAT_API_RATE_LIMIT`. It
    blocks on the cache (Redis): call it off the event loop."""
    _check_rate(request, caller, API_REQUESTS, settings.CHAT_API_RATE_LIMIT, "requests")


def _in_flight(caller: Caller) -> QuerySet[ResearchRun]:
    return ResearchRun.objects.filter(status__in=IN_FLIGHT, **caller.owner_filter("conversation__"))


async def _check_runs_in_flight(caller: Caller) -> None:
    cap = settings.CHAT_MAX_CONCURRENT_RUNS
    if not cap or await request_db_call(_in_flight(caller).count) < cap:
        return
    # A run whose process died stays `running` until someone looks at it; look now, so it frees its slot.
    run_ids = await request_db_call(lambda: list(_in_flight(caller).values_list("id", flat=True)))
    for run_id in run_ids:
        await reap_if_orphaned(run_id)
    if await request_db_call(_in_flight(caller).count) < cap:
        return
    raise AdmissionRefused(
        "too_many_runs",
        f"{cap} of your answers are already in progress; wait for one to finish, or cancel one.",
        TOO_MANY_RUNS_RETRY_AFTER_S,
    )


async def admit_question(request: HttpRequest, caller: Caller) -> None:
    """Let the owner ask one more question, or raise AdmissionRefused. Call it before storing anything.

    Runs in flight are checked first, so a question turned away for them does not use up the rate.
    The check and the insert that follows are not one transaction: two questions arriving together can
    take the owner one run over the cap, which is harmless for a limit that protects capacity.
    """
    await _check_runs_in_flight(caller)
    await request_db_call(_check_rate, request, caller, QUESTIONS, settings.CHAT_RATE_LIMIT, "questions")


# --- what staff see -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunCounts:
    queued: int
    running: int


@dataclass(frozen=True)
class AdmissionLimits:
    rate: str | None
    api_rate: str | None
    max_concurrent_runs: int


@dataclass(frozen=True)
class AdmissionStatus:
    """Every owner's runs together: the queue's depth and age, and the limits in force."""

    runs: RunCounts
    oldest_queued_s: float | None
    oldest_running_s: float | None
    limits: AdmissionLimits
    backend: str
    workers: int | None  # queue backend: workers alive (a heartbeat within a lease)


async def may_see_status(caller: Caller) -> bool:
    """Only active staff users; anonymous sessions never."""
    if caller.user_id is None:
        return False
    return await get_user_model().objects.filter(pk=caller.user_id, is_active=True, is_staff=True).aexists()


def _age_s(since: datetime | None, now: datetime) -> float | None:
    return None if since is None else round((now - since).total_seconds(), 1)


async def admission_status() -> AdmissionStatus:
    now = timezone.now()
    queued = await ResearchRun.objects.filter(status=ResearchRun.Status.QUEUED).aaggregate(
        n=Count("pk"), oldest=Min("created_at")
    )
    running = await ResearchRun.objects.filter(status=ResearchRun.Status.RUNNING).aaggregate(
        n=Count("pk"), oldest=Min("started_at")
    )
    return AdmissionStatus(
        runs=RunCounts(queued=queued["n"], running=running["n"]),
        oldest_queued_s=_age_s(queued["oldest"], now),
        oldest_running_s=_age_s(running["oldest"], now),
        limits=AdmissionLimits(
            rate=settings.CHAT_RATE_LIMIT,
            api_rate=settings.CHAT_API_RATE_LIMIT,
            max_concurrent_runs=settings.CHAT_MAX_CONCURRENT_RUNS,
        ),
        backend=settings.RUNS_BACKEND,
        workers=await _live_workers() if settings.RUNS_BACKEND == "queue" else None,
    )


async def _live_workers() -> int:
    from procrastinate.contrib.django.models import ProcrastinateWorker

    from chat.services.leases import LEASE_SECONDS

    alive_since = timezone.now() - timedelta(seconds=LEASE_SECONDS)
    return await ProcrastinateWorker.objects.filter(last_heartbeat__gte=alive_since).acount()
