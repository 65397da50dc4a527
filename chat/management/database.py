"""What a command says when the database has no tables yet: a fresh clone before its first `migrate`."""

from django.core.management.base import CommandError
from django.db import DatabaseError


def not_migrated(exc: DatabaseError) -> CommandError:
    return CommandError(
        f"The database is not ready ({type(exc).__name__}): run `python manage.py migrate` first (`make run` does)."
    )
