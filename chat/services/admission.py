"""Admission control: whether a caller may make one more request, start one more run, or hold one more
event stream open, right now.

The owner is the caller: a user (API key or logged-in session) or an anonymous browser session. Anyone can
start a new session, and so a new owner with fresh counters, so the costly steps are limited per client
address too (chat.callers.client_address: IPv6 by /64). Each limit is answered 429 with a `Retry-After`
and nothing stored:

- per owner: a rate of questions (`CHAT_RATE_LIMIT`), shared by the JSON API and `/v1/chat/completions`;
  a looser rate of any request (`CHAT_API_RATE_LIMIT`: `/api`, `/v1` and opening an event stream), which
  keeps polling clients in check; a cap on runs in flight, queued or running (`CHAT_MAX_CONCURRENT_RUNS`);
  a cap on open event streams (`CHAT_MAX_STREAMS_PER_OWNER`);
- per address: a rate of questions (`CHAT_ADDRESS_RATE_LIMIT`), of new anonymous sessions
  (`CHAT_ADDRESS_SESSION_RATE_LIMIT`) and of wrong API keys (`CHAT_AUTH_FAILURE_RATE_LIMIT`: past it, no
  key from that address is even checked until the window ends), and a cap on open event streams
  (`CHAT_MAX_STREAMS_PER_ADDRESS`). A caller with no session yet (a cookieless reader) is counted by
  address for the API rate too;
- the admin's login (chat.admin_site): wrong passwords per address (`ADMIN_LOGIN_ADDRESS_RATE_LIMIT`) and
  per username (`ADMIN_LOGIN_USERNAME_RATE_LIMIT`, from any address): past either, no password for them is
  checked until the window ends.

Rates are fixed windows counted by django-ratelimit in Django's cache (Redis when REDIS_URL is set, so
every process shares the counts; otherwise each process counts alone). Open streams are counters in the
same cache. Runs in flight are counted in the database, which every process shares anyway.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.db.models import Count, Min, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django_ratelimit.core import get_usage

from chat.callers import (
    Caller,
    KeyRejected,
    bearer_token,
    client_address,
    resolve_caller_sync,
    start_session,
    wants_new_session,
)
from chat.db_calls import request_db_call
from chat.models import ResearchRun
from chat.services.runs import reap_if_orphaned

logger = logging.getLogger(__name__)

QUESTIONS = "chat.questions"  # django-ratelimit groups: one counter per group and owner or address
API_REQUESTS = "chat.api"
QUESTIONS_BY_ADDRESS = "chat.address.questions"
SESSIONS_BY_ADDRESS = "chat.address.sessions"
KEY_FAILURES_BY_ADDRESS = "chat.address.key_failures"
ADMIN_LOGIN_FAILURES_BY_ADDRESS = "admin.login.address"
ADMIN_LOGIN_FAILURES_BY_USERNAME = "admin.login.username"
# A run takes tens of seconds: there is no exact time at which a slot frees up, so ask for a short wait.
TOO_MANY_RUNS_RETRY_AFTER_S = 5
TOO_MANY_STREAMS_RETRY_AFTER_S = 5
# An open-stream count whose release was lost (a process killed mid-stream) expires after this long
# without a new stream of the same owner or address.
STREAM_COUNT_TTL_S = 3600
IN_FLIGHT = (ResearchRun.Status.QUEUED, ResearchRun.Status.RUNNING)


class AdmissionRefused(Exception):
    """The caller or its address is over a limit (`code`: `rate_limited`, `too_many_runs` or
    `too_many_streams`); nothing was stored."""

    def __init__(self, code: str, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s


def owner_key(caller: Caller) -> str:
    if caller.user_id is not None:
        return f"user:{caller.user_id}"
    if caller.session_key is not None:
        return f"session:{caller.session_key}"
    return address_key(caller.address)  # a cookieless reader: nobody else to count


def address_key(address: str) -> str:
    return f"address:{address}"


def _usage(request: HttpRequest | None, key: str, group: str, rate: str, *, increment: bool) -> dict | None:
    try:
        return get_usage(request, group=group, key=lambda *_: key, rate=rate, increment=increment)
    except Exception:
        # Django's Redis cache raises when Redis is down: admit, as RATELIMIT_FAIL_OPEN does for misses.
        logger.warning("rate limit %s not checked: the cache failed", group, exc_info=True)
        return None


def _refused(rate: str, what: str, time_left_s: int) -> AdmissionRefused:
    retry_after_s = max(1, time_left_s)
    return AdmissionRefused(
        "rate_limited", f"Too many {what} (the limit is {rate}); try again in {retry_after_s} s.", retry_after_s
    )


def _check_rate(request: HttpRequest | None, key: str, group: str, rate: str | None, what: str) -> None:
    """Count this request in the key's current window; AdmissionRefused if that takes it over `rate`."""
    if rate is None:
        return
    usage = _usage(request, key, group, rate, increment=True)
    if usage is not None and usage["should_limit"]:
        raise _refused(rate, what, usage["time_left"])


