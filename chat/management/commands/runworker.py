"""`python manage.py runworker`: execute queued runs (RUNS_BACKEND=queue), many at once."""

from __future__ import annotations

import asyncio

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Execute queued research runs; resume runs whose worker died; drain on SIGTERM."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--concurrency", type=int, default=settings.RUNS_WORKER_CONCURRENCY, help="runs at once")
        parser.add_argument(
            "--grace", type=float, default=settings.RUNS_SHUTDOWN_GRACE, help="seconds to finish runs on SIGTERM"
        )

    def handle(self, *args, concurrency: int, grace: float, **options) -> None:
        if settings.RUNS_BACKEND != "queue":
            raise CommandError("runworker needs RUNS_BACKEND=queue (with PostgreSQL and Redis).")
        from chat.services.queue import serve

        asyncio.run(serve(concurrency=concurrency, grace=grace))
