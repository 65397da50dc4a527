"""docs/evaluation.md's sample comparison, made against the fake OpenAI server:
`python benchmarks/compare_example.py OUT_DIR`.

Runs `manage.py evaluate --config` over two quick-path questions under three configurations that differ only in
`RESEARCH_MODEL`: gpt-5.4 (the fake answers with the reported figures), gpt-5.4-mini (other figures) and
gpt-5.2-chat-latest (shut down on 2026-08-10 in the fake's catalogue: every row `model_unavailable`). Each
configuration runs in its own `manage.py evaluate` process, as it would with real providers; the judge is
scripted (correct when the answer states the reported figure). It shows the comparison's shape; it measures
nothing about answer quality.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import date
from io import StringIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.update(DJANGO_DEBUG="1", MARKET_DATA_WARM_START="0", CITATION_VERIFY="0")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from datascraper.models_config import get_research_config  # noqa: E402
from tests.clients.compare_support import script  # noqa: E402
from tests.clients.test_evaluate_command import ROWS  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer  # noqa: E402

CONFIGURATIONS = {"full": "gpt-5.4", "mini": "gpt-5.4-mini", "retired": "gpt-5.2-chat-latest"}


def main(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    question_set = out_dir / "sample-set.jsonl"
    question_set.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    options = []
    for name, model in CONFIGURATIONS.items():
        (out_dir / f"{name}.env").write_text(f"RESEARCH_MODEL={model}\n", encoding="utf-8")
        options += ["--config", f"{name}={name}.env"]
    with FakeOpenAIServer() as fake:
        fake.today = date(2026, 11, 26)
        os.environ.update(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="example-key")
        get_research_config.cache_clear()
        script(fake)
        os.chdir(out_dir)  # the env files as a user names them, beside the set
        call_command(
            "evaluate", question_set.name, "--out", "comparison", *options, stdout=StringIO(), stderr=StringIO()
        )
    print((out_dir / "comparison" / "comparison.md").read_text())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python benchmarks/compare_example.py OUT_DIR")
    main(Path(sys.argv[1]).resolve())
