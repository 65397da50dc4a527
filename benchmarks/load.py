"""The app under load, over real HTTP and SSE, run as real processes: `python benchmarks/load.py`.

Set-up, all torn down at the end (Ctrl-C and errors included): a temporary directory; a fresh SQLite file
or PostgreSQL database; `manage.py migrate` and `create_api_key`; the fake OpenAI server in this process,
with fixed latencies (a research run: analyzer 0.3 s → three sub-questions: two web searches of about 0.45 s
and one market data call → gap detector 0.2 s, saying complete → synthesis streamed over about 0.55 s, so
about 1.5 s of upstream latency on its critical path; a quick run: one web search); the fake yfinance MCP
server as its own HTTP process (50 ms per Yahoo access; each run asks for a fresh ticker so that the
server's cache does not hide it), reached through MARKET_DATA_MCP_URL; the app under uvicorn (`--web`
processes, which clients take in turn) and, with `--backend queue`, `--workers` `manage.py runworker`
processes. The app runs with DJANGO_DEBUG=0, rate limits out of the way and CITATION_VERIFY=0 (the fake's
cited pages do not exist).

Each simulated client creates a conversation, posts a question and reads the run's events to the terminal
`done` or `error`. Warm-up runs (one per web process) and three unloaded runs come first; then every client
starts at once.

Figures:
- runs completed: ending with `done`, of those started; failures by code (HTTP status, `error` event code,
  client error). Target: all of them.
- run time, from the POST of the question to the terminal event: p50 and p95 under load, beside the
  unloaded run time (median of three runs alone). Target: p50 at most 2x the unloaded time.
- `GET /api/conversations`: p50 and p99 while the load runs (one request at a time, every 100 ms), beside
  its unloaded p50, and the slowest GET sent in each second of the load (all clients start at once, so
  the first seconds carry their POSTs and stream openings). Target: p99 at most 50 ms.
- SQL transactions per run event delivered (PostgreSQL: the change of `xact_commit + xact_rollback` in
  `pg_stat_database` from before the load to the app's exit after it, less the probes' share, measured
  alone beforehand; "n/a" on SQLite). No target: the trend.
- peak database connections (PostgreSQL: `pg_stat_activity` sampled every 100 ms). Target, in-process
  backend: within the pools, DATABASE_POOL_SIZE (default 10) per web process.
- CPU seconds per run: user + system time of the web and worker processes and their children (from /proc),
  over the load, divided by the runs started. No target: the trend.

Options: `--runs` (200), `--db sqlite|postgres`, `--redis/--no-redis` (on for PostgreSQL), `--backend
inprocess|queue` (queue needs PostgreSQL and Redis) with `--workers`, `--web`, `--mode research|quick`.
Targets missed are printed, not fatal: the script exits 0 unless its set-up fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx2  # noqa: E402

from tests.fakes.openai_server import (  # noqa: E402
    FakeOpenAIServer,
    JsonReply,
    RecordedRequest,
    Sentence,
    TextReply,
    has_web_search,
    render_cited_text,
)

T = TypeVar("T")

# Upstream latencies, seconds. A streamed reply takes its first-byte delay plus one delta delay per chunk
# after the first.
ANALYZER_S = 0.3
SEARCH_S, SEARCH_DELTA_S = 0.4, 0.02
GAP_S = 0.2
SYNTHESIS_S, SYNTHESIS_DELTA_S = 0.25, 0.02
YAHOO_S = 0.05

COMPLETION_TARGET = 1.0  # share of runs ending with `done`
RUN_TIME_P50_TARGET = 2.0  # x the unloaded run time (issue 8)
PROBE_P99_TARGET_MS = 50.0

UNLOADED_RUNS = 3
CALIBRATION_PROBES = 50
STATS_FLUSH_S = 11.0
PROBE_INTERVAL_S = 0.1
SAMPLE_INTERVAL_S = 0.1
RUN_TIMEOUT_S = 180.0
WARM_UP_TIMEOUT_S = 60.0
CONTROL_EVENTS = {"stream-open", "keep-alive"}
ADMIN_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_URL = "redis://127.0.0.1:6379/14"
# The app's settings in every benchmark: production's, with what would distort a measurement out of the
# way (rate limits, citation checks of the fake's cited pages, which do not exist, info logging).
APP_SETTINGS = {
    "OPENAI_API_KEY": "bench-key",
    "DJANGO_DEBUG": "0",  # production settings; DEBUG would also keep every query in memory
    "DJANGO_SECRET_KEY": "bench-" + "x" * 50,
    "DJANGO_SECURE_SSL_REDIRECT": "0",
    "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
    "CHAT_RATE_LIMIT": "off",
    "CHAT_API_RATE_LIMIT": "off",
    "CHAT_MAX_CONCURRENT_RUNS": "100000",
    # Every simulated user connects from 127.0.0.1: the limits per client address would bind them all.
    "CHAT_ADDRESS_RATE_LIMIT": "off",
    "CHAT_ADDRESS_SESSION_RATE_LIMIT": "off",
    "CHAT_MAX_STREAMS_PER_OWNER": "0",
    "CHAT_MAX_STREAMS_PER_ADDRESS": "0",
    "CITATION_VERIFY": "0",
    "LOG_LEVEL": "WARNING",
}


# --- the fake upstream --------------------------------------------------------------------------------------

SEARCH_REPLY = TextReply(
    [
        Sentence(
            "Analysts expect services growth to offset softer hardware sales next quarter.",
            # Three independent publishers: evidence the confidence rules trust, so research stops when the
            # gap detector says so (one round per run) instead of looking for confirmation.
            cites=[
                ("https://www.reuters.com/technology/apple-analysts", "Analysts on Apple - Reuters"),
                ("https://www.ft.com/content/apple-analysts", "Analysts on Apple - FT"),
                ("https://www.cnbc.com/apple-analysts.html", "Analysts on Apple - CNBC"),
            ],
        )
    ],
    chunk_chars=40,
    first_byte_delay=SEARCH_S,
    delta_delay=SEARCH_DELTA_S,
)
SYNTHESIS_REPLY = TextReply(
    [
        "Apple's revenue was $391.04 billion in its last fiscal year, slightly above the year before [1].",
        "Analysts expect services growth to offset softer hardware sales next quarter [2].",
        "Gross margin held near 46%, helped by the higher-margin services mix [1].",
        "Guidance points to low single-digit growth, with currency a headwind [2].",
    ],
    chunk_chars=24,
    first_byte_delay=SYNTHESIS_S,
    delta_delay=SYNTHESIS_DELTA_S,
)
GAP_REPLY = JsonReply({"complete": True, "score": 9, "gaps": [], "follow_up_queries": []}, first_byte_delay=GAP_S, validate=False)


def streamed_s(reply: TextReply) -> float:
    """The time a streamed reply takes at the fake: first byte, then a pause before each further chunk."""
    text, _ = render_cited_text(reply.sentences)
    chunks = -(-len(text) // reply.chunk_chars)
    return reply.first_byte_delay + max(0, chunks - 1) * reply.delta_delay


def upstream_path_s(mode: str) -> float:
    search = streamed_s(SEARCH_REPLY)
    if mode == "quick":
        return search
    return ANALYZER_S + max(search, YAHOO_S) + GAP_S + streamed_s(SYNTHESIS_REPLY)


def question(tag: str) -> str:
    return f"[{tag}] How has Apple been doing lately, and what do analysts expect next?"


def analysis(symbol: str) -> dict[str, Any]:
    """The analyzer's plan: one numerical sub-question for `symbol` (market data), two qualitative ones."""
    return {
        "needs_decomposition": True,
        "sub_questions": [
            {"question": f"What was {symbol}'s revenue over the last years?", "type": "numerical",
             "tickers": [symbol], "data": "income_statement"},
            {"question": "What do analysts expect from Apple next quarter?", "type": "qualitative", "tickers": [], "data": None},
            {"question": "What guidance did Apple give?", "type": "qualitative", "tickers": [], "data": None},
        ],
    }


