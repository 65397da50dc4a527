"""Real app processes for tests about processes: uvicorn web processes and `runworker` workers, on the test
database and Redis, answering against the fake OpenAI server of the test process."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import pytest
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def database_url() -> str:
    """The URL of the database the tests use right now (pytest-django's test database)."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    user = db.get("USER") or "postgres"
    return f"postgres://{user}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen[bytes], deadline_s: float = 30) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"nothing listened on 127.0.0.1:{port}")


def make_run_arguments(port: int) -> list[str]:
    """What `make run` gives Python to serve the app (its recipe in the Makefile), on 127.0.0.1:`port`."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^run: migrate\n\t\$\(BIN\)/python (?P<arguments>.+)$", makefile, re.MULTILINE)
    assert recipe is not None, "the Makefile has no `run` recipe serving the app"
    variables = {"$(HOST)": "127.0.0.1", "$(PORT)": str(port)}
    return [variables.get(word, word) for word in recipe["arguments"].split()]


@dataclass
class AppProcesses:
    """Starts processes with the test's environment (the fake OpenAI server's URL included) and stops
    every one of them at the end."""

    env: dict[str, str]
    started: list[subprocess.Popen] = field(default_factory=list)

    def _spawn(self, args: list[str]) -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, *args], cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.started.append(process)
        return process

    def web(self) -> tuple[subprocess.Popen, str]:
        """A web process served as `make run` serves it."""
        port = free_port()
        process = self._spawn([*make_run_arguments(port), "--timeout-graceful-shutdown", "5"])
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx2.get(f"{url}/api/openapi.json", timeout=1).status_code == 200:
                    return process, url
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the web process did not start")
            time.sleep(0.1)

    def worker(self, *, grace: float = 2.0) -> subprocess.Popen:
        process = self._spawn(["manage.py", "runworker", "--grace", str(grace)])
        time.sleep(0.5)
        return process

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
        for process in self.started:
            process.wait(timeout=10)


@contextmanager
def running_apps(**env: str) -> Iterator[AppProcesses]:
    """App processes with the test's environment and `env`, every one of them stopped at the end."""
    apps = AppProcesses(app_environment(**env))
    try:
        yield apps
    finally:
        apps.stop_all()


def app_environment(**overrides: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_DEBUG": "1",
        "PYTHONUNBUFFERED": "1",
    }
    if settings.REDIS_URL:
        env["REDIS_URL"] = settings.REDIS_URL
    env.update(overrides)
    return env
