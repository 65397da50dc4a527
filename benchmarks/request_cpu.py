"""CPU per API request through the ASGI app: `python benchmarks/request_cpu.py`.

`GET /api/conversations` (five conversations) asked one at a time through Django's ASGI handler in this
process (httpx's ASGI transport: no sockets), with an API key and with a browser session. The figure is
this process's CPU time (every thread: the event loop, the database threads, the client) per request; it
is what one request costs a web process, and a busy web process pays it while every run and stream waits.

Figures: wall and CPU ms per request, each the median of `--repeat` batches of `--requests`; the thread
round trips (`sync_to_async` and `db_call`) one request makes. No target: the trend.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from load import APP_SETTINGS  # noqa: E402

WARM_UP_REQUESTS = 50


def configure(tmp: str) -> None:
    os.environ.update(
        APP_SETTINGS,
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=os.environ.get("DATABASE_URL") or f"sqlite:///{tmp}/db.sqlite3",
        REDIS_URL=os.environ.get("REDIS_URL", ""),
        DJANGO_ALLOWED_HOSTS="testserver",
        MARKET_DATA_WARM_START="0",
        CHAT_API_RATE_LIMIT="1000000/m",  # counted as in production, never reached
    )


class HopCounter:
    """Counts the calls handed to other threads while it is on."""

    def __init__(self) -> None:
        self.hops = 0

    def install(self) -> None:
        from asgiref.sync import SyncToAsync

        from chat import db_calls

        original_init = SyncToAsync.__init__
        counter = self

        def counting_init(self, *args, **kwargs):
            counter.hops += 1
            original_init(self, *args, **kwargs)

        def counting(original):
            async def counting_call(*args, **kwargs):
                counter.hops += 1
                return await original(*args, **kwargs)

            return counting_call

        SyncToAsync.__init__ = counting_init
        for name in ("db_call", "request_db_call"):
            original, replacement = getattr(db_calls, name), counting(getattr(db_calls, name))
            for module in (sys.modules[m] for m in list(sys.modules) if m.startswith("chat.")):
                if getattr(module, name, None) is original:
                    setattr(module, name, replacement)


async def measure(label: str, client, headers: dict[str, str], options: argparse.Namespace, hops: HopCounter) -> None:
    for _ in range(WARM_UP_REQUESTS):
        response = await client.get("/api/conversations", headers=headers)
        assert response.status_code == 200, response.text
    walls, cpus = [], []
    for _ in range(options.repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(options.requests):
            await client.get("/api/conversations", headers=headers)
        walls.append((time.perf_counter() - wall) / options.requests * 1000)
        cpus.append((time.process_time() - cpu) / options.requests * 1000)
    before = hops.hops
    await client.get("/api/conversations", headers=headers)
    print(f"{label}: {statistics.median(walls):.2f} ms wall, {statistics.median(cpus):.2f} ms CPU per request "
          f"(batches: {', '.join(f'{c:.2f}' for c in cpus)}); {hops.hops - before} thread round trips")


async def main_async(options: argparse.Namespace, key: str) -> None:
    import httpx2

    from config.asgi import application

    hops = HopCounter()
    hops.install()
    transport = httpx2.ASGITransport(app=application)
    # https: with DJANGO_DEBUG=0 the session and CSRF cookies are Secure, and a client keeps them only there.
    async with httpx2.AsyncClient(transport=transport, base_url="https://testserver") as client:
        bearer = {"Authorization": f"Bearer {key}"}
        for _ in range(5):
            await client.post("/api/conversations", headers=bearer, json={})
        await measure("GET /api/conversations, API key", client, bearer, options, hops)
        await client.get("/api/conversations")  # the session starts, and its cookie is kept from here on
        for _ in range(5):
            headers = {"X-CSRFToken": client.cookies["csrftoken"], "Referer": "https://testserver/"}
            assert (await client.post("/api/conversations", headers=headers, json={})).status_code == 201
        await measure("GET /api/conversations, browser session", client, {}, options, hops)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="requests per batch")
    parser.add_argument("--repeat", type=int, default=3, help="batches; the median is printed")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-request-") as tmp:
        configure(tmp)
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0)
        from chat.services.api_keys import create_api_key

        asyncio.run(main_async(options, create_api_key("bench")[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