def schema_is(name: str) -> Callable[[RecordedRequest], bool]:
    return lambda request: (request.text_format or {}).get("name") == name


def is_synthesis(request: RecordedRequest) -> bool:
    return not request.has_web_search and not request.is_structured


def script_upstream(fake: FakeOpenAIServer, tags: Sequence[str]) -> None:
    """Every reply the runs will need, scripted up front: one analyzer reply per run (its own ticker),
    the rest shared. The app checks structured output itself; a plan it rejects shows up as failed runs."""
    for n, tag in enumerate(tags):
        fake.script(
            JsonReply(analysis(f"LD{n}"), first_byte_delay=ANALYZER_S, validate=False),
            when=lambda r, marker=f"[{tag}]": schema_is("QueryAnalysis")(r) and marker in r.input_text,
        )
    fake.script(JsonReply(analysis("AAPL"), first_byte_delay=ANALYZER_S, validate=False), when=schema_is("QueryAnalysis"), times=None)
    fake.script(GAP_REPLY, when=schema_is("GapReport"), times=None)
    fake.script(SEARCH_REPLY, when=has_web_search, times=None)
    fake.script(SYNTHESIS_REPLY, when=is_synthesis, times=None)


def call_kind(request: RecordedRequest) -> str:
    if schema_is("QueryAnalysis")(request):
        return "analyzer"
    if schema_is("GapReport")(request):
        return "gap detector"
    if request.has_web_search:
        return "web search"
    if is_synthesis(request):
        return "synthesis"
    return f"other ({(request.text_format or {}).get('name')})"


