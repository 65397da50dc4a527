"""Who is calling: an API-key user, a logged-in user, or an anonymous browser session.

Bearer keys are checked first. Cookie callers are held to Django's CSRF check on unsafe methods, because
their browser attaches the cookie to any site's request; a request that carries neither a key nor a
session cookie cannot act on anyone's data, so it simply starts a new anonymous session.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest
from django.middleware.csrf import CsrfViewMiddleware, get_token

from chat.services.api_keys import authenticate_api_key

csrf_log = logging.getLogger("django.security.csrf")  # where Django's own middleware logs its refusals


class AuthenticationFailed(Exception):
    """A bearer key was given and is not valid (401)."""


class CsrfFailed(Exception):
    """A cookie-authenticated unsafe request failed Django's CSRF check (403)."""


@dataclass(frozen=True)
class Caller:
    user_id: int | None = None
    session_key: str | None = None

    def owner_filter(self, prefix: str = "") -> dict[str, object]:
        """Lookup arguments selecting what this caller owns, e.g. `owner_filter("conversation__")`."""
        if self.user_id is not None:
            return {f"{prefix}user_id": self.user_id}
        return {f"{prefix}session_key": self.session_key, f"{prefix}user__isnull": True}

    def owner_fields(self) -> dict[str, object]:
        """Field values that make a new conversation this caller's."""
        if self.user_id is not None:
            return {"user_id": self.user_id, "session_key": None}
        return {"user_id": None, "session_key": self.session_key}


def bearer_token(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or ""


class _CsrfCheck(CsrfViewMiddleware):
    """Django's own CSRF check (token, cookie, Origin and Referer), answering with its reason instead of
    its HTML failure page, as Django REST framework's session authentication does."""

    def _reject(self, request: HttpRequest, reason: str) -> str:  # type: ignore[override]
        csrf_log.warning("Forbidden (%s): %s", reason, request.path)
        return reason


def _check_csrf(request: HttpRequest) -> None:
    """The API views are exempt from the global middleware, so that bearer callers need no token; the
    check runs here instead, for cookie callers only."""
    if request.method in ("GET", "HEAD", "OPTIONS", "TRACE"):
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


def _session_caller(request: HttpRequest) -> Caller:
    get_token(request)  # hands the browser the CSRF cookie its unsafe requests must echo
    user = request.user
    if user.is_authenticated:
        return Caller(user_id=user.pk)
    if not settings.CHAT_ALLOW_ANONYMOUS:
        raise AuthenticationFailed("Sign in, or send 'Authorization: Bearer <key>'.")
    session = request.session
    if session.session_key is None:
        session.save()
    return Caller(session_key=session.session_key)


def resolve_caller_sync(request: HttpRequest) -> Caller:
    token = bearer_token(request)
    if token is None and "Authorization" in request.headers:
        # Silently treating a mistyped scheme as an anonymous session would scatter the client's data.
        raise AuthenticationFailed("Send the API key as 'Authorization: Bearer <key>'.")
    if token is not None:
        user = authenticate_api_key(token)
        if user is None:
            raise AuthenticationFailed("The API key is missing, revoked or unknown.")
        request.user = user
        return Caller(user_id=user.pk)
    _check_csrf(request)
    return _session_caller(request)
