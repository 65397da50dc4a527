"""The README's "on your own machines" `manage.py doctor` example, from a real run against the fakes:
`python benchmarks/doctor_local_example.py`.

The configuration a team runs without OpenAI: both models on an OpenAI-compatible server (as Ollama serves
`qwen2.5:14b`) and SearxNG as the search, no OpenAI key. The far ends are the fakes of the tests: a Chat
Completions server (no Responses API), a SearxNG instance, the fake Yahoo under the real yfinance and MCP
server, and a local page for the citation fetcher. Ports change each run and print as PORT; latencies are
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

DATABASE = Path(tempfile.mkdtemp()) / "doctor-local-example.sqlite3"
for name in ("REDIS_URL", "RUNS_BACKEND", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
    os.environ.pop(name, None)
os.environ.update(
    DJANGO_SETTINGS_MODULE="config.settings",
    DJANGO_DEBUG="1",
    DATABASE_URL=f"sqlite:///{DATABASE}",
    RESEARCH_PLANNER_MODEL="openai-compatible:qwen2.5:14b",
    RESEARCH_MODEL="openai-compatible:qwen2.5:14b",
    SEARCH_PROVIDER="searxng",
    CITATION_FETCH_ALLOW_PRIVATE="1",  # the fetcher's page is on this machine
)

import django  # noqa: E402

django.setup()

from django.core.management import CommandError, call_command  # noqa: E402

from benchmarks.fake_upstreams import fake_upstreams  # noqa: E402
from tests.fakes.chat_completions_server import FakeChatCompletionsServer  # noqa: E402
from tests.fakes.openai_server import JsonReply, wants_structured_output  # noqa: E402
from tests.fakes.page_server import FakePageServer, article  # noqa: E402
from tests.fakes.searxng_server import FakeSearxng, searx_result  # noqa: E402


def main() -> None:
    call_command("migrate", verbosity=0)
    with FakeChatCompletionsServer() as server, FakeSearxng() as searxng, FakePageServer() as pages:
        os.environ.update(OPENAI_COMPATIBLE_BASE_URL=server.base_url, SEARXNG_URL=searxng.url)
        page = pages.add("/about", article("About", "A public page the citation fetcher can read."))
        searxng.results = [searx_result(page, f"Result {n}", "A result.") for n in range(3)]
        with fake_upstreams(server=server) as fake:
            fake.script(JsonReply({"answer": True}), when=wants_structured_output, times=None)
            out = StringIO()
            try:
                call_command("doctor", "--page-url", page, stdout=out)
            except CommandError as exc:
                out.write(f"(exit status {exc.returncode})\n")
    text = out.getvalue()
    for port in {pages.port, searxng.port, server.port}:
        text = text.replace(f":{port}", ":PORT")
    print(text, end="")


if __name__ == "__main__":
    main()
