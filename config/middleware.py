"""Django's middleware, with their hooks run on the event loop.

Under ASGI, `MiddlewareMixin` runs every `process_request`, `process_view` and `process_response` through
`sync_to_async`: for Django's usual stack that is 13 thread hops per request, each a round trip through the
event loop and a thread that the request starts for itself. Under load the loop is busy with runs and
streams, so a request waited for it 13 times (`benchmarks/request_cpu.py`: with the per-request threads of
the API's own queries, 16 round trips and about 9 ms of CPU for one `GET /api/conversations`; now 4 and 4).
The hooks of these middleware only read and write the request and the response in memory, so here they run
inline. The two that can touch the database do so in a thread, as
before, and only when they must: the session when it was changed and has to be saved, the messages when
some were added or read. Served synchronously (the test client, WSGI) they behave exactly as Django's.

Django's deploy checks find its middleware by dotted path, so they would take these for missing and skip
every check that depends on them (HSTS, SSL redirect, CSRF cookie, ...). Settings silence the three
"missing" warnings, and `check_security_middleware` runs Django's checks again with each class here named
as the Django class it extends.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware as DjangoMessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.core.checks import CheckMessage, Tags, register
from django.core.checks.security import base as security_checks
from django.core.checks.security import csrf as csrf_checks
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware as DjangoXFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware as DjangoCommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware as DjangoCsrfViewMiddleware
from django.middleware.security import SecurityMiddleware as DjangoSecurityMiddleware
from whitenoise.middleware import WhiteNoiseMiddleware

from chat.callers import is_trusted_proxy


class InlineHooks:
    """Mixed in before a `MiddlewareMixin` subclass whose hooks do no I/O of their own."""

    # What the `MiddlewareMixin` after it in the MRO provides.
    async_mode: bool
    get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]]

    def __init__(self, get_response) -> None:
        super().__init__(get_response)  # type: ignore[call-arg]  # the next class is the MiddlewareMixin
        process_view = getattr(super(), "process_view", None)
        if self.async_mode and process_view is not None:
            # The handler wraps a plain process_view in sync_to_async; a coroutine it calls as it is.
            async def inline_process_view(request, view_func, view_args, view_kwargs):
                return process_view(request, view_func, view_args, view_kwargs)

            self.process_view = inline_process_view

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.process_request(request) if hasattr(self, "process_request") else None
        response = response or await self.get_response(request)
        if not hasattr(self, "process_response"):
            return response
        if self.response_needs_io(request):
            return await sync_to_async(self.process_response, thread_sensitive=True)(request, response)
        return self.process_response(request, response)

    def response_needs_io(self, request: HttpRequest) -> bool:
        """Whether `process_response` may query the database for this request (then it runs in a thread)."""
        return False


class SecurityMiddleware(InlineHooks, DjangoSecurityMiddleware):
    pass


FORWARDED_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_X_FORWARDED_PROTO", "HTTP_X_FORWARDED_HOST", "HTTP_X_FORWARDED_PORT")


class ForwardedHeadersMiddleware:
    """Drops the `X-Forwarded-*` headers of a request that did not come from a trusted proxy, first of all,
    so that nothing after it (SECURE_PROXY_SSL_HEADER's scheme, the client address the limits count)
    believes what any client can write."""

    async_capable = True
    sync_capable = True

    def __init__(self, get_response) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest):
        if not is_trusted_proxy(request.META.get("REMOTE_ADDR")):
            for header in FORWARDED_HEADERS:
                request.META.pop(header, None)
        return self.get_response(request)


class StaticFilesMiddleware:
    """WhiteNoise, with its lookup on the event loop.

    WhiteNoise's middleware is synchronous: in this async stack Django would run it, and so every request,
    through a thread hop of its own. Its file table is a dict built at start, so the lookup runs inline
    here; only a hit goes to a thread, where WhiteNoise opens the file and answers (caching headers,
    compressed variants, ranges). In DEBUG it looks files up on disk on each request, in that thread too.
    """

    async_capable = True
    sync_capable = True

    def __init__(self, get_response) -> None:
        self.get_response = get_response
        with warnings.catch_warnings():
            # No `collectstatic` output is fine: the apps' static directories are served through the finders.
            warnings.filterwarnings("ignore", message="No directory at")
            self.whitenoise = WhiteNoiseMiddleware(get_response)
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest):
        if self.async_mode:
            return self.__acall__(request)
        return self.whitenoise(request)

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        if not request.path_info.startswith(self.whitenoise.static_prefix):
            return await self.get_response(request)
        if self.whitenoise.autorefresh:
            static_file = await sync_to_async(self.whitenoise.find_file)(request.path_info)
        else:
            static_file = self.whitenoise.files.get(request.path_info)
        if static_file is None:
            return await self.get_response(request)
        return await sync_to_async(self._serve)(static_file, request)

    def _serve(self, static_file, request: HttpRequest) -> HttpResponse:
        """WhiteNoise's answer, read whole in this thread. The page's files are small, and Django under
        ASGI would read a file response's synchronous iterator whole anyway, warning each time."""
        streamed = self.whitenoise.serve(static_file, request)
        try:
            response = HttpResponse(b"".join(streamed.streaming_content), status=streamed.status_code)
        finally:
            streamed.close()
        if "Content-Type" not in streamed:
            del response["Content-Type"]
        for header, value in streamed.items():
            response[header] = value
        return response


class SessionMiddleware(InlineHooks, DjangoSessionMiddleware):
    def response_needs_io(self, request: HttpRequest) -> bool:
        session = getattr(request, "session", None)
        return session is not None and (session.modified or settings.SESSION_SAVE_EVERY_REQUEST)


class CommonMiddleware(InlineHooks, DjangoCommonMiddleware):
    pass


class CsrfViewMiddleware(InlineHooks, DjangoCsrfViewMiddleware):
    pass


class AuthenticationMiddleware(InlineHooks, DjangoAuthenticationMiddleware):
    pass


class MessageMiddleware(InlineHooks, DjangoMessageMiddleware):
    def response_needs_io(self, request: HttpRequest) -> bool:
        # Storing messages loads the session's; untouched storage stores nothing.
        storage = getattr(request, "_messages", None)
        return storage is not None and (storage.used or storage.added_new)


class XFrameOptionsMiddleware(InlineHooks, DjangoXFrameOptionsMiddleware):
    pass


# Django's checks that look its middleware up by path; those three ids are silenced in settings.
SILENCED_CHECKS = ["security.W001", "security.W002", "security.W003"]
DJANGO_CHECKS = [
    security_checks.check_security_middleware,
    security_checks.check_xframe_options_middleware,
    security_checks.check_sts,
    security_checks.check_sts_include_subdomains,
    security_checks.check_sts_preload,
    security_checks.check_content_type_nosniff,
    security_checks.check_ssl_redirect,
    security_checks.check_xframe_deny,
    security_checks.check_referrer_policy,
    security_checks.check_cross_origin_opener_policy,
    csrf_checks.check_csrf_middleware,
    csrf_checks.check_csrf_cookie_secure,
]


def _django_path(path: str) -> str:
    if not path.startswith(f"{__name__}."):
        return path
    ours = globals()[path.rpartition(".")[2]]
    if not issubclass(ours, InlineHooks):
        return path
    django_class = ours.__mro__[2]  # after InlineHooks: Django's own
    return f"{django_class.__module__}.{django_class.__qualname__}"


@register(Tags.security, deploy=True)
def check_security_middleware(app_configs, **kwargs) -> list[CheckMessage]:
    original = settings.MIDDLEWARE
    settings.MIDDLEWARE = [_django_path(path) for path in original]
    try:
        messages = [message for check in DJANGO_CHECKS for message in check(app_configs)]
    finally:
        settings.MIDDLEWARE = original
    for message in messages:
        if message.id in SILENCED_CHECKS:  # the same finding, under an id the settings do not silence
            message.id = f"config.{message.id}"
    return messages
