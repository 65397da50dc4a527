"""ASGI entry point (uvicorn config.asgi:application). Runs are background tasks on this server's loop."""

import os

from django.conf import settings
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_asgi_application()

if settings.DEBUG:
    # `runserver` serves static files in development, uvicorn does not: the chat page needs its scripts.
    application = ASGIStaticFilesHandler(application)
