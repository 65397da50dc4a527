"""API keys: issued by a command, stored only as a digest, checked on every bearer request."""

from __future__ import annotations

import hashlib
from io import StringIO

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.core.management import call_command

from chat.models import ApiKey

pytestmark = pytest.mark.django_db(transaction=True)


def run_create_api_key(username: str) -> str:
    stdout, stderr = StringIO(), StringIO()
    call_command("create_api_key", username, stdout=stdout, stderr=stderr)
    lines = stdout.getvalue().splitlines()
    assert lines, "the key must be printed on stdout"
    return lines[-1]


def test_the_command_creates_the_user_and_prints_the_key_alone_on_the_last_line():
    key = run_create_api_key("carol")

    assert key.startswith("frk_") and " " not in key and len(key) > 40
    stored = ApiKey.objects.get()
    assert stored.user == get_user_model().objects.get(username="carol")
    assert stored.digest == hashlib.sha256(key.encode()).hexdigest()
    assert key not in {stored.prefix, stored.name, stored.digest}


def test_a_second_key_for_the_same_user_reuses_the_user():
    first, second = run_create_api_key("carol"), run_create_api_key("carol")

    assert first != second
    assert get_user_model().objects.filter(username="carol").count() == 1
    assert ApiKey.objects.count() == 2


async def test_the_printed_key_authenticates_and_a_revoked_one_does_not(live_server_url):
    key = await sync_to_async(run_create_api_key)("carol")
    headers = {"Authorization": f"Bearer {key}"}

    async with httpx2.AsyncClient(base_url=live_server_url, headers=headers) as client:
        assert (await client.get("/api/conversations")).status_code == 200
        await ApiKey.objects.filter(prefix=key[:12]).aupdate(revoked=True)
        revoked = await client.get("/api/conversations")

    assert revoked.status_code == 401
    assert revoked.json()["error"]["code"] == "unauthorized"
    assert key not in revoked.text
