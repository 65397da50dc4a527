"""Settings from the environment (12-factor). A `.env` file beside manage.py is read if present.

DEBUG is off unless DJANGO_DEBUG=1 asks for it (`make run` does): a server started without settings
must not show tracebacks to the world. With DEBUG off the server needs DJANGO_SECRET_KEY and
DJANGO_ALLOWED_HOSTS (it refuses to start without the key), and `manage.py check --deploy` is then clean.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from dotenv import load_dotenv

BASE_DIR = Path(__file__).resolve().parent.parent
load_dotenv(BASE_DIR / ".env")


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name, "")
    items = [item.strip() for item in value.split(",") if item.strip()]
    return items or default


DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY_MISSING = "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off."
# With DEBUG off and no key the setting stays empty: commands that sign nothing (migrate, ask, doctor,
# evaluate, create_api_key) still run, Django refuses any use of the empty key (a session, a CSRF token),
# and the server refuses to start (config/asgi.py), in one line naming the setting.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "").strip()
if not SECRET_KEY and DEBUG:
    SECRET_KEY = "dev-only-insecure-key-set-DJANGO_SECRET_KEY-in-production"
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])

INSTALLED_APPS = [
    "config.apps.AdminConfig",  # Django's admin, its login limited (chat/admin_site.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_eventstream",
    "ninja",
    "config.apps.ProjectConfig",  # registers the project's checks
    "chat",
]

MIDDLEWARE = [
    # Django's own, with their hooks on the event loop instead of a thread hop each (config/middleware.py).
    "config.middleware.ForwardedHeadersMiddleware",  # X-Forwarded-* only from TRUSTED_PROXIES
    "config.middleware.SecurityMiddleware",
    # WhiteNoise's file table, so that the page's scripts are served with DEBUG off and no proxy in front.
    "config.middleware.StaticFilesMiddleware",
    "config.middleware.SessionMiddleware",
    "config.middleware.CommonMiddleware",
    "config.middleware.CsrfViewMiddleware",
    "config.middleware.AuthenticationMiddleware",
    "config.middleware.MessageMiddleware",
    "config.middleware.XFrameOptionsMiddleware",
]
# Django finds its middleware by path; config/middleware.py runs those checks again for ours.
SILENCED_SYSTEM_CHECKS = ["security.W001", "security.W002", "security.W003"]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=0,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Runs write from a worker thread while requests read: WAL lets readers go on during a write, and
    # writers wait for the lock instead of failing. Tests use a file too: an in-memory database shared
    # between threads locks whole tables and fails at once instead of waiting.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        # synchronous=NORMAL: in WAL mode a commit no longer waits for a disk flush (a power cut may lose
        # the last commits, never corrupt the file), which is what lets hundreds of runs write at once.
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    test_database = Path(tempfile.gettempdir()) / f"research-chat-test-{os.getpid()}.sqlite3"
    DATABASES["default"]["TEST"] = {"NAME": str(test_database)}
IS_POSTGRES = DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
if IS_POSTGRES:
    # A pool per process: connections stay bounded however many requests, streams and runs are open
    # (an SSE stream returns its connection after the ownership check; runs borrow one per write).
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": int(os.environ.get("DATABASE_POOL_SIZE", "10")),
        "timeout": 20,
    }
    # The queue engine's tables; its migrations are PostgreSQL-only.
    INSTALLED_APPS.append("procrastinate.contrib.django")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The largest request body, in bytes: many times a question (8,000 characters) with its conversation, and
# read no further (config/asgi.py); past it, a 413 naming the limit (chat/request_bodies.py).
DATA_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024

REDIS_URL = os.environ.get("REDIS_URL", "").strip() or None
if REDIS_URL:
    import redis as _redis

    # A Redis that stops answering must not hang requests: bounded connects and reads.
    _REDIS_TIMEOUTS = {"socket_connect_timeout": 2, "socket_timeout": 5}
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": _REDIS_TIMEOUTS,
        }
    }
    _redis_url = _redis.connection.parse_url(REDIS_URL)
    EVENTSTREAM_REDIS = {k: v for k, v in _redis_url.items() if k in {"host", "port", "db", "password", "username"}}
    if _redis_url.get("connection_class") is _redis.SSLConnection:
        EVENTSTREAM_REDIS["ssl"] = True
    if "path" in _redis_url:
        EVENTSTREAM_REDIS["unix_socket_path"] = _redis_url["path"]
    EVENTSTREAM_REDIS["socket_connect_timeout"] = _REDIS_TIMEOUTS["socket_connect_timeout"]
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Where runs execute: "inprocess" (tasks on the web server's event loop; the embedded default) or "queue"
# (procrastinate jobs on PostgreSQL, run by `manage.py runworker` processes; events through Redis).
RUNS_BACKEND = os.environ.get("RUNS_BACKEND", "inprocess").strip().lower() or "inprocess"
if RUNS_BACKEND not in {"inprocess", "queue"}:
    raise ImproperlyConfigured("RUNS_BACKEND must be 'inprocess' or 'queue'.")
if RUNS_BACKEND == "queue" and not (IS_POSTGRES and REDIS_URL):
    raise ImproperlyConfigured("RUNS_BACKEND=queue needs PostgreSQL (DATABASE_URL) and Redis (REDIS_URL).")
# Attempts a run gets in all: a run whose worker dies is resumed until it has had this many.
RUNS_MAX_ATTEMPTS = int(os.environ.get("RUNS_MAX_ATTEMPTS", "3"))
# Workers run this many runs at once each (the research path is async I/O).
RUNS_WORKER_CONCURRENCY = int(os.environ.get("RUNS_WORKER_CONCURRENCY", "100"))
# Seconds a worker told to stop (SIGTERM) lets its runs finish before handing them over.
RUNS_SHUTDOWN_GRACE = float(os.environ.get("RUNS_SHUTDOWN_GRACE", "20"))
PROCRASTINATE_IMPORT_PATHS = ["chat.services.queue"]
PROCRASTINATE_AUTODISCOVER_MODULE_NAME = None

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# WhiteNoise serves the apps' static directories as found at start (no `collectstatic` step needed), and
# `collectstatic`'s output in STATIC_ROOT too when there is one.
WHITENOISE_USE_FINDERS = True

# Anonymous browser sessions may ask (and own their conversations) unless this is turned off.
CHAT_ALLOW_ANONYMOUS = env_bool("CHAT_ALLOW_ANONYMOUS", True)
# Keep anonymous sessions for two weeks.
SESSION_COOKIE_AGE = 60 * 60 * 24 * 14
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"

# --- Admission control (chat/services/admission.py) ---------------------------------------------------
# Per owner (a user, or an anonymous session). Rates are counted in the cache above by django-ratelimit,
# so they hold across processes only when REDIS_URL is set; in-flight runs are counted in the database.


def env_rate(name: str, default: str) -> str | None:
    """A rate such as '30/m' or '100/5m' (a count per s, m, h or d); 'off' turns the limit off."""
    import re

    value = os.environ.get(name, "").strip() or default
    if value.lower() == "off":
        return None
    if not re.fullmatch(r"[1-9]\d*/([1-9]\d*)?[smhd]", value):
        raise ImproperlyConfigured(f"{name} must be a rate such as '30/m' or '100/5m', or 'off'; got {value!r}.")
    return value


def env_count(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip() or str(default)
    if not value.isdigit():
        raise ImproperlyConfigured(f"{name} must be a whole number (0 turns the limit off); got {value!r}.")
    return int(value)


CHAT_RATE_LIMIT = env_rate("CHAT_RATE_LIMIT", "30/m")  # questions: /api messages and /v1/chat/completions
CHAT_API_RATE_LIMIT = env_rate("CHAT_API_RATE_LIMIT", "600/m")  # any /api or /v1 request, event streams included
CHAT_MAX_CONCURRENT_RUNS = env_count("CHAT_MAX_CONCURRENT_RUNS", 5)  # runs queued or running
CHAT_MAX_STREAMS_PER_OWNER = env_count("CHAT_MAX_STREAMS_PER_OWNER", 10)  # event streams open at once
# Per client address (IPv6 by /64), whoever the owner: a script that starts a new session for every
# question is held here. Many people behind one NAT share an address, hence looser than the owner's.
CHAT_ADDRESS_RATE_LIMIT = env_rate("CHAT_ADDRESS_RATE_LIMIT", "60/m")  # questions
CHAT_ADDRESS_SESSION_RATE_LIMIT = env_rate("CHAT_ADDRESS_SESSION_RATE_LIMIT", "30/h")  # new anonymous sessions
CHAT_AUTH_FAILURE_RATE_LIMIT = env_rate("CHAT_AUTH_FAILURE_RATE_LIMIT", "10/m")  # failed API key attempts
CHAT_MAX_STREAMS_PER_ADDRESS = env_count("CHAT_MAX_STREAMS_PER_ADDRESS", 40)
# The admin's login: wrong passwords per client address, and per username from every address together (a
# guesser with many addresses). Past either, that address or username gets 429 without its password checked.
ADMIN_LOGIN_ADDRESS_RATE_LIMIT = env_rate("ADMIN_LOGIN_ADDRESS_RATE_LIMIT", "10/15m")
ADMIN_LOGIN_USERNAME_RATE_LIMIT = env_rate("ADMIN_LOGIN_USERNAME_RATE_LIMIT", "5/15m")


def env_networks(name: str) -> list[str]:
    """A comma-separated list of IP addresses or networks (CIDR)."""
    import ipaddress

    networks = env_list(name, [])
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name}: {network!r} is not an IP address or network.") from exc
    return networks


# The reverse proxies in front of the app. Only a request from one of them has its client address read
# from X-Forwarded-For and its scheme from X-Forwarded-Proto; from anyone else those headers are dropped
# (config/middleware.py), and unset, the client is always the socket's peer.
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES")
# A cache that fails must not turn every question away: the limits protect capacity, not data.
RATELIMIT_FAIL_OPEN = True
# --- end of admission control ---------------------------------------------------------------------------

# --- Watchlists and briefs (docs/briefs.md) ---------------------------------------------------------------
# The smallest gap allowed between two firings of a watchlist's schedule, in seconds (equal is allowed).
BRIEFS_MIN_INTERVAL = env_count("BRIEFS_MIN_INTERVAL", 3600)
# Watchlists one owner may keep.
WATCHLISTS_MAX_PER_OWNER = env_count("WATCHLISTS_MAX_PER_OWNER", 20)
# 1 lets a webhook point at loopback/private addresses (tests only; otherwise they are refused, as the
# citation fetcher refuses them).
WEBHOOK_ALLOW_PRIVATE = env_bool("WEBHOOK_ALLOW_PRIVATE", False)
# The tokens of market data and filings a brief's research run is given to write from (0: no budget): the
# results past it are left out, news first (datascraper.briefs.research).
BRIEFS_MAX_TOKENS = env_count("BRIEFS_MAX_TOKENS", 30000)
# A move between two official closes smaller than this (in percent) is reported, but is not on its own
# worth a brief written by a model.
BRIEFS_PRICE_MOVE_PCT = float(os.environ.get("BRIEFS_PRICE_MOVE_PCT") or "2")
# A failed delivery waits BRIEFS_DELIVERY_BACKOFF seconds, then twice as long after each further failure,
# never 60 s or more (chat.services.delivery); each attempt has BRIEFS_DELIVERY_TIMEOUT seconds.
BRIEFS_DELIVERY_BACKOFF = float(os.environ.get("BRIEFS_DELIVERY_BACKOFF", "5"))
BRIEFS_DELIVERY_TIMEOUT = float(os.environ.get("BRIEFS_DELIVERY_TIMEOUT", "10"))

# E-mail (briefs' e-mail channels), with Django's names; the backend is Django's SMTP one.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = float(os.environ.get("EMAIL_TIMEOUT", "10"))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "briefs@localhost")

if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    if TRUSTED_PROXIES:
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django_eventstream": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "openai": {"level": "WARNING"},
        "procrastinate": {"level": "WARNING"},
    },
}
