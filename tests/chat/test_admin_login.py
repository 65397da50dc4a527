"""The admin's login is limited per client address and per username (issue 29): past either, the attempt is
answered 429 with the reason, without its password being checked; once the window ends, the right password
gets in again. Real requests through Django's test client, each from the socket peer it names."""

from __future__ import annotations

import time
from types import SimpleNamespace

import django_ratelimit.core
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.chat.test_abuse_limits import app_client

PASSWORD = "correct horse battery staple"

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(limits) -> str:
    limits(ADMIN_LOGIN_ADDRESS_RATE_LIMIT="3/h", ADMIN_LOGIN_USERNAME_RATE_LIMIT="2/h")
    get_user_model().objects.create_superuser("root", "root@example.com", PASSWORD)
    get_user_model().objects.create_superuser("ops", "ops@example.com", PASSWORD)
    return "root"


def log_in(username: str, password: str, *, address: str):
    """One login attempt at /admin/login/ from `address`, in a browser of its own."""
    return Client().post(
        "/admin/login/?next=/admin/", {"username": username, "password": password}, REMOTE_ADDR=address
    )


def assert_locked_out(response, reason: str) -> int:
    assert response.status_code == 429
    assert "_auth_user_id" not in response.client.session
    page = response.content.decode()
    assert "Too many failed logins" in page and reason in page
    retry_after = int(response["Retry-After"])
    assert retry_after > 0
    return retry_after


def test_a_wrong_password_shows_the_form_again_and_the_right_one_logs_in(staff: str) -> None:
    wrong = log_in(staff, "guess", address="198.51.100.1")
    right = log_in(staff, PASSWORD, address="198.51.100.1")

    assert wrong.status_code == 200 and "Please enter the correct username and password" in wrong.content.decode()
    assert right.status_code == 302 and right["Location"] == "/admin/"
    assert right.client.session["_auth_user_id"]


def test_wrong_passwords_from_one_address_lock_that_address_out(staff: str) -> None:
    guesses = [log_in(name, "guess", address="198.51.100.7") for name in ("root", "ops", "nobody")]

    locked = log_in(staff, PASSWORD, address="198.51.100.7")  # the right password, from there: not checked
    elsewhere = log_in("ops", PASSWORD, address="203.0.113.9")

    assert [r.status_code for r in guesses] == [200, 200, 200]
    # django-ratelimit's windows are fixed (their start offset per key), so the time left is anywhere in the hour
    assert assert_locked_out(locked, "from your address") <= 3600
    assert elsewhere.status_code == 302


def test_wrong_passwords_for_one_username_lock_it_out_from_every_address(staff: str) -> None:
    guesses = [log_in("Root", "guess", address=f"198.51.100.{n}") for n in (20, 21)]

    locked = log_in(staff, PASSWORD, address="203.0.113.50")  # a fresh address, the same name (any case)
    other_name = log_in("ops", PASSWORD, address="198.51.100.20")

    assert [r.status_code for r in guesses] == [200, 200]
    assert_locked_out(locked, "for this username")
    assert other_name.status_code == 302


def test_ipv6_guesses_count_by_their_64(staff: str) -> None:
    for n in range(3):
        log_in(f"user{n}", "guess", address=f"2001:db8:7:1::{n + 1}")

    locked = log_in(staff, PASSWORD, address="2001:db8:7:1:ffff::9")

    assert_locked_out(locked, "from your address")


def test_after_the_window_the_right_password_logs_in_again(staff: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(3):
        log_in(f"user{n}", "guess", address="198.51.100.30")
    retry_after = assert_locked_out(log_in(staff, PASSWORD, address="198.51.100.30"), "from your address")

    later = time.time() + retry_after + 1
    monkeypatch.setattr(django_ratelimit.core, "time", SimpleNamespace(time=lambda: later))
    again = log_in(staff, PASSWORD, address="198.51.100.30")

    assert again.status_code == 302 and again.client.session["_auth_user_id"]


@pytest.mark.django_db(transaction=True)
async def test_behind_a_trusted_proxy_each_forwarded_client_is_counted_apart(limits, settings) -> None:
    """Through the ASGI app, the CSRF check and the proxy's X-Forwarded-For as in production: the address
    counted is the client's (chat.callers.client_address), not the proxy's that every client shares."""
    limits(ADMIN_LOGIN_ADDRESS_RATE_LIMIT="1/h", ADMIN_LOGIN_USERNAME_RATE_LIMIT="off")
    settings.TRUSTED_PROXIES = ["10.0.0.0/24"]
    await get_user_model().objects.acreate_superuser("root", "root@example.com", PASSWORD)

    async def attempt(client_ip: str, password: str) -> int:
        async with app_client("10.0.0.1") as browser:
            forwarded = {"X-Forwarded-For": client_ip}
            await browser.get("/admin/login/", headers=forwarded)
            form = {"username": "root", "password": password, "csrfmiddlewaretoken": browser.cookies["csrftoken"]}
            return (await browser.post("/admin/login/?next=/admin/", data=form, headers=forwarded)).status_code

    statuses = [
        await attempt("198.51.100.7", "guess"),
        await attempt("198.51.100.7", PASSWORD),
        await attempt("192.0.2.1", PASSWORD),
    ]

    assert statuses == [200, 429, 302]
