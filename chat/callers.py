"""Who is calling: an API-key user, a logged-in user, or an anonymous browser session, and from where.

Bearer keys are checked first. Cookie callers are held to Django's CSRF check on unsafe methods, because
their browser attaches the cookie to any site's request; a request that carries neither a key nor a
session cookie cannot act on anyone's data. If it only reads, it owns nothing and no session is stored
for it (a script reading in a loop must not fill the session table); its first write starts a new
anonymous session, within the limit of new sessions per client address.

The client address is the socket's peer, or, for a request from one of TRUSTED_PROXIES, the nearest
address in X-Forwarded-For that is not a trusted proxy (`parse_address` reads both, ports and IPv4-mapped
forms included; config.middleware trusts the forwarded headers by the same reading). Limits count IPv6
clients by /64, the block one household or one server is given: counting single IPv6 addresses would give
one client 2^64 counters.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest
from django.middleware.csrf import CsrfViewMiddleware, get_token
from django.utils import timezone

from chat.models import ApiKey

csrf_log = logging.getLogger("django.security.csrf")  # where Django's own middleware logs its refusals
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


class AuthenticationFailed(Exception):
    """A bearer key was given and is not valid (401)."""


class CsrfFailed(Exception):
    """A cookie-authenticated unsafe request failed Django's CSRF check (403)."""


@dataclass(frozen=True)
class Caller:
    """The owner of what a request reads and writes. No user and no session: a cookieless reader, who
    owns nothing yet. `address` is the client's, as the limits count it (see `client_address`)."""

    user_id: int | None = None
    session_key: str | None = None
    address: str = ""

    @property
    def owns_nothing(self) -> bool:
        return self.user_id is None and self.session_key is None

    def owner_filter(self, prefix: str = "") -> dict[str, object]:
        """Lookup arguments selecting what this caller owns, e.g. `owner_filter("conversation__")`."""
        if self.user_id is not None:
            return {f"{prefix}user_id": self.user_id}
        if self.session_key is None:
            return {f"{prefix}pk__in": []}
        return {f"{prefix}session_key": self.session_key, f"{prefix}user__isnull": True}

    def owner_fields(self) -> dict[str, object]:
        """Field values that make a new conversation this caller's."""
        if self.user_id is not None:
            return {"user_id": self.user_id, "session_key": None}
        return {"user_id": None, "session_key": self.session_key}


Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_PORT = re.compile(r":[0-9]{1,5}")


def parse_address(value: str) -> Address | None:
    """An address as a socket peer or an `X-Forwarded-For` hop writes it: `198.51.100.7`, `2001:db8::1`,
    `fe80::1%eth0`, or with a port as some proxies append it (`198.51.100.7:5678`, `[2001:db8::1]:443`).
    An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`, how a dual-stack socket names an IPv4 peer) is the IPv4
    address it carries, so that it matches IPv4 networks. None for anything else (`unknown`, a name)."""
    text = value.strip()
    if text.startswith("["):
        text, bracket, port = text[1:].partition("]")
        if not bracket or (port and not _PORT.fullmatch(port)):
            return None
    elif text.count(":") == 1:
        text, port = text.split(":")
        if not _PORT.fullmatch(f":{port}"):
            return None
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


Network = ipaddress.IPv4Network | ipaddress.IPv6Network
IPV4_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")


def _as_ipv4(network: Network) -> Network:
    """An IPv4-mapped network (`::ffff:10.0.0.0/104`) as the IPv4 one it maps, as addresses are read."""
    if isinstance(network, ipaddress.IPv6Network) and network.subnet_of(IPV4_MAPPED):
        return ipaddress.IPv4Network((int(network.network_address) & 0xFFFF_FFFF, network.prefixlen - 96))
    return network


