"""The page while costly request bodies arrive in parallel: `python benchmarks/request_bodies.py`.

Set-up, torn down at the end: a temporary directory with a fresh SQLite file, `manage.py migrate` and
`create_api_key`, and the app as `make run` serves it (uvicorn, one process), with production settings
and the rate limits out of the way (`load.APP_SETTINGS`). Everything is on 127.0.0.1; no model is called
(every body sent is refused, so no run starts).

Phases, each `--bodies` bodies per client, `--clients` clients at once, while one probe sends `GET /` every
`--probe-interval` s. Every body but the last phase's is one byte under the body limit (256 KB):
- `/api`, nested arrays: `POST /api/conversations` with arrays nested 190 deep beside the title (130,000
  arrays, the costliest JSON to parse measured here: 130-280 ms on main); refused before parsing (400).
- `/api`, the most that is parsed: 10,000 arrays (`MAX_CONTAINERS`) nested 100 deep, and an object of short
  keys for the rest of the bytes; parsed, then refused for its unknown fields (400).
- `/v1`, the most that is parsed: `POST /v1/chat/completions` whose question's content is those arrays,
  beside an object of keys; parsed and validated (400).
- over the cap: 2.4 MB of nested arrays (the size of the report that found the issue): a 413 once 256 KB
  are read.

Figures: `GET /` p50 / p99 / max alone (`--probes` of them, before the load) and under each phase, with
how many probes it got; the bodies' answers by status and their p50 time. Target: `GET /` under 100 ms
at p99 while bodies at the cap arrive. The script exits 0 unless its set-up fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import httpx2  # noqa: E402
from load import APP_SETTINGS, Children, SetupFailed, free_port, percentile, run_command, wait_for_port  # noqa: E402

BODY_LIMIT = 256 * 1024
OVER_LIMIT = 2_400_000
MAX_CONTAINERS = 10_000
GET_TARGET_MS = 100.0


def nested_arrays(count: int, depth: int) -> bytes:
    """A JSON array of `count` arrays each nested `depth` deep: `count * depth + 1` arrays in all."""
    return b"[" + b",".join([b"[" * depth + b"]" * depth] * count) + b"]"


def filled(head: bytes, middle: bytes, tail: bytes, size: int) -> bytes:
    """`head + middle + keys + tail`, `keys` an object of short keys taking the body to `size` bytes."""
    room = size - len(head) - len(middle) - len(tail) - len(b', "keys": {}')
    keys = b",".join(b'"%05d":0' for n in range(room // 10))
    body = head + middle + b', "keys": {' + keys + b"}" + tail
    return body + b" " * (size - len(body))


def api_nested(size: int) -> bytes:
    head, tail = b'{"title": "bench", "nested": ', b"}"
    return head + nested_arrays((size - len(head) - len(tail) - 2) // 381, 190) + tail


def api_parsed(size: int) -> bytes:
    return filled(b'{"title": "bench", "nested": ', nested_arrays(100, MAX_CONTAINERS // 100 - 1), b"}", size)


def v1_parsed(size: int) -> bytes:
    head = b'{"model": "finance-research", "messages": [{"role": "user", "content": '
    return filled(head, nested_arrays(100, MAX_CONTAINERS // 100 - 1), b"}]}", size)


@dataclass
class Phase:
    name: str
    path: str
    body: bytes
    probes_ms: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    bodies_ms: list[float] = field(default_factory=list)


async def probe(http: httpx2.AsyncClient, base_url: str, interval_s: float, until: asyncio.Event) -> list[float]:
    """`GET /` every `interval_s` until `until` is set (at least once); each one's time in ms."""
    times: list[float] = []
    while True:
        started = time.perf_counter()
        response = await http.get(f"{base_url}/")
        assert response.status_code == 200, response.status_code
        times.append((time.perf_counter() - started) * 1000)
        if until.is_set():
            return times
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(until.wait(), interval_s)


