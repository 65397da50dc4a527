"""What one attempt at delivering a brief came to, as a sender reports it and as `Delivery.attempts` keeps it.

Three outcomes: `delivered` (never sent again), `temporary_failure` (a 5xx, a time-out, a refused or broken
connection, an SMTP 4xx: tried again after a pause) and `permanent_failure` (a 4xx, a redirect, an address
refused by the guard, an SMTP 5xx: not tried again). `error` is a short code, then at most a short excerpt
of what the far end answered; never a secret, never a whole body.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

ERROR_EXCERPT_CHARS = 200

Outcome = Literal["delivered", "temporary_failure", "permanent_failure"]


@dataclass(frozen=True)
class AttemptResult:
    outcome: Outcome
    status_code: int | None = None
    error: str | None = None

    def as_record(self, at: datetime) -> dict[str, object]:
        """The entry kept in `Delivery.attempts`."""
        return {"at": at.isoformat(), "outcome": self.outcome, "status_code": self.status_code, "error": self.error}


def delivered(status_code: int | None = None) -> AttemptResult:
    return AttemptResult("delivered", status_code)


def temporary(error: str, status_code: int | None = None) -> AttemptResult:
    return AttemptResult("temporary_failure", status_code, error)


def permanent(error: str, status_code: int | None = None) -> AttemptResult:
    return AttemptResult("permanent_failure", status_code, error)


def excerpt(text: str, *, hide: str = "") -> str:
    """`text` on one line, cut to ERROR_EXCERPT_CHARS, with `hide` (a secret a far end might echo) masked."""
    if hide:
        text = text.replace(hide, "[hidden]")
    text = " ".join(text.split())
    return text if len(text) <= ERROR_EXCERPT_CHARS else text[: ERROR_EXCERPT_CHARS - 1] + "…"