# --- child processes ----------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class SetupFailed(Exception):
    """The benchmark could not set itself up (a process did not start, a command failed)."""


class Children:
    """The benchmark's child processes, each in its own session, so that it is stopped with its children
    (a stdio MCP server, a worker's subprocesses) and a Ctrl-C here reaches only this process."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.stopped: set[str] = set()

    def start(self, name: str, args: Sequence[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        with open(self.log_dir / f"{name}.log", "wb") as log:
            process = subprocess.Popen(
                [sys.executable, *args], cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )
        self.processes[name] = process
        return process

    def log_tail(self, name: str, lines: int = 15) -> str:
        path = self.log_dir / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(f"    {line}" for line in text.splitlines()[-lines:])

    def check_alive(self) -> None:
        for name, process in self.processes.items():
            if name not in self.stopped and process.poll() is not None:
                raise SetupFailed(f"{name} exited with status {process.returncode}:\n{self.log_tail(name)}")

    def stop(self, names: Sequence[str] | None = None, timeout_s: float = 10.0) -> None:
        """SIGTERM each process group, then SIGKILL what is left after `timeout_s`. Once only per process:
        a group id is free for reuse once the group is gone."""
        chosen_names = [name for name in (names or list(self.processes)) if name not in self.stopped]
        self.stopped.update(chosen_names)
        chosen = [self.processes[name] for name in chosen_names]
        for process in chosen:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for process in chosen:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
        for process in chosen:
            # The group may outlive its leader (children that ignored SIGTERM).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def __enter__(self) -> Children:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def run_command(args: Sequence[str], env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SetupFailed(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def wait_for_port(port: int, children: Children, deadline_s: float = 60) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        children.check_alive()
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        time.sleep(0.05)
    raise SetupFailed(f"nothing listened on 127.0.0.1:{port} within {deadline_s:g} s")


async def while_alive(children: Children, work: Coroutine[Any, Any, T]) -> T:
    """`work`, unless a child process exits first (a worker that cannot start would leave runs queued)."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            finished, _ = await asyncio.wait([task], timeout=0.5)
            if finished:
                return task.result()
            children.check_alive()
    finally:
        task.cancel()