async def post_bodies(http: httpx2.AsyncClient, base_url: str, phase: Phase, count: int, key: str) -> None:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    for _ in range(count):
        started = time.perf_counter()
        response = await http.post(f"{base_url}{phase.path}", content=phase.body, headers=headers)
        phase.bodies_ms.append((time.perf_counter() - started) * 1000)
        phase.statuses[response.status_code] += 1


async def run_phase(
    http: httpx2.AsyncClient, base_url: str, phase: Phase, options: argparse.Namespace, key: str
) -> None:
    done = asyncio.Event()
    probing = asyncio.create_task(probe(http, base_url, options.probe_interval, done))
    await asyncio.gather(*(post_bodies(http, base_url, phase, options.bodies, key) for _ in range(options.clients)))
    done.set()
    phase.probes_ms = await probing


def summary(times_ms: Sequence[float]) -> str:
    return (
        f"p50 {statistics.median(times_ms):.1f} / p99 {percentile(times_ms, 0.99):.1f} / "
        f"max {max(times_ms):.1f} ms ({len(times_ms)} probes)"
    )


async def measure(base_url: str, key: str, options: argparse.Namespace) -> None:
    phases = [
        Phase("/api, nested arrays", "/api/conversations", api_nested(BODY_LIMIT - 1)),
        Phase("/api, the most that is parsed", "/api/conversations", api_parsed(BODY_LIMIT - 1)),
        Phase("/v1, the most that is parsed", "/v1/chat/completions", v1_parsed(BODY_LIMIT - 1)),
        Phase("over the cap", "/api/conversations", api_nested(OVER_LIMIT)),
    ]
    limits = httpx2.Limits(max_connections=options.clients + 4)
    async with httpx2.AsyncClient(timeout=60, limits=limits, trust_env=False) as http:
        for _ in range(20):  # warm: the page's template, the API's first requests
            await http.get(f"{base_url}/")
        alone: list[float] = []
        for _ in range(options.probes):
            started = time.perf_counter()
            await http.get(f"{base_url}/")
            alone.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(options.probe_interval)
        print(f"GET / alone: {summary(alone)}")
        for phase in phases:
            await run_phase(http, base_url, phase, options, key)
            worst = percentile(phase.probes_ms, 0.99)
            statuses = ", ".join(f"{count}x {status}" for status, count in sorted(phase.statuses.items()))
            print(
                f"{phase.name}, {options.clients} clients x {options.bodies} bodies of {len(phase.body):,} bytes: "
                f"answers {statuses} (p50 {statistics.median(phase.bodies_ms):.0f} ms); GET / {summary(phase.probes_ms)}"
                f" [{'met' if worst < GET_TARGET_MS else 'MISSED'}: p99 < {GET_TARGET_MS:.0f} ms]"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=6, help="clients sending bodies at once")
    parser.add_argument("--bodies", type=int, default=40, help="bodies each client sends per phase")
    parser.add_argument("--probes", type=int, default=50, help="GET / probes alone, before the load")
    parser.add_argument("--probe-interval", type=float, default=0.05, help="seconds between two probes")
    options = parser.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-bodies-") as tmp, Children(Path(tmp)) as children:
            env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
            env.update(
                APP_SETTINGS,
                DATABASE_URL=f"sqlite:///{tmp}/db.sqlite3",
                REDIS_URL="",
                PYTHONUNBUFFERED="1",
                MARKET_DATA_WARM_START="0",
                OPENAI_BASE_URL="http://127.0.0.1:9/v1",  # never called: every body is refused
            )
            run_command(["manage.py", "migrate", "--noinput"], env)
            key = run_command(["manage.py", "create_api_key", "bench"], env).strip().splitlines()[-1]
            port = free_port()
            children.start(
                "web",
                [
                    "-m",
                    "uvicorn",
                    "config.asgi:application",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--no-proxy-headers",
                    "--no-access-log",
                    "--log-level",
                    "warning",
                ],
                env,
            )
            wait_for_port(port, children)
            asyncio.run(measure(f"http://127.0.0.1:{port}", key, options))
    except SetupFailed as exc:
        print(f"set-up failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
