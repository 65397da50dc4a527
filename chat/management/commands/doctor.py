"""`manage.py doctor [--json]`: checks the live set-up, one line per check; exit status 1 when one fails."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat.doctor import CHECK_TIMEOUT_S, DEFAULT_PAGE_URL, CheckResult, Doctor

MARKS = {"ok": "✓", "warn": "!", "fail": "✗", "skip": "-"}


class Command(BaseCommand):
    # Doctor reports what is wrong, the models included, as its own checks: Django's must not stop it first.
    requires_system_checks: list[str] = []
    help = (
        "Check that this set-up can answer: the key, the models, web search, Yahoo, citations, the database, "
        "Redis, workers."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="One JSON object with every check, for scripts.")
        parser.add_argument(
            "--page-url",
            default=DEFAULT_PAGE_URL,
            help=f"The public page the citation fetcher reads (default {DEFAULT_PAGE_URL}).",
        )
        parser.add_argument(
            "--timeout", type=float, default=CHECK_TIMEOUT_S, help=f"Seconds per check (default {CHECK_TIMEOUT_S:g})."
        )

    def handle(self, *args: object, json: bool, page_url: str, timeout: float, **options: object) -> None:
        if timeout <= 0:
            raise CommandError("--timeout must be positive.")
        doctor = Doctor(page_url=page_url, timeout_s=timeout)
        results = asyncio.run(doctor.run())
        if json:
            self.stdout.write(_json({"ok": not doctor.failed, "checks": [asdict(r) for r in results]}))
        else:
            width = max(len(r.name) for r in results)
            for result in results:
                self.stdout.write(render(result, width))
        if doctor.failed:
            failed = sum(1 for r in results if r.status == "fail")
            raise CommandError(f"{failed} check(s) failed.", returncode=1)


def render(result: CheckResult, width: int) -> str:
    latency = f" ({result.latency_ms} ms)" if result.latency_ms is not None and result.status != "skip" else ""
    line = f"{MARKS[result.status]} {result.name.ljust(width)}  {result.detail}{latency}"
    return line + (f"\n  {' ' * width}  fix: {result.fix}" if result.fix and result.status in ("fail", "warn") else "")


def _json(payload: object) -> str:
    return json.dumps(payload, ensure_ascii=False)