def check_api_rate(request: HttpRequest, caller: Caller) -> None:
    """Count one API request of the owner; AdmissionRefused when over `CHAT_API_RATE_LIMIT`. It
    blocks on the cache (Redis): call it off the event loop."""
    _check_rate(request, owner_key(caller), API_REQUESTS, settings.CHAT_API_RATE_LIMIT, "requests")


def _check_failures(request: HttpRequest, key: str, group: str, rate: str | None, what: str) -> None:
    """Refuse once `key` has had the rate's count of failures in this window (each counted by
    `_count_failure`): before the credential is even checked, so that guessing is as slow as the rate."""
    if rate is None:
        return
    usage = _usage(request, key, group, rate, increment=False)
    if usage is not None and usage["count"] >= usage["limit"]:
        raise _refused(rate, what, usage["time_left"])


def _count_failure(request: HttpRequest, key: str, group: str, rate: str | None) -> None:
    if rate is not None:
        _usage(request, key, group, rate, increment=True)


def _check_key_attempts(request: HttpRequest, address: str) -> None:
    """Refuse any key from an address that has sent `CHAT_AUTH_FAILURE_RATE_LIMIT` wrong ones in this
    window, whatever else the client does."""
    rate = settings.CHAT_AUTH_FAILURE_RATE_LIMIT
    _check_failures(request, address_key(address), KEY_FAILURES_BY_ADDRESS, rate, "wrong API keys from your address")


def _count_key_failure(request: HttpRequest, address: str) -> None:
    _count_failure(request, address_key(address), KEY_FAILURES_BY_ADDRESS, settings.CHAT_AUTH_FAILURE_RATE_LIMIT)


def _admin_login_limits(request: HttpRequest, username: str) -> list[tuple[str, str, str | None, str]]:
    """(key, group, rate, what) of the two counts an admin login attempt meets. Usernames are counted
    case-folded: a database whose collation ignores case would let `Admin` and `admin` guess one account."""
    return [
        (
            address_key(client_address(request)),
            ADMIN_LOGIN_FAILURES_BY_ADDRESS,
            settings.ADMIN_LOGIN_ADDRESS_RATE_LIMIT,
            "failed logins from your address",
        ),
        (
            f"username:{username.casefold()}",
            ADMIN_LOGIN_FAILURES_BY_USERNAME,
            settings.ADMIN_LOGIN_USERNAME_RATE_LIMIT,
            "failed logins for this username",
        ),
    ]


def check_admin_login(request: HttpRequest, username: str) -> None:
    """Let one more admin login attempt for `username` be checked, or raise AdmissionRefused (its address,
    or the username from any address, has had its share of wrong passwords in this window). It blocks on
    the cache: call it from a sync view (as the admin's are) or off the event loop."""
    for key, group, rate, what in _admin_login_limits(request, username):
        _check_failures(request, key, group, rate, what)


def count_admin_login_failure(request: HttpRequest, username: str) -> None:
    """Count a refused admin login against its address and its username."""
    for key, group, rate, _ in _admin_login_limits(request, username):
        _count_failure(request, key, group, rate)


def admit_caller_sync(request: HttpRequest) -> Caller:
    """Who is calling (chat.callers), under the limits that come before anything else: wrong keys and
    new sessions per address, then the owner's API rate. Raises AuthenticationFailed, CsrfFailed or
    AdmissionRefused. It blocks on the database and the cache: call it off the event loop."""
    address = client_address(request)
    if bearer_token(request):
        _check_key_attempts(request, address)
    try:
        caller = resolve_caller_sync(request)
    except KeyRejected:
        _count_key_failure(request, address)
        raise
    if wants_new_session(request, caller):
        rate = settings.CHAT_ADDRESS_SESSION_RATE_LIMIT
        _check_rate(request, address_key(address), SESSIONS_BY_ADDRESS, rate, "new sessions from your address")
        caller = start_session(request, caller)
    check_api_rate(request, caller)
    return caller


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
    await request_db_call(_check_question_rates, request, caller)


