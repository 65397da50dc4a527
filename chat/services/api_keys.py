"""Issuing and checking API keys."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from chat.models import ApiKey

KEY_PREFIX = "frk_"
# Recording every use would make each request a write; a few minutes of precision is enough.
LAST_USED_RESOLUTION = timedelta(minutes=5)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_api_key(username: str, *, name: str = "") -> tuple[ApiKey, str]:
    """Create the user if needed and a new key for them; the plain key is returned once and never stored."""
    user, _ = get_user_model().objects.get_or_create(username=username)
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    api_key = ApiKey.objects.create(user=user, name=name, prefix=key[:12], digest=_digest(key))
    return api_key, key


def authenticate_api_key(key: str) -> AbstractBaseUser | None:
    if not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    api_key = (
        ApiKey.objects.select_related("user").filter(digest=_digest(key), revoked=False, user__is_active=True).first()
    )
    if api_key is None:
        return None
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    return api_key.user
