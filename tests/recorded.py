"""Real replies of the SEC, Yahoo and OpenAI, recorded by public projects and kept beside the repository in
`../shared/recorded/` (each folder's SOURCES.md and MANIFEST.json or index.json say where each body comes from).

They are never copied into the repository: a user's clone has no `../shared/`, so the tests that replay them
skip there, saying why. Tests serve them through a loopback server at the service's own paths, so the real
client library (openai, yfinance, our SEC client) parses them.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

# RECORDED_DIR points elsewhere when the folder is not beside the clone (a git worktree, say).
RECORDED = Path(os.environ.get("RECORDED_DIR") or Path(__file__).resolve().parents[2] / "shared" / "recorded")
SKIP_REASON = f"the recorded replies are not here ({RECORDED}); they live beside the repository, not in it"


def recorded_path(*parts: str) -> Path:
    """A recorded file (the `.gz` beside it when only that is stored); the calling test skips when absent."""
    path = RECORDED.joinpath(*parts)
    if not path.exists() and path.with_name(path.name + ".gz").exists():
        path = path.with_name(path.name + ".gz")
    if not path.exists():
        pytest.skip(SKIP_REASON if not RECORDED.is_dir() else f"{path} is not among the recorded replies")
    return path


def recorded_bytes(*parts: str) -> bytes:
    """The body as recorded, decompressed when it is stored gzipped."""
    path = recorded_path(*parts)
    raw = path.read_bytes()
    return gzip.decompress(raw) if path.suffix == ".gz" else raw


def recorded_json(*parts: str) -> Any:
    return json.loads(recorded_bytes(*parts))


requires_recorded = pytest.mark.skipif(not RECORDED.is_dir(), reason=SKIP_REASON)
