"""ASGI entry point (uvicorn config.asgi:application). Runs are background tasks on this server's loop.

Django's handler refuses the ASGI `lifespan` scope, so `MarketDataLifespan` answers it: at startup it starts
the market data server and warms the model client, and completes only once the server answers (at most
`MARKET_DATA_WARM_TIMEOUT`; past it, or if the server cannot start, it serves anyway and logs why), so
uvicorn accepts no question the process is not ready for: the first question pays neither the server's
~1.5 s start nor the first model call's type building. With `RUNS_BACKEND=queue` the workers run the
research, so they do this instead. Then it freezes what the start built out of the garbage collector's
passes (`freeze_startup_objects`). At shutdown it stops the server. A lifespan hook rather than a start at
import: importing this module (tests, tools) spawns nothing, and the server starts in the serving process,
after any fork. A server without lifespan support (`--lifespan off`, daphne) starts it on the first call.
With `BRIEFS_SCHEDULER=1` (and runs answered in-process) the startup also starts the briefs' scheduler on
this loop, and the shutdown lets its look under way end (chat.services.brief_scheduler).
"""

import asyncio
import gc
import os

import django
from django.conf import settings
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.asgi import ASGIHandler

from datascraper.providers.lifecycle import start_model_check
from datascraper.providers.warm_up import warm_up_models
from datascraper.research_engine.data.market_data_client import close_market_data_client, start_market_data

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def refuse_to_serve_misconfigured() -> None:
    """A server on bad settings exits in one line naming the setting, not a traceback. Commands may run
    without a secret key (config/settings.py); a server, whose sessions and CSRF tokens sign with it, may not."""
    try:
        if not settings.SECRET_KEY:
            raise ImproperlyConfigured(settings.SECRET_KEY_MISSING)
    except ImproperlyConfigured as exc:
        message = settings.SECRET_KEY_MISSING if "SECRET_KEY" in str(exc) else str(exc)
        raise SystemExit(f"Refusing to serve: {message}") from None


def freeze_startup_objects() -> None:
    """What the process built to start (Django, the SDKs' types: some 200,000 objects) lives as long as it
    does; frozen, the collector's full passes leave it out. Each would otherwise cost about 140 ms, on the
    event loop whenever the allocations of a request or a run set one off (parsing a body can)."""
    gc.collect()
    gc.freeze()


class MarketDataLifespan:
    """Wraps the app: answers `lifespan` scopes, passes every other scope on."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "lifespan":
            return await self.app(scope, receive, send)
        scheduler = None
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                start_model_check()  # in the background: a slow provider never holds the start
                if settings.RUNS_BACKEND == "inprocess":  # with the queue, the workers run the research
                    # The models warm on this loop while the server starts; neither can fail the startup.
                    await asyncio.gather(start_market_data(), warm_up_models())
                freeze_startup_objects()
                # Imported here: the scheduler's modules need the apps, which are set up after this module's imports.
                from chat.services.brief_scheduler import start_in_process_scheduler

                scheduler = start_in_process_scheduler()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if scheduler is not None:
                    await scheduler.stop()
                await close_market_data_client()
                await send({"type": "lifespan.shutdown.complete"})
                return


class BodyCappedASGIHandler(ASGIHandler):
    """Django's ASGI handler, reading a request body no further than `DATA_UPLOAD_MAX_MEMORY_SIZE`.

    Django's reads every body whole (spooled to disk past 2.5 MB) before the request exists, and measures
    it only when a view reads it. This one stops one byte past the limit: `request.body` then raises
    RequestDataTooBig (Django measures what was spooled), which the views answer with a 413 in their own
    shape, and what the client sends after that is dropped as it comes, until uvicorn has sent the answer
    and discards the rest itself.
    """

    async def handle(self, scope, receive, send):
        await super().handle(scope, CappedBody(receive, settings.DATA_UPLOAD_MAX_MEMORY_SIZE), send)


class CappedBody:
    """An ASGI `receive` whose request body ends one byte past `limit` (None: no limit)."""

    def __init__(self, receive, limit: int | None) -> None:
        self._receive = receive
        self._allowed = None if limit is None else limit + 1
        self._cut = False

    async def __call__(self):
        while True:
            message = await self._receive()
            if message["type"] != "http.request" or self._allowed is None:
                return message
            if self._cut:
                continue  # the rest of a body cut short: Django's handler now waits only for a disconnect
            body = message.get("body", b"")
            if len(body) < self._allowed:
                self._allowed -= len(body)
                return message
            self._cut = True
            return {"type": "http.request", "body": body[: self._allowed], "more_body": False}


refuse_to_serve_misconfigured()
django.setup(set_prefix=False)  # as django.core.asgi.get_asgi_application does
django_application: ASGIHandler = BodyCappedASGIHandler()

if settings.DEBUG:
    # `runserver` serves static files in development, uvicorn does not: the chat page needs its scripts.
    django_application = ASGIStaticFilesHandler(django_application)

application = MarketDataLifespan(django_application)
