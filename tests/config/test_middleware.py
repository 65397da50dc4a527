"""Django's middleware run their hooks on the event loop, and still do everything Django's do."""

from __future__ import annotations

import re

import httpx2
import pytest
from asgiref.sync import SyncToAsync
from django.contrib.auth import get_user_model
from django.utils.deprecation import MiddlewareMixin

from chat.models import Conversation


@pytest.fixture
def hops(monkeypatch) -> list[object]:
    """What the app hands to sync_to_async, in this process."""
    handed: list[object] = []
    original = SyncToAsync.__init__

    def recording(self, func, *args, **kwargs):
        handed.append(func)
        original(self, func, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__init__", recording)
    return handed


async def test_an_api_request_runs_no_middleware_hook_in_a_thread(api, hops):
    response = await api.get("/api/conversations")

    assert response.status_code == 200
    hooks = [func for func in hops if isinstance(getattr(func, "__self__", None), MiddlewareMixin)]
    assert hooks == []
    # The hooks did run: each middleware's header is there.
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"
    assert response.headers["Cross-Origin-Opener-Policy"] == "same-origin"


def test_a_session_login_and_an_admin_message_are_saved_through_the_asgi_app(live_server_url, transactional_db):
    """The session's save and the messages' storage are the hooks that need the database: they still run."""
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    conversation = Conversation.objects.create(user=root, title="Apple")
    with httpx2.Client(base_url=live_server_url, timeout=20) as browser:
        login_page = browser.get("/admin/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page.text).group(1)
        logged_in = browser.post(
            "/admin/login/?next=/admin/",
            data={"username": "root", "password": "pw", "csrfmiddlewaretoken": token},
            headers={"Referer": f"{live_server_url}/admin/login/"},
        )
        assert logged_in.status_code == 302 and logged_in.headers["Location"] == "/admin/"

        delete_url = f"/admin/chat/conversation/{conversation.pk}/delete/"
        confirm = browser.get(delete_url)
        assert confirm.status_code == 200  # the session kept the login
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', confirm.text).group(1)
        deleted = browser.post(
            delete_url,
            data={"post": "yes", "csrfmiddlewaretoken": token},
            headers={"Referer": f"{live_server_url}{delete_url}"},
        )
        assert deleted.status_code == 302, deleted.text[:500]
        changelist = browser.get(deleted.headers["Location"])

    assert "was deleted successfully" in changelist.text
    assert not Conversation.objects.filter(pk=conversation.pk).exists()


# --- static files and forwarded headers -----------------------------------------------------------------


async def test_the_pages_scripts_are_served_by_the_app_with_debug_off(settings, transactional_db):
    """As in production: DEBUG off, no proxy, no `runserver`. A Django ASGI app made now, since
    `config.asgi` wraps Django's development static handler around the one it made if DEBUG was on when
    some earlier test imported it."""
    from django.core.asgi import get_asgi_application

    assert settings.DEBUG is False
    transport = httpx2.ASGITransport(get_asgi_application())
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as browser:
        script = await browser.get("/static/chat/app.js")
        missing = await browser.get("/static/chat/no-such-file.js")

    assert script.status_code == 200
    assert "javascript" in script.headers["content-type"]
    assert "max-age" in script.headers["cache-control"]  # WhiteNoise's, not Django's development handler
    assert missing.status_code == 404


def test_a_static_file_is_found_without_a_thread_hop_per_request(live_server_url, hops):
    """Only a hit goes to a thread (WhiteNoise opens the file); the lookup itself is inline."""
    with httpx2.Client(base_url=live_server_url, timeout=20) as browser:
        assert browser.get("/api/nowhere").status_code == 404

    from whitenoise.middleware import WhiteNoiseMiddleware

    from config.middleware import StaticFilesMiddleware

    static = (StaticFilesMiddleware, WhiteNoiseMiddleware)
    assert not [func for func in hops if isinstance(getattr(func, "__self__", func), static)]


def forwarded(remote_addr: str, settings, **headers: str) -> tuple[bool, str]:
    """What the app makes of a request from `remote_addr`: whether it is HTTPS, and the client address."""
    from django.test import RequestFactory

    from chat.callers import client_address
    from config.middleware import ForwardedHeadersMiddleware

    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    request = RequestFactory().get("/", REMOTE_ADDR=remote_addr, **headers)
    return ForwardedHeadersMiddleware(lambda r: (r.is_secure(), client_address(r)))(request)


def test_forwarded_headers_are_dropped_unless_a_trusted_proxy_sent_them(settings):
    settings.TRUSTED_PROXIES = ["10.0.0.1"]
    headers = {"HTTP_X_FORWARDED_PROTO": "https", "HTTP_X_FORWARDED_FOR": "198.51.100.7"}

    assert forwarded("203.0.113.9", settings, **headers) == (False, "203.0.113.9")
    assert forwarded("10.0.0.1", settings, **headers) == (True, "198.51.100.7")


def test_with_no_trusted_proxy_every_forwarded_header_is_dropped(settings):
    settings.TRUSTED_PROXIES = []
    headers = {"HTTP_X_FORWARDED_PROTO": "https", "HTTP_X_FORWARDED_FOR": "198.51.100.7"}

    assert forwarded("127.0.0.1", settings, **headers) == (False, "127.0.0.1")
