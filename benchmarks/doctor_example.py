"""The README's `manage.py doctor` example, from a real run against the fakes: `python benchmarks/doctor_example.py`.

Runs the real command on a fresh SQLite database (migrated), with the far ends faked as in the tests: the
fake OpenAI server (its planner scripted to answer the probe right), the fake Yahoo under the real yfinance
and MCP server, and a local page for the citation fetcher. Redis and the queue are left unconfigured, so
their lines show as skipped. The local page's port changes each run and prints as PORT; latencies are
real. Not a timing: it prints no figure for the performance table.
"""

from __future__ import annotations

import os
import sys
import tempfile
from io import StringIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATABASE = Path(tempfile.mkdtemp()) / "doctor-example.sqlite3"
for name in ("REDIS_URL", "RUNS_BACKEND"):
    os.environ.pop(name, None)
os.environ.update(
    DJANGO_SETTINGS_MODULE="config.settings",
    DJANGO_DEBUG="1",
    DATABASE_URL=f"sqlite:///{DATABASE}",
    CITATION_FETCH_ALLOW_PRIVATE="1",  # the fetcher's page is on this machine
)

import django  # noqa: E402

django.setup()

from django.core.management import CommandError, call_command  # noqa: E402

from benchmarks.fake_upstreams import fake_upstreams  # noqa: E402
from tests.fakes.openai_server import JsonReply, wants_structured_output  # noqa: E402
from tests.fakes.page_server import FakePageServer, article  # noqa: E402


def main() -> None:
    call_command("migrate", verbosity=0)
    with fake_upstreams() as fake, FakePageServer() as pages:
        fake.script(JsonReply({"answer": True}), when=wants_structured_output, times=None)
        page = pages.add("/about", article("About", "A public page the citation fetcher can read."))
        out = StringIO()
        try:
            call_command("doctor", "--page-url", page, stdout=out)
        except CommandError as exc:
            out.write(f"(exit status {exc.returncode})\n")
    print(out.getvalue().replace(f":{pages.port}/", ":PORT/"), end="")


if __name__ == "__main__":
    main()