def process_tree_cpu_s(roots: Sequence[int]) -> float | None:
    """User + system CPU seconds of `roots` and their live descendants, plus their reaped children's.
    None where there is no /proc."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    stats: dict[int, tuple[int, list[str]]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = raw[raw.rindex(")") + 2 :].split()  # after "pid (comm) ": state, ppid, ...
        stats[int(entry.name)] = (int(fields[1]), fields)
    tree, frontier = set(), [pid for pid in roots if pid in stats]
    while frontier:
        pid = frontier.pop()
        tree.add(pid)
        frontier.extend(child for child, (ppid, _) in stats.items() if ppid == pid and child not in tree)
    ticks = sum(int(stats[pid][1][n]) for pid in tree for n in (11, 12, 13, 14))  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


# --- the database -------------------------------------------------------------------------------------------


@dataclass
class Database:
    url: str
    postgres_name: str | None = None  # None: SQLite

    def xacts(self) -> int:
        assert self.postgres_name is not None
        with _admin() as admin:
            row = admin.execute(
                "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s", (self.postgres_name,)
            ).fetchone()
        return int(row[0]) if row else 0

    def xacts_once_flushed(self) -> int:
        """The count once every idle backend has reported: a backend sends its statistics when it goes idle,
        but no more than once a second, and otherwise 10 s later (PostgreSQL's PGSTAT_IDLE_INTERVAL)."""
        time.sleep(STATS_FLUSH_S)
        return self.xacts()

    def xacts_after_disconnect(self, timeout_s: float = 15.0) -> int:
        """The count once the app's connections are gone: a backend reports at exit."""
        deadline = time.monotonic() + timeout_s
        while self.connections() and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.xacts()

    def connections(self) -> int:
        assert self.postgres_name is not None
        with _admin() as admin:
            return connection_count(admin, self.postgres_name)


def connection_count(admin: Any, database_name: str) -> int:
    (count,) = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database_name,)).fetchone()
    return int(count)


def _admin() -> Any:
    import psycopg

    # The maintenance database: the benchmark's own queries must not count in the app's statistics.
    return psycopg.connect(ADMIN_DATABASE_URL, autocommit=True)


@contextlib.contextmanager
def fresh_database(kind: str, directory: Path) -> Iterator[Database]:
    if kind == "sqlite":
        yield Database(url=f"sqlite:///{directory / 'db.sqlite3'}")
        return
    name = f"bench_load_{os.getpid()}"
    with _admin() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield Database(url=f"postgres://postgres@127.0.0.1:5432/{name}", postgres_name=name)
    finally:
        with _admin() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class ConnectionSampler:
    """Counts the app database's connections in `pg_stat_activity` every 100 ms, in a thread."""

    def __init__(self, database_name: str) -> None:
        self.database_name = database_name
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="connection-sampler", daemon=True)

    def _sample(self) -> None:
        with _admin() as admin:
            while not self._stop.is_set():
                self.peak = max(self.peak, connection_count(admin, self.database_name))
                self.samples += 1
                self._stop.wait(SAMPLE_INTERVAL_S)

    def __enter__(self) -> ConnectionSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


# --- the simulated clients ----------------------------------------------------------------------------------


@dataclass
class RunOutcome:
    seconds: float | None = None  # POST of the question to the terminal event
    events: int = 0  # run events delivered (stream control frames excluded)
    failure: str | None = None  # None: the run ended with `done`
    market_data: Counter[str] = field(default_factory=Counter)  # final states of market data steps


def _error_code(response: httpx2.Response) -> str:
    with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
        return str(response.json()["error"]["code"])
    return "-"


async def one_run(
    http: httpx2.AsyncClient, base_url: str, tag: str, mode: str, *, timeout_s: float = RUN_TIMEOUT_S
) -> RunOutcome:
    outcome = RunOutcome()
    try:
        async with asyncio.timeout(timeout_s):
            await _run(http, base_url, tag, mode, outcome)
    except TimeoutError:
        outcome.failure = f"client: no terminal event within {timeout_s:g} s"
    except httpx2.HTTPError as exc:
        outcome.failure = f"client: {type(exc).__name__}"
    except (ValueError, KeyError, TypeError) as exc:  # a body that is not the contract's JSON
        outcome.failure = f"client: unexpected response ({type(exc).__name__})"
    return outcome


