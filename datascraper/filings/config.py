"""The filing tools' settings, read from the environment: who we are to the SEC, where its hosts are, and
how hard we may lean on them.

Kept here rather than in `models_config.ResearchConfig`: only the MCP server process reads them, and they
describe the SEC, not the research.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from pydantic import BaseModel, Field, field_validator

DEFAULT_DATA_URL = "https://data.sec.gov"
DEFAULT_WWW_URL = "https://www.sec.gov"
# The SEC's fair-access ceiling, for all our processes together.
SEC_MAX_REQUESTS_PER_SECOND = 10
# Our fields and the environment variables that set them.
_VARIABLES = {
    "user_agent": "SEC_USER_AGENT",
    "data_url": "SEC_DATA_URL",
    "www_url": "SEC_WWW_URL",
    "redis_url": "REDIS_URL",
    "limiter_dir": "SEC_LIMITER_DIR",
}
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


class FilingsConfig(BaseModel):
    """Everything the SEC client needs; without a `user_agent` naming a contact the tools are not configured."""

    model_config = {"frozen": True}

    user_agent: str | None = None
    data_url: str = DEFAULT_DATA_URL
    www_url: str = DEFAULT_WWW_URL
    # Connect and read timeout of one request; retries of one call (timeouts, 5xx, 403/429 after a back-off).
    request_timeout_s: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    max_retries: int = Field(default=2, ge=0, le=5)
    # The first back-off after a 403/429 when the SEC sends no Retry-After; it doubles per retry, capped.
    rate_limit_backoff_s: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    max_backoff_s: float = Field(default=10.0, ge=0, allow_inf_nan=False)
    # After the retries still meet 403/429, the SEC is blocking us (for about ten minutes, it says): requests
    # then fail at once for this long rather than prolong the block; cached answers are still served.
    rate_limit_cooldown_s: float = Field(default=120.0, ge=0, allow_inf_nan=False)
    # The SEC allows 10 requests a second, counted where they arrive. We count them where they leave, as at
    # most 10 in any 2 seconds: however the network delays them (by less than a second), no second at the
    # SEC's end then sees more than 10. Bursts of 10 still go at once; the sustained rate is 5 a second.
    max_requests: int = Field(default=SEC_MAX_REQUESTS_PER_SECOND, ge=1, le=SEC_MAX_REQUESTS_PER_SECOND)
    limit_window_s: int = Field(default=2, ge=1)
    # The budget is kept in a file of this directory (the system's temporary directory when unset), shared
    # by the machine's processes, and in Redis when set, shared by every machine's (limiter.py).
    limiter_dir: str | None = None
    redis_url: str | None = None
    # Cache lifetimes: the ticker map changes daily, facts and the filing list when a company files, and a
    # filed document never.
    tickers_ttl_s: float = 24 * 3600
    submissions_ttl_s: float = 3600
    facts_ttl_s: float = 6 * 3600
    document_ttl_s: float = 30 * 24 * 3600
    # A reply bigger than this is refused (`too_large`) as soon as its Content-Length or the bytes read so
    # far pass it (the largest 10-Ks are ~15 MB). Decompressed bytes count, so a gzip bomb stops here too.
    max_document_bytes: int = Field(default=30_000_000, ge=1_000)
    # Replies read and parsed at once per process (a 10-K's text costs a few times its size while parsed).
    max_parallel_reads: int = Field(default=2, ge=1)
    # Redirects followed per request, each within the SEC's hosts (SEC_DATA_URL, SEC_WWW_URL) only.
    max_redirects: int = Field(default=3, ge=0)

    @field_validator("data_url", "www_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @property
    def problem(self) -> str | None:
        """Why the filing tools cannot ask the SEC, or None. A User-Agent without a contact address is
        refused by the SEC (403), so it counts as not configured; the Yahoo tools on the same server run on."""
        if self.user_agent is None:
            return "SEC filings are not configured: set SEC_USER_AGENT to the operator's name and contact e-mail."
        if not _EMAIL.search(self.user_agent):
            return "SEC_USER_AGENT must name the operator and a contact e-mail, e.g. 'Acme Research ops@acme.com'."
        return None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> FilingsConfig:
        """The settings the environment sets (blank counts as unset); the rest keep their defaults."""
        env = os.environ if environ is None else environ
        values = {field: env.get(variable, "").strip() for field, variable in _VARIABLES.items()}
        return cls.model_validate({field: value for field, value in values.items() if value})
