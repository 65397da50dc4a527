"""`python manage.py brief WATCHLIST_ID`: make one brief of a watchlist now, from a terminal.

The brief is made as the API makes it (chat.services.briefs.start_brief) and stored; the command waits for
its run and its delivery to the watchlist's channels, then prints the answer and the changes with their
sources on stdout, progress on stderr. Exit codes: 0 done, 1 failed (the reason on stderr), 2 no such
watchlist, 3 still running when the wait ends (its run goes on with the queue backend's workers).
"""

from __future__ import annotations

import asyncio
import uuid

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from chat.db_calls import db_call
from chat.management.database import not_migrated
from chat.models import Brief, Watchlist
from chat.services.briefs import start_brief
from chat.services.delivery import deliver_brief
from datascraper.models_config import get_research_config
from datascraper.research_engine.data.market_data_client import warm_up_market_data

EXIT_NO_WATCHLIST = 2
EXIT_STILL_RUNNING = 3
POLL_S = 0.5
# Past the run's own time limit, the brief's end is written within this margin.
WAIT_MARGIN_S = 60.0


class Command(BaseCommand):
    help = "Make one brief of a watchlist now; the answer and the changes on stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("watchlist_id", help="The watchlist's id (GET /api/watchlists).")

    def handle(self, *args: object, watchlist_id: str, **options: object) -> None:
        try:
            key = uuid.UUID(watchlist_id)
        except ValueError:
            raise CommandError(f"{watchlist_id!r} is not a watchlist id.", returncode=EXIT_NO_WATCHLIST) from None
        try:
            watchlist = Watchlist.objects.filter(pk=key).first()
        except DatabaseError as exc:  # a fresh clone before its first `migrate` has no tables
            raise not_migrated(exc) from exc
        if watchlist is None:
            raise CommandError(f"No watchlist {key}.", returncode=EXIT_NO_WATCHLIST)
        self.stderr.style_func = None
        warm_up_market_data()
        brief = asyncio.run(self.make(watchlist))
        self.report(brief)

    async def make(self, watchlist: Watchlist) -> Brief:
        self.stderr.write(f"» Checking {len(watchlist.symbols)} symbols of {watchlist.name}")
        brief = await start_brief(watchlist)
        self.stderr.write(f"  {len(brief.changes)} changes since {brief.since:%Y-%m-%d %H:%M %Z}")
        if brief.run_id is not None:
            self.stderr.write(f"» Writing the brief (run {brief.run_id})")
        waited, bound = 0.0, get_research_config().run_timeout_s + WAIT_MARGIN_S
        while brief.status == Brief.Status.RUNNING and waited < bound:
            await asyncio.sleep(POLL_S)
            waited += POLL_S
            brief = await db_call(Brief.objects.get, pk=brief.pk)
        if brief.status == Brief.Status.DONE and watchlist.channels:
            self.stderr.write(f"» Delivering to {len(watchlist.channels)} channel(s)")
            await deliver_brief(brief.pk)  # before the loop ends: what another task has is left to it
        return brief

    def report(self, brief: Brief) -> None:
        if brief.answer:
            self.stdout.write(brief.answer)
        if brief.changes:
            self.stdout.write("\nChanges:")
            for change in brief.changes:
                source = change["source"]
                self.stdout.write(f"- {change['symbol']} ({change['kind']}) {change['summary']} — {source['url']}")
        if brief.status == Brief.Status.RUNNING:
            raise CommandError(f"brief {brief.pk} is still running", returncode=EXIT_STILL_RUNNING)
        if brief.status == Brief.Status.FAILED:
            error = brief.error or {}
            raise CommandError(f"{error.get('code', 'failed')}: {error.get('message', 'the brief failed')}")
        self.stderr.write(f"✓ brief {brief.pk} done")
