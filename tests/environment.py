"""The test suite's environment, set as the suite's settings (tests/settings.py) are imported, before
config.settings reads it; every process the suite starts inherits it.

- DEBUG is off unless asked for; the suite asks, as `make run` does (pytest-django still turns it off
  while each test runs): without it the settings would want a secret key and redirect every request to
  HTTPS.
- Every client of the suite connects from 127.0.0.1, so limits per client address would bind all of them
  together: they are off unless a test sets them (the `limits` fixture).
"""

import os

os.environ.setdefault("DJANGO_DEBUG", "1")
for _limit in ("CHAT_ADDRESS_RATE_LIMIT", "CHAT_ADDRESS_SESSION_RATE_LIMIT", "CHAT_AUTH_FAILURE_RATE_LIMIT"):
    os.environ.setdefault(_limit, "off")
os.environ.setdefault("CHAT_MAX_STREAMS_PER_ADDRESS", "0")
