"""Issuing API keys; callers read them (`chat.callers`)."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model

from chat.models import ApiKey


def create_api_key(username: str, *, name: str = "") -> tuple[ApiKey, str]:
    """Create the user if needed and a new key for them; the plain key is returned once and never stored."""
    user, _ = get_user_model().objects.get_or_create(username=username)
    key = ApiKey.PREFIX + secrets.token_urlsafe(32)
    api_key = ApiKey.objects.create(user=user, name=name, prefix=key[:12], digest=ApiKey.digest_of(key))
    return api_key, key