async def admit_unrequested_run(caller: Caller) -> None:
    """Let the owner start one more run that no request asks for (a watchlist's brief), or raise
    AdmissionRefused: the owner's runs in flight, then the owner's question rate. There is no address."""
    await _check_runs_in_flight(caller)
    await request_db_call(_check_rate, None, owner_key(caller), QUESTIONS, settings.CHAT_RATE_LIMIT, "questions")


def _check_question_rates(request: HttpRequest, caller: Caller) -> None:
    _check_rate(request, owner_key(caller), QUESTIONS, settings.CHAT_RATE_LIMIT, "questions")
    rate = settings.CHAT_ADDRESS_RATE_LIMIT
    _check_rate(request, address_key(caller.address), QUESTIONS_BY_ADDRESS, rate, "questions from your address")


# --- open event streams ---------------------------------------------------------------------------------


class StreamSlots:
    """The counts one open event stream holds (its owner's and its address's); `release()` once it ends."""

    def __init__(self, keys: list[str]) -> None:
        self._keys = keys

    def release(self) -> None:
        keys, self._keys = self._keys, []  # at most once, whoever calls it
        cache = _stream_cache()
        for key in keys:
            try:
                cache.decr(key)
            except ValueError:
                pass  # expired meanwhile (STREAM_COUNT_TTL_S): nothing left to give back
            except Exception:
                logger.warning("open stream count %s not released: the cache failed", key, exc_info=True)


def _stream_cache():
    return caches[getattr(settings, "RATELIMIT_USE_CACHE", "default")]


def _take(key: str) -> int | None:
    """One more open stream under `key`: the count now, or None if the cache failed (admitted then)."""
    cache = _stream_cache()
    try:
        cache.add(key, 0, STREAM_COUNT_TTL_S)
        count = cache.incr(key)
        cache.touch(key, STREAM_COUNT_TTL_S)
    except Exception:
        logger.warning("open stream count %s not checked: the cache failed", key, exc_info=True)
        return None
    return count


def open_stream(caller: Caller) -> StreamSlots:
    """Count one more event stream for the caller and its address, or raise AdmissionRefused
    (`too_many_streams`) with nothing counted. It blocks on the cache: call it off the event loop."""
    prefix = f"{getattr(settings, 'RATELIMIT_CACHE_PREFIX', 'rl:')}streams:"
    caps = [
        (owner_key(caller), settings.CHAT_MAX_STREAMS_PER_OWNER, "you have"),
        (address_key(caller.address), settings.CHAT_MAX_STREAMS_PER_ADDRESS, "your address has"),
    ]
    taken: list[str] = []
    for key, cap, who in caps:
        count = _take(prefix + key) if cap else None
        if count is None:
            continue
        taken.append(prefix + key)
        if count > cap:
            StreamSlots(taken).release()
            raise AdmissionRefused(
                "too_many_streams",
                f"{cap} event streams are open already ({who} that many at most); close one, or wait for a run to end.",
                TOO_MANY_STREAMS_RETRY_AFTER_S,
            )
    return StreamSlots(taken)


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
    max_streams_per_owner: int
    address_rate: str | None
    address_session_rate: str | None
    auth_failure_rate: str | None
    max_streams_per_address: int


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
            max_streams_per_owner=settings.CHAT_MAX_STREAMS_PER_OWNER,
            address_rate=settings.CHAT_ADDRESS_RATE_LIMIT,
            address_session_rate=settings.CHAT_ADDRESS_SESSION_RATE_LIMIT,
            auth_failure_rate=settings.CHAT_AUTH_FAILURE_RATE_LIMIT,
            max_streams_per_address=settings.CHAT_MAX_STREAMS_PER_ADDRESS,
        ),
        backend=settings.RUNS_BACKEND,
        workers=await live_workers() if settings.RUNS_BACKEND == "queue" else None,
    )


async def live_workers() -> int:
    """Queue workers alive: those whose heartbeat is within a lease."""
    from procrastinate.contrib.django.models import ProcrastinateWorker

    from chat.services.leases import LEASE_SECONDS

    alive_since = timezone.now() - timedelta(seconds=LEASE_SECONDS)
    return await ProcrastinateWorker.objects.filter(last_heartbeat__gte=alive_since).acount()
