from django.core.management.base import BaseCommand
from django.db import DatabaseError

from chat.management.database import not_migrated
from chat.services.api_keys import create_api_key


class Command(BaseCommand):
    help = "Create an API key for USERNAME (the user is created if needed). The key is printed once, on the last line."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="A label for the key, shown in the admin.")

    def handle(self, *args, username: str, name: str, **options) -> None:
        try:
            api_key, key = create_api_key(username, name=name)
        except DatabaseError as exc:  # a fresh clone before its first `migrate` has no tables
            raise not_migrated(exc) from exc
        self.stderr.write(f"Created API key {api_key.prefix}… for {username}. Store it now: it is not shown again.")
        self.stdout.write(key)