@lru_cache(maxsize=8)
def _networks(trusted: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(_as_ipv4(ipaddress.ip_network(network, strict=False)) for network in trusted)


def _is_trusted(address: Address) -> bool:
    return any(address in network for network in _networks(tuple(settings.TRUSTED_PROXIES)))


def is_trusted_proxy(address: str | None) -> bool:
    """Whether `address` is one of TRUSTED_PROXIES (empty: no proxy is trusted). config.middleware drops
    the forwarded headers of any other peer's request."""
    peer = parse_address(address or "")
    return peer is not None and _is_trusted(peer)


def client_address(request: HttpRequest) -> str:
    """The client's address as limits count it: an IPv4 address, or an IPv6 /64 (`2001:db8:1:2::/64`)."""
    address = parse_address(request.META.get("REMOTE_ADDR") or "")
    if address is not None and _is_trusted(address):
        # Each proxy appends the address it heard from: read from the right, past our own proxies.
        for hop in reversed(request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")):
            forwarded = parse_address(hop)
            if forwarded is None:
                break
            address = forwarded
            if not _is_trusted(address):
                break
    if address is None:
        return "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def bearer_token(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or ""


class _CsrfCheck(CsrfViewMiddleware):
    """Django's own CSRF check (token, cookie, Origin and Referer), answering with its reason instead of
    its HTML failure page, as Django REST framework's session authentication does."""

    def _reject(self, request: HttpRequest, reason: str) -> str:
        csrf_log.warning("Forbidden (%s): %s", reason, request.path)
        return reason


def _check_csrf(request: HttpRequest) -> None:
    """The API views are exempt from the global middleware, so that bearer callers need no token; the
    check runs here instead, for cookie callers only."""
    if request.method in SAFE_METHODS:
        return
    if settings.SESSION_COOKIE_NAME not in request.COOKIES:
        return
    request.csrf_processing_done = False
    check = _CsrfCheck(lambda r: None)
    check.process_request(request)
    reason = check.process_view(request, lambda r: None, (), {})
    if reason is not None:
        raise CsrfFailed(
            f"CSRF check failed: {reason} A browser session sends the csrftoken cookie's value (set by GET /) "
            "as the X-CSRFToken header; other clients use 'Authorization: Bearer <key>'."
        )


class KeyRejected(AuthenticationFailed):
    """A bearer key was sent and is unknown or revoked (the attempts admission counts per address)."""


def _session_caller(request: HttpRequest, address: str) -> Caller:
    get_token(request)  # hands the browser the CSRF cookie its unsafe requests must echo
    user = request.user
    if user.is_authenticated:
        return Caller(user_id=user.pk, address=address)
    if not settings.CHAT_ALLOW_ANONYMOUS:
        raise AuthenticationFailed("Sign in, or send 'Authorization: Bearer <key>'.")
    return Caller(session_key=request.session.session_key, address=address)


def wants_new_session(request: HttpRequest, caller: Caller) -> bool:
    """A cookieless write: the request that starts an anonymous session (admission limits how often)."""
    return caller.owns_nothing and request.method not in SAFE_METHODS


def start_session(request: HttpRequest, caller: Caller) -> Caller:
    """Store a new anonymous session (its cookie goes out with the response): the caller now owns it."""
    request.session.save()
    return Caller(session_key=request.session.session_key, address=caller.address)


# Recording every use would make each request a write; a few minutes of precision is enough.
KEY_USE_RESOLUTION = timedelta(minutes=5)


def _user_for_key(key: str) -> AbstractBaseUser | None:
    """The active user a live key belongs to, noting when the key was last used."""
    if not key.startswith(ApiKey.PREFIX) or len(key) > 200:
        return None
    api_key = (
        ApiKey.objects.select_related("user")
        .filter(digest=ApiKey.digest_of(key), revoked=False, user__is_active=True)
        .first()
    )
    if api_key is None:
        return None
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at > KEY_USE_RESOLUTION:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    return api_key.user


def resolve_caller_sync(request: HttpRequest) -> Caller:
    """The caller, on a database thread. A cookieless caller comes back owning nothing: see
    `wants_new_session`. Raises AuthenticationFailed (KeyRejected for a wrong key) or CsrfFailed."""
    address = client_address(request)
    token = bearer_token(request)
    if token is None and "Authorization" in request.headers:
        # Silently treating a mistyped scheme as an anonymous session would scatter the client's data.
        raise AuthenticationFailed("Send the API key as 'Authorization: Bearer <key>'.")
    if token is not None:
        user = _user_for_key(token)
        if user is None:
            raise KeyRejected("The API key is missing, revoked or unknown.")
        request.user = user
        return Caller(user_id=user.pk, address=address)
    _check_csrf(request)
    return _session_caller(request, address)
