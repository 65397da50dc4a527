"""CPU per research run in the process that answers it: `python benchmarks/run_cpu.py`.

The research runs of `benchmarks/load.py` (same fake upstream replies and latencies: analyzer, two web
searches and a market data call, gap detector, streamed synthesis), executed in this process as the
in-process backend executes them (`chat.services.runs.execute_run`), each watched by one SSE stream
(`chat.events.stream_run_events`) read to its end. The fake OpenAI server and the market data server run
as child processes, so what is measured is the app's own work: the OpenAI SDK, the HTTP client, our stream
rewriting, storing and publishing events, the ORM and SSE framing. With `--http` the app is served here
(uvicorn) and the clients, in a child process, ask and stream over HTTP as `load.py`'s do, so Django's
request handling counts too; `load.py` measures everything with real processes.

Figures:
- CPU ms per run and per event: user + system time of this process over the load, divided by the runs
  (and by the events the watchers received). No target: the trend; `load.py` prints the total per run.
- by thread: the event loop (runs, watchers, the SDK), the database threads, the market data client's
  loop, the Redis listener.
- with `--profile`: the event loop's time by package (cProfile, own time per function's module) and the
  functions that take the most; cProfile slows everything down, so those figures are shares, not costs.

Options: `--runs` (50, all at once), `--repeat` (3 batches of them, one after the other: the median),
`--http`, `--redis [URL]` (the Redis event store; `load.py`'s Redis database by default), `--database-url`
(default: a fresh SQLite file), `--profile`, `--top` (functions listed, 25), `--profile-file` (the profile
saved for `python -m pstats`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import multiprocessing
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from load import (  # noqa: E402
    APP_SETTINGS,
    REDIS_URL,
    YAHOO_S,
    Children,
    free_port,
    question,
    run_events,
    script_upstream,
    wait_for_port,
)

WARM_UP_RUNS = 2

# Where the event loop's time goes, by the module a function lives in (first match wins).
# Ours first: the OpenAI provider's modules live under a path that also holds "/openai/".
PACKAGES: list[tuple[str, str]] = [
    ("/datascraper/stream_rewriter.py", "our stream rewriting"),
    ("/datascraper/providers/openai/stream.py", "our stream rewriting"),
    ("/datascraper/providers/openai/citations.py", "our stream rewriting"),
    ("/datascraper/web_search.py", "our stream rewriting"),
    ("/datascraper/research_engine/synthesizer.py", "our stream rewriting"),
    ("/datascraper/", "research engine"),
    ("/openai/", "openai SDK"),
    ("/pydantic", "pydantic"),
    ("/httpx2/", "HTTP client (httpx2, httpcore, h11, anyio)"),
    ("/httpcore", "HTTP client (httpx2, httpcore, h11, anyio)"),
    ("/h11/", "HTTP client (httpx2, httpcore, h11, anyio)"),
    ("/anyio/", "HTTP client (httpx2, httpcore, h11, anyio)"),
    ("/ssl.py", "HTTP client (httpx2, httpcore, h11, anyio)"),
    ("/chat/", "run service, events, SSE"),
    ("/django_eventstream/", "run service, events, SSE"),
    ("/redis/", "Redis client"),
    ("/django/", "Django"),
    ("/json/", "json"),
    ("/logging/", "logging"),
    ("/asyncio/", "asyncio"),
    ("/selectors.py", "asyncio"),
    ("/concurrent/", "asyncio"),
    ("/threading.py", "asyncio"),
]


def package_of(filename: str) -> str:
    for fragment, name in PACKAGES:
        if fragment in filename:
            return name
    if filename == "~":
        return "builtins (C functions)"
    return "other"


# --- the fake OpenAI server, in a child process ---------------------------------------------------------------


def serve_fake_openai(tags: list[str], conn: Connection) -> None:
    from tests.fakes.openai_server import FakeOpenAIServer

    with FakeOpenAIServer() as fake:
        script_upstream(fake, tags)
        conn.send(fake.base_url)
        conn.recv()  # until told to stop
        conn.send(len(fake.errors))


@contextlib.contextmanager
def fake_openai(tags: list[str]):
    # Forked before Django and any thread start here.
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe()
    process = context.Process(target=serve_fake_openai, args=(tags, child), daemon=True)
    process.start()
    try:
        yield parent.recv()
    finally:
        parent.send("stop")
        errors = parent.recv() if parent.poll(10) else "?"
        process.join(10)
        if errors:
            print(f"fake OpenAI server errors: {errors}")


# --- thread CPU -----------------------------------------------------------------------------------------------


def thread_cpu_s() -> dict[str, float]:
    """User + system CPU seconds of each live thread of this process, by Python thread name (numbers
    dropped, so a pool's threads add up)."""
    ticks = os.sysconf("SC_CLK_TCK")
    names = {thread.native_id: thread.name for thread in threading.enumerate()}
    by_name: Counter[str] = Counter()
    for task in Path("/proc/self/task").iterdir():
        try:
            raw = (task / "stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        name = names.get(int(task.name), "other").split(" ")[0].rstrip("0123456789_-")
        by_name[name] += (int(fields[11]) + int(fields[12])) / ticks
    return dict(by_name)


# --- the runs -------------------------------------------------------------------------------------------------


def create_run(tag: str):
    from django.contrib.auth import get_user_model

    from chat.callers import Caller
    from chat.services.conversations import create_conversation, post_user_message

    user, _ = get_user_model().objects.get_or_create(username="bench")
    conversation = create_conversation(Caller(user_id=user.pk))
    return post_user_message(conversation, content=question(tag), mode="research").id


async def watch(run_id: uuid.UUID) -> list[str]:
    """Read the run's SSE stream to its end: the types of the events received, in order."""
    from chat.events import stream_run_events

    types = []
    async for frame in stream_run_events(run_id, 0):
        if "\nid: " in frame:
            types.append(frame.split("\n", 1)[0].removeprefix("event: "))
    return types


async def one_batch(tags: Sequence[str]) -> list[list[str]]:
    """The runs executed here, each watched by a stream read here."""
    from chat.db_calls import db_call
    from chat.services.runs import execute_run

    run_ids = [await db_call(create_run, tag) for tag in tags]
    watchers = [asyncio.create_task(watch(run_id)) for run_id in run_ids]
    await asyncio.gather(*(execute_run(run_id) for run_id in run_ids))
    return await asyncio.gather(*watchers)


# --- `--http`: the app served here, its clients in a child process -----------------------------------------------


def serve_clients(base_url: str, key: str, conn: Connection) -> None:
    """The child: for each list of tags received, those runs asked and streamed over HTTP at once."""
    while (tags := conn.recv()) is not None:
        conn.send(asyncio.run(_client_batch(base_url, key, tags)))


async def _client_batch(base_url: str, key: str, tags: list[str]) -> list[list[str]]:
    import httpx2

    limits = httpx2.Limits(max_connections=len(tags) + 20, max_keepalive_connections=len(tags) + 20)
    async with httpx2.AsyncClient(base_url=base_url, limits=limits, timeout=httpx2.Timeout(60.0, connect=30.0, pool=60.0),
                                  headers={"Authorization": f"Bearer {key}"}, trust_env=False) as http:
        return await asyncio.gather(*(_client_run(http, tag) for tag in tags))


async def _client_run(http, tag: str) -> list[str]:
    conversation = (await http.post("/api/conversations", json={})).json()["id"]
    accepted = await http.post(f"/api/conversations/{conversation}/messages",
                               json={"content": question(tag), "mode": "research"})
    if accepted.status_code != 202:
        return [f"HTTP {accepted.status_code}"]
    types: list[str] = []
    async with http.stream("GET", accepted.json()["events_url"]) as stream:
        async for kind, _ in run_events(stream):
            types.append(kind)
            if kind in ("done", "error"):
                break
    return types


class HttpRuns:
    """The app under uvicorn on this process's loop; the clients in a spawned child, so that their CPU is
    not counted here."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.port = free_port()

    async def __aenter__(self) -> HttpRuns:
        import uvicorn

        config = uvicorn.Config("config.asgi:application", host="127.0.0.1", port=self.port, log_level="warning",
                                access_log=False)
        self.server = uvicorn.Server(config)
        self.serving = asyncio.create_task(self.server.serve())
        while not self.server.started:
            await asyncio.sleep(0.05)
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.clients = context.Process(target=serve_clients, args=(f"http://127.0.0.1:{self.port}", self.key, child),
                                       daemon=True)
        self.clients.start()
        return self

    async def batch(self, tags: Sequence[str]) -> list[list[str]]:
        self.conn.send(list(tags))
        return await asyncio.to_thread(self.conn.recv)

    async def __aexit__(self, *exc_info: object) -> None:
        self.conn.send(None)
        await asyncio.to_thread(self.clients.join, 10)
        self.server.should_exit = True
        await self.serving


def batch_tags(options: argparse.Namespace) -> list[list[str]]:
    return [[f"load{r}-{n}" for n in range(options.runs)] for r in range(options.repeat)]


async def measure(options: argparse.Namespace) -> None:
    if options.http:
        async with HttpRuns(options.api_key) as http:
            await measure_batches(options, http.batch)
    else:
        await measure_batches(options, one_batch)


async def measure_batches(options: argparse.Namespace, run_batch: Callable[[Sequence[str]], Awaitable[list[list[str]]]]) -> None:
    await run_batch([f"warm{n}" for n in range(WARM_UP_RUNS)])
    per_run_ms = []
    for tags in batch_tags(options):
        per_run_ms.append(await measure_batch(options, run_batch, tags))
    if len(per_run_ms) > 1:
        print(f"CPU per run over {len(per_run_ms)} batches: median {statistics.median(per_run_ms):.1f} ms "
              f"(min {min(per_run_ms):.1f}, max {max(per_run_ms):.1f})")


async def measure_batch(options: argparse.Namespace, run_batch: Callable[[Sequence[str]], Awaitable[list[list[str]]]],
                        tags: list[str]) -> float:
    profiler = cProfile.Profile() if options.profile else None
    threads_before = thread_cpu_s()
    cpu_before, started = time.process_time(), time.perf_counter()
    if profiler is not None:
        profiler.enable()
    results = await run_batch(tags)
    if profiler is not None:
        profiler.disable()
    cpu_s, wall_s = time.process_time() - cpu_before, time.perf_counter() - started
    threads_after = thread_cpu_s()

    runs = len(tags)
    events = sum(len(types) for types in results)
    endings = Counter(types[-1] if types else "nothing" for types in results)
    by_type = Counter(kind for types in results for kind in types)
    print(f"runs: {runs} at once, ending {dict(endings)}; wall {wall_s:.2f} s; {events / runs:.1f} events per run ("
          + ", ".join(f"{n / runs:.1f} {kind}" for kind, n in by_type.most_common()) + ")")
    print(f"CPU per run: {cpu_s / runs * 1000:.1f} ms; per event: {cpu_s / max(events, 1) * 1000:.2f} ms "
          f"(this process: {cpu_s:.2f} s{', profiled' if profiler else ''})")
    print("  by thread: " + ", ".join(
        f"{name} {(threads_after.get(name, 0) - threads_before.get(name, 0)) / runs * 1000:.1f} ms"
        for name in sorted(threads_after, key=lambda n: threads_before.get(n, 0) - threads_after[n])
        if threads_after.get(name, 0) - threads_before.get(name, 0) > 0
    ))
    if profiler is not None:
        report_profile(profiler, options.top)
        if options.profile_file:
            profiler.dump_stats(options.profile_file)
    return cpu_s / runs * 1000


def report_profile(profiler: cProfile.Profile, top: int) -> None:
    stats = pstats.Stats(profiler)
    total = sum(entry[2] for entry in stats.stats.values())  # own time, every function
    by_package: Counter[str] = Counter()
    for (filename, _, _), entry in stats.stats.items():
        by_package[package_of(filename)] += entry[2]
    print("event loop time by package (own time, profiled):")
    for name, seconds in by_package.most_common():
        print(f"  {seconds / total * 100:5.1f}%  {name}")
    print(f"functions with the most own time (of {total:.2f} s, profiled):")
    ranked = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:top]
    for (filename, line, function), entry in ranked:
        short = filename.split("site-packages/")[-1].replace(str(ROOT) + "/", "")
        print(f"  {entry[2] / total * 100:5.1f}%  {entry[1]:>8} calls  {function} ({short}:{line})")
    print(f"functions with the most time including callees (top {top}):")
    ranked = sorted(stats.stats.items(), key=lambda item: item[1][3], reverse=True)[:top]
    for (filename, line, function), entry in ranked:
        short = filename.split("site-packages/")[-1].replace(str(ROOT) + "/", "")
        print(f"  {entry[3] / total * 100:5.1f}%  {entry[1]:>8} calls  {function} ({short}:{line})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3, help="batches of --runs, one after the other")
    parser.add_argument("--redis", nargs="?", const=REDIS_URL, default="", metavar="URL")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--http", action="store_true", help="through the ASGI app: POSTs and SSE over HTTP")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--profile-file", default="", help="also save the profile here (pstats format)")
    options = parser.parse_args(argv)

    tags = [f"warm{n}" for n in range(WARM_UP_RUNS)] + [tag for batch in batch_tags(options) for tag in batch]
    with tempfile.TemporaryDirectory(prefix="bench-cpu-") as tmp, Children(Path(tmp)) as children, \
            fake_openai(tags) as base_url:
        market_port = free_port()
        children.start("market-data", ["-m", "tests.fakes.market_data_launcher", "--http", "--port",
                                       str(market_port), "--latency", str(YAHOO_S)], dict(os.environ))
        os.environ.update(
            APP_SETTINGS,
            DJANGO_SETTINGS_MODULE="config.settings",
            DATABASE_URL=options.database_url or f"sqlite:///{tmp}/db.sqlite3",
            REDIS_URL=options.redis,
            RUNS_BACKEND="inprocess",
            OPENAI_BASE_URL=base_url,
            MARKET_DATA_MCP_URL=f"http://127.0.0.1:{market_port}/mcp",
        )
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0)
        if options.http:
            from chat.services.api_keys import create_api_key

            _, options.api_key = create_api_key("bench")
        wait_for_port(market_port, children)
        print(f"run_cpu: {options.runs} research runs, {'Redis' if options.redis else 'database'} event store, "
              f"{'PostgreSQL' if 'postgres' in os.environ['DATABASE_URL'] else 'SQLite'}")
        asyncio.run(measure(options))
    return 0


if __name__ == "__main__":
    sys.exit(main())
