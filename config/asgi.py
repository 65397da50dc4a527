"""ASGI entry point (uvicorn config.asgi:application). Runs are background tasks on this server's loop.

Django's handler refuses the ASGI `lifespan` scope, so `MarketDataLifespan` answers it: at startup it starts
the market data server and warms the model client, and completes only once the server answers (at most
`MARKET_DATA_WARM_TIMEOUT`; past it, or if the server cannot start, it serves anyway and logs why), so
uvicorn accepts no question the process is not ready for: the first question pays neither the server's
~1.5 s start nor the first model call's type building. With `RUNS_BACKEND=queue` the workers run the
research, so they do this instead. At shutdown it stops the server. A lifespan hook rather than a start at
import: importing this module (tests, tools) spawns nothing, and the server starts in the serving process,
after any fork. A server without lifespan support (`--lifespan off`, daphne) starts it on the first call.
"""

import asyncio
import os

from django.conf import settings
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application
from django.core.exceptions import ImproperlyConfigured

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


class MarketDataLifespan:
    """Wraps the app: answers `lifespan` scopes, passes every other scope on."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "lifespan":
            return await self.app(scope, receive, send)
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                start_model_check()  # in the background: a slow provider never holds the start
                if settings.RUNS_BACKEND == "inprocess":  # with the queue, the workers run the research
                    # The models warm on this loop while the server starts; neither can fail the startup.
                    await asyncio.gather(start_market_data(), warm_up_models())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await close_market_data_client()
                await send({"type": "lifespan.shutdown.complete"})
                return


refuse_to_serve_misconfigured()
application = get_asgi_application()

if settings.DEBUG:
    # `runserver` serves static files in development, uvicorn does not: the chat page needs its scripts.
    application = ASGIStaticFilesHandler(application)

application = MarketDataLifespan(application)
