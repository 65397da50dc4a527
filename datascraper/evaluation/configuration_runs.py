"""One configuration's evaluation in a process of its own: `manage.py evaluate SET --out OUT/NAME ...` with the
configuration's environment (`configurations`), its output relayed line by line, bounded by a timeout.

The child is an ordinary evaluation: it claims and resumes its own folder, and writes its own report there.
One that outlasts its timeout is stopped as Ctrl-C stops it (SIGINT: it writes the report of what finished),
and killed when it has not stopped within a grace period. Whatever ends it, its end is this configuration's
outcome, reported in the comparison: the next configuration still runs.
"""

from __future__ import annotations

import math
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Literal

from datascraper.evaluation.judge import JUDGE_TIMEOUT_S
from datascraper.models_config import ResearchConfig

RunStatus = Literal["completed", "failed", "timed_out", "interrupted"]
# How long a child asked to stop has to write its report and exit before it is killed.
STOP_GRACE_S = 20.0
# A child's start (Django, the market data server) and end (the report), beyond its questions.
START_AND_REPORT_S = 120.0
# The exit status of an evaluation stopped by Ctrl-C (the command's, and its children's).
EXIT_INTERRUPTED = 130
_COMMAND_ERROR = "CommandError: "


@dataclass(frozen=True)
class ConfigurationRun:
    """How a configuration's process ended. `error`: its last line when it failed (for a named failure,
    `code: what to do`), or why it was stopped."""

    status: RunStatus
    returncode: int | None
    error: str | None = None


def default_timeout(rows: int, concurrency: int, research: ResearchConfig) -> float:
    """A bound no evaluation that keeps its own deadlines reaches: every row taking its whole run budget and
    the judge's, `concurrency` at a time, plus the process's start and report."""
    per_row = research.run_timeout_s + JUDGE_TIMEOUT_S
    return START_AND_REPORT_S + math.ceil(rows / max(1, concurrency)) * per_row


def run_configuration(
    command: Sequence[str],
    environment: Mapping[str, str],
    *,
    timeout_s: float,
    on_line: Callable[[str], None],
) -> ConfigurationRun:
    """Run `command` with exactly `environment`, passing each line it prints (stdout and stderr) to `on_line`,
    and say how it ended. A Ctrl-C here reaches the child too (the same process group): the child is waited
    for while it writes its report, and the run is `interrupted`."""
    child = subprocess.Popen(
        list(command),
        env=dict(environment),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    assert child.stdout is not None  # piped above
    last_line: list[str] = []
    relay = threading.Thread(target=_relay, args=(child.stdout, on_line, last_line), daemon=True)
    relay.start()
    try:
        returncode = child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _stop(child)
        relay.join(STOP_GRACE_S)
        return ConfigurationRun("timed_out", child.returncode, f"stopped after {timeout_s:g} s (its timeout)")
    except KeyboardInterrupt:
        _stop(child, already_asked=True)
        relay.join(STOP_GRACE_S)
        return ConfigurationRun("interrupted", child.returncode, "interrupted")
    relay.join(STOP_GRACE_S)  # a process the child started may hold the pipe a moment longer
    if returncode == 0:
        return ConfigurationRun("completed", returncode)
    status: RunStatus = "interrupted" if returncode == EXIT_INTERRUPTED else "failed"
    error = last_line[0].removeprefix(_COMMAND_ERROR) if last_line else f"exited with status {returncode}"
    return ConfigurationRun(status, returncode, error)


def _relay(stream: IO[str], on_line: Callable[[str], None], last_line: list[str]) -> None:
    for raw in stream:
        line = raw.rstrip("\r\n")
        if line.strip():
            on_line(line)
            last_line[:] = [line]


def _stop(child: subprocess.Popen[str], *, already_asked: bool = False) -> None:
    """Ask the child to stop as Ctrl-C does (unless the terminal's Ctrl-C already did), then kill it if it
    has not exited within the grace period (or at a second Ctrl-C)."""
    if not already_asked:
        child.send_signal(signal.SIGINT)
    try:
        child.wait(timeout=STOP_GRACE_S)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):  # a second Ctrl-C: no more waiting
        child.kill()
        child.wait()