async def _run(http: httpx2.AsyncClient, base_url: str, tag: str, mode: str, outcome: RunOutcome) -> None:
    response = await http.post(f"{base_url}/api/conversations", json={})
    if response.status_code != 201:
        outcome.failure = f"HTTP {response.status_code} on POST /api/conversations ({_error_code(response)})"
        return
    conversation = response.json()["id"]
    started = time.perf_counter()
    response = await http.post(
        f"{base_url}/api/conversations/{conversation}/messages", json={"content": question(tag), "mode": mode}
    )
    if response.status_code != 202:
        outcome.failure = f"HTTP {response.status_code} on POST .../messages ({_error_code(response)})"
        return
    async with http.stream("GET", f"{base_url}{response.json()['events_url']}") as stream:
        if stream.status_code != 200:
            await stream.aread()
            outcome.failure = f"HTTP {stream.status_code} on GET .../events ({_error_code(stream)})"
            return
        async for kind, data in run_events(stream):
            outcome.events += 1
            if kind == "step":
                step = json.loads(data)
                if step.get("route") == "market_data" and step.get("state") != "started":
                    outcome.market_data[step.get("state")] += 1
            elif kind in {"done", "error", "stream-error"}:
                outcome.seconds = time.perf_counter() - started
                if kind != "done":
                    outcome.failure = f"{kind} event: {json.loads(data or '{}').get('code', '-')}"
                return
    outcome.failure = "stream closed before done or error"


async def run_events(stream: httpx2.Response) -> AsyncIterator[tuple[str, str]]:
    """The `(type, data)` of each SSE frame, without comments and the stream's control frames."""
    kind, data = None, []
    async for line in stream.aiter_lines():
        if line.startswith(":"):
            continue
        if line:
            name, _, value = line.partition(":")
            if name == "event":
                kind = value.removeprefix(" ")
            elif name == "data":
                data.append(value.removeprefix(" "))
            continue
        if kind is not None and kind not in CONTROL_EVENTS:
            yield kind, "\n".join(data)
        kind, data = None, []


async def timed_get(http: httpx2.AsyncClient, base_url: str) -> tuple[float, int]:
    started = time.perf_counter()
    try:
        response = await http.get(f"{base_url}/api/conversations")
        status = response.status_code
    except httpx2.HTTPError:
        status = 0
    return time.perf_counter() - started, status


@dataclass
class Probes:
    seconds: list[float] = field(default_factory=list)
    started_s: list[float] = field(default_factory=list)  # when each probe was sent, from the load's start
    failures: Counter[int] = field(default_factory=Counter)

    def slowest_by_second(self) -> str:
        """The slowest probe sent in each second of the load: where the latency comes from."""
        slowest: dict[int, float] = {}
        for started, seconds in zip(self.started_s, self.seconds, strict=True):
            slowest[int(started)] = max(slowest.get(int(started), 0.0), seconds)
        return ", ".join(f"{second} s: {ms * 1000:.0f}" for second, ms in sorted(slowest.items()))


async def probe_until(http: httpx2.AsyncClient, base_urls: Sequence[str], done: asyncio.Event) -> Probes:
    probes = Probes()
    n = 0
    load_started = time.perf_counter()
    while not done.is_set():
        probes.started_s.append(time.perf_counter() - load_started)
        seconds, status = await timed_get(http, base_urls[n % len(base_urls)])
        n += 1
        probes.seconds.append(seconds)
        if status != 200:
            probes.failures[status] += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), PROBE_INTERVAL_S)
    return probes


# --- the benchmark ------------------------------------------------------------------------------------------


@dataclass
class Options:
    runs: int
    db: str
    redis: bool
    backend: str
    workers: int
    web: int
    mode: str


def parse_options(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="concurrent runs under load (default 200)")
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--redis", action=argparse.BooleanOptionalAction, default=None,
                        help=f"set REDIS_URL ({REDIS_URL}); default on for postgres")
    parser.add_argument("--backend", choices=["inprocess", "queue"], default="inprocess", help="RUNS_BACKEND")
    parser.add_argument("--workers", type=int, default=2, help="`manage.py runworker` processes (queue backend)")
    parser.add_argument("--web", type=int, default=1, help="uvicorn processes; clients take them in turn")
    parser.add_argument("--mode", choices=["research", "quick"], default="research")
    args = parser.parse_args(argv)
    redis = args.redis if args.redis is not None else args.db == "postgres"
    if args.runs < 1 or args.web < 1 or args.workers < 1:
        parser.error("--runs, --web and --workers must be at least 1")
    if args.backend == "queue" and not (args.db == "postgres" and redis):
        parser.error("--backend queue needs --db postgres and Redis")
    return Options(args.runs, args.db, redis, args.backend, args.workers if args.backend == "queue" else 0,
                   args.web, args.mode)


