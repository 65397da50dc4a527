"""`python manage.py runworker`: execute queued runs (RUNS_BACKEND=queue), many at once, and fire the
watchlists' briefs on schedule (unless BRIEFS_SCHEDULER=0)."""

from __future__ import annotations

import asyncio

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Execute queued research runs; resume runs whose worker died; drain on SIGTERM; fire the watchlists' "
        "briefs on schedule (unless BRIEFS_SCHEDULER=0)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--concurrency", type=int, default=settings.RUNS_WORKER_CONCURRENCY, help="runs at once")
        parser.add_argument(
            "--grace", type=float, default=settings.RUNS_SHUTDOWN_GRACE, help="seconds to finish runs on SIGTERM"
        )

    def handle(self, *args, concurrency: int, grace: float, **options) -> None:
        if settings.RUNS_BACKEND != "queue":
            raise CommandError("runworker needs RUNS_BACKEND=queue (with PostgreSQL and Redis).")
        from chat.services.queue import serve

        # A worker fires the briefs unless told not to: BRIEFS_SCHEDULER unset is on here.
        asyncio.run(serve(concurrency=concurrency, grace=grace, briefs=settings.BRIEFS_SCHEDULER is not False))