def app_environment(options: Options, database: Database, fake: FakeOpenAIServer, market_data_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(
        APP_SETTINGS,
        DATABASE_URL=database.url,
        REDIS_URL=REDIS_URL if options.redis else "",  # empty, not unset: a .env file must not turn it on
        RUNS_BACKEND=options.backend,
        OPENAI_BASE_URL=fake.base_url,
        MARKET_DATA_MCP_URL=market_data_url,
        PYTHONUNBUFFERED="1",
    )
    return env


def percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def start_app(options: Options, children: Children, env: dict[str, str]) -> list[str]:
    """Web processes (and queue workers); returns the web base URLs once each answers."""
    ports = [free_port() for _ in range(options.web)]
    for n, port in enumerate(ports):
        children.start(f"web-{n}", ["-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port",
                                    str(port), "--timeout-graceful-shutdown", "2", "--no-access-log",
                                    "--log-level", "warning"], env)
    for n in range(options.workers):
        children.start(f"worker-{n}", ["manage.py", "runworker"], env)
    for port in ports:
        wait_for_port(port, children)
    return [f"http://127.0.0.1:{port}" for port in ports]


@dataclass
class LoadResult:
    outcomes: list[RunOutcome]
    wall_s: float
    unloaded_s: list[float]
    probe_alone_s: list[float]
    probes: Probes
    upstream: Counter[str]
    xacts: int | None = None  # PostgreSQL only, the probes' share included
    xacts_per_probe: float = 0.0
    peak_connections: int | None = None
    connection_samples: int = 0
    cpu_s: float | None = None  # the web and worker processes
    own_cpu_s: float = 0.0
    market_data_cpu_s: float | None = None


async def warm_up(options: Options, http: httpx2.AsyncClient, children: Children, base_urls: list[str]) -> None:
    """One run per web process (imports, upstream connections, the market data session), then none fails."""
    for n, base_url in enumerate(base_urls):
        warm = await while_alive(children, one_run(http, base_url, f"warm{n}", options.mode, timeout_s=WARM_UP_TIMEOUT_S))
        if warm.failure is not None:
            logs = "\n".join(children.log_tail(name) for name in children.processes if name.startswith(("web-", "worker-")))
            raise SetupFailed(f"the warm-up run on {base_url} failed: {warm.failure}\n{logs}")


async def measure(options: Options, database: Database, fake: FakeOpenAIServer, children: Children,
                  base_urls: list[str], key: str) -> LoadResult:
    app_pids = [p.pid for name, p in children.processes.items() if name.startswith(("web-", "worker-"))]
    market_data_pid = children.processes["market-data"].pid
    postgres = database.postgres_name is not None
    limits = httpx2.Limits(max_connections=options.runs + 20, max_keepalive_connections=options.runs + 20)
    timeout = httpx2.Timeout(60.0, connect=30.0, pool=60.0)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(limits=limits, timeout=timeout, headers=headers, trust_env=False) as http, \
            httpx2.AsyncClient(timeout=timeout, headers=headers, trust_env=False) as probe_http:
        await warm_up(options, http, children, base_urls)
        unloaded = [await one_run(http, base_urls[0], f"alone{n}", options.mode) for n in range(UNLOADED_RUNS)]

        # The probe alone: its latency, and the transactions it costs (taken out of the load's figure).
        xacts_before = await asyncio.to_thread(database.xacts_once_flushed) if postgres else 0
        probe_alone = [await timed_get(probe_http, base_urls[n % len(base_urls)]) for n in range(CALIBRATION_PROBES)]
        xacts_start = await asyncio.to_thread(database.xacts_once_flushed) if postgres else 0

        requests_before = len(fake.requests)
        cpu_start = process_tree_cpu_s(app_pids)
        market_data_cpu_start = process_tree_cpu_s([market_data_pid])
        own_cpu_start = sum(os.times()[:2])
        sampler = ConnectionSampler(database.postgres_name) if database.postgres_name else None
        load_done = asyncio.Event()
        with sampler or contextlib.nullcontext():
            started = time.perf_counter()
            probing = asyncio.create_task(probe_until(probe_http, base_urls, load_done))
            outcomes = await asyncio.gather(
                *(one_run(http, base_urls[n % len(base_urls)], f"load{n}", options.mode) for n in range(options.runs))
            )
            wall_s = time.perf_counter() - started
            load_done.set()
            probes = await probing
        result = LoadResult(
            outcomes=list(outcomes),
            wall_s=wall_s,
            unloaded_s=[o.seconds for o in unloaded if o.failure is None and o.seconds is not None],
            probe_alone_s=[seconds for seconds, _ in probe_alone],
            probes=probes,
            upstream=Counter(call_kind(request) for request in fake.requests[requests_before:]),
            cpu_s=_delta(process_tree_cpu_s(app_pids), cpu_start),
            own_cpu_s=sum(os.times()[:2]) - own_cpu_start,
            market_data_cpu_s=_delta(process_tree_cpu_s([market_data_pid]), market_data_cpu_start),
        )
        if sampler is not None:
            result.peak_connections, result.connection_samples = sampler.peak, sampler.samples
    if postgres:
        # Stopping the app makes every backend report (and adds its few shutdown transactions).
        await asyncio.to_thread(children.stop, [name for name in children.processes if name != "market-data"])
        result.xacts = await asyncio.to_thread(database.xacts_after_disconnect) - xacts_start
        result.xacts_per_probe = (xacts_start - xacts_before) / CALIBRATION_PROBES
    return result


def report(options: Options, result: LoadResult) -> None:
    outcomes, runs = result.outcomes, options.runs
    done = [o for o in outcomes if o.failure is None]
    print(f"completed: {len(done)} of {runs} runs ended with `done` "
          f"(target all: {verdict(len(done) >= COMPLETION_TARGET * runs)}); "
          f"the load took {result.wall_s:.1f} s ({runs / result.wall_s:.1f} runs/s)")
    for failure, count in Counter(o.failure for o in outcomes if o.failure is not None).most_common():
        print(f"    {count:5d}  {failure}")

    alone = statistics.median(result.unloaded_s) if result.unloaded_s else None
    alone_text = f"{alone:.2f} s (median of {UNLOADED_RUNS})" if alone is not None else "n/a (the unloaded runs failed)"
    times = [o.seconds for o in done if o.seconds is not None]
    if times:
        p50, p95 = percentile(times, 0.5), percentile(times, 0.95)
        ok = alone is not None and p50 <= RUN_TIME_P50_TARGET * alone
        print(f"run time, POST to done: p50 {p50:.2f} s, p95 {p95:.2f} s, max {max(times):.2f} s; unloaded {alone_text} "
              f"(target p50 <= {RUN_TIME_P50_TARGET:g}x unloaded: {verdict(ok)})")
    else:
        print(f"run time, POST to done: no run completed; unloaded {alone_text}")

    probes = result.probes
    alone_ms = statistics.median(result.probe_alone_s) * 1000
    if probes.seconds:
        p50_ms, p99_ms = percentile(probes.seconds, 0.5) * 1000, percentile(probes.seconds, 0.99) * 1000
        failed = ", ".join(f"{n} x HTTP {status or 'error'}" for status, n in probes.failures.items())
        print(f"GET /api/conversations under load: p50 {p50_ms:.0f} ms, p99 {p99_ms:.0f} ms (n={len(probes.seconds)}"
              f"{'; ' + failed if failed else ''}); unloaded p50 {alone_ms:.1f} ms "
              f"(target p99 <= {PROBE_P99_TARGET_MS:g} ms: {verdict(p99_ms <= PROBE_P99_TARGET_MS and not failed)})")
        print(f"  slowest GET sent in each second of the load, ms: {probes.slowest_by_second()}")

    events = sum(o.events for o in outcomes)
    if result.xacts is not None:
        probe_share = result.xacts_per_probe * len(probes.seconds)
        per_event = (result.xacts - probe_share) / events if events else float("nan")
        print(f"SQL transactions per event: {per_event:.2f} ({result.xacts} transactions, less {probe_share:.0f} for "
              f"the probes at {result.xacts_per_probe:.1f} each; {events} events, {events / runs:.1f} per run)")
    else:
        print(f"SQL transactions per event: n/a on SQLite ({events} events, {events / runs:.1f} per run)")

    if result.peak_connections is not None:
        # Workers also hold the queue engine's connections, whose number is its own: no bound then.
        pools = int(os.environ.get("DATABASE_POOL_SIZE", "10")) * options.web
        target = "" if options.workers else f"; target <= {pools}, the pools: {verdict(result.peak_connections <= pools)}"
        print(f"peak database connections: {result.peak_connections} ({result.connection_samples} samples{target})")
    else:
        print("peak database connections: n/a on SQLite")

    if result.cpu_s is not None:
        print(f"CPU per run: {result.cpu_s / runs * 1000:.0f} ms (web and worker processes: {result.cpu_s:.1f} s; "
              f"besides: this process {result.own_cpu_s:.1f} s, market data server {result.market_data_cpu_s or 0:.1f} s)")
    else:
        print("CPU per run: n/a (no /proc)")

    steps = sum((o.market_data for o in outcomes), Counter())
    print("upstream calls per run: " + ", ".join(f"{result.upstream[k] / runs:.2f} {k}" for k in sorted(result.upstream))
          + "; market data steps: " + (", ".join(f"{n} {state}" for state, n in steps.most_common()) or "none"))


def _delta(end: float | None, start: float | None) -> float | None:
    return end - start if end is not None and start is not None else None


def app_log_problems(children: Children) -> Counter[str]:
    problems: Counter[str] = Counter()
    for name in children.processes:
        path = children.log_dir / f"{name}.log"
        if path.exists():
            lines = path.read_text(errors="replace").splitlines()
            for n, line in enumerate(lines):
                if " ERROR " in line or " CRITICAL " in line or line.startswith("Traceback"):
                    problems[name] += 1
                    if problems[name] == 1:  # the first one, with the end of its traceback
                        tail = next(
                            (later for later in lines[n + 2 : n + 80] if later and not later[0].isspace() and not later.startswith("Traceback")),
                            "",
                        )
                        print(f"  first error in {name}: {line[:200]} / {tail[:200]}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(argv)
    # A SIGTERM cleans up as Ctrl-C does: children stopped, database dropped.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    backend = f"{options.backend} backend" + (f", {options.workers} worker(s)" if options.workers else "")
    print(f"load: {options.runs} {options.mode} runs at once; {options.web} web process(es), {backend}; "
          f"{'PostgreSQL' if options.db == 'postgres' else 'SQLite'}, {'Redis' if options.redis else 'no Redis'}; "
          f"upstream {upstream_path_s(options.mode):.2f} s on a run's critical path")
    try:
        with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp, contextlib.ExitStack() as stack:
            directory = Path(tmp)
            database = stack.enter_context(fresh_database(options.db, directory))
            fake = stack.enter_context(FakeOpenAIServer())
            script_upstream(fake, [f"warm{n}" for n in range(options.web)]
                            + [f"alone{n}" for n in range(UNLOADED_RUNS)]
                            + [f"load{n}" for n in range(options.runs)])
            children = stack.enter_context(Children(directory))
            market_port = free_port()
            market_env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
            children.start("market-data", ["-m", "tests.fakes.market_data_launcher", "--http", "--port",
                                           str(market_port), "--latency", str(YAHOO_S)], market_env)
            env = app_environment(options, database, fake, f"http://127.0.0.1:{market_port}/mcp")
            run_command(["manage.py", "migrate", "--noinput"], env)
            key = run_command(["manage.py", "create_api_key", "bench"], env).strip().splitlines()[-1]
            wait_for_port(market_port, children)
            base_urls = start_app(options, children, env)
            report(options, asyncio.run(measure(options, database, fake, children, base_urls, key)))
            if fake.errors:
                print(f"fake OpenAI server errors: {len(fake.errors)}; the first: {fake.errors[0]}")
            problems = app_log_problems(children)
            if problems:
                print("app log errors: " + ", ".join(f"{name} {n} lines" for name, n in sorted(problems.items())))
    except SetupFailed as exc:
        print(f"set-up failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; child processes stopped", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
