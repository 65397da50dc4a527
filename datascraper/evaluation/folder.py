"""The folder an evaluation writes into belongs to one question set.

Its `manifest.json` names the set (its absolute path) and the SHA-256 of the set's content when it last ran
there. The set is its path, not its content: an edited set still resumes in its folder, and its edited rows
are answered again (`results.row_key`). A folder that names another set, or that holds a results log, a
report, a plot or a comparison with no manifest (another tool's file, or an evaluation made before
manifests), is refused untouched: results of two sets are never mixed, and nothing of someone else's is
rewritten.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ValidationError

from datascraper.evaluation.comparison import COMPARISON_NAME, FIGURES_NAME
from datascraper.evaluation.report import PLOT_NAME, REPORT_NAME
from datascraper.evaluation.results import RESULTS_NAME

MANIFEST_NAME = "manifest.json"


class FolderTaken(Exception):
    """The output folder is not this question set's; the message names the folder and what it holds."""


class FolderManifest(BaseModel):
    question_set: str
    sha256: str


@dataclass(frozen=True)
class FolderClaim:
    """The folder is now this set's. `set_changed`: the set ran here before, with other content."""

    set_changed: bool


def claim_folder(out_dir: Path, questions: Path) -> FolderClaim:
    """Make `out_dir` the folder of the question set at `questions` (creating it, writing its manifest), or
    raise FolderTaken with nothing written."""
    if out_dir.exists() and not out_dir.is_dir():
        raise FolderTaken(f"{out_dir} is a file, not a folder; give another --out.")
    question_set = str(questions.resolve())
    digest = hashlib.sha256(questions.read_bytes()).hexdigest()
    earlier = _manifest_of(out_dir)
    if earlier is not None and earlier.question_set != question_set:
        raise FolderTaken(
            f"{out_dir} holds the evaluation of another question set ({earlier.question_set}); "
            "give another --out, or move that folder away."
        )
    if earlier is None:
        ours = (RESULTS_NAME, REPORT_NAME, PLOT_NAME, COMPARISON_NAME, FIGURES_NAME)
        unclaimed = [name for name in ours if (out_dir / name).exists()]
        if unclaimed:
            raise FolderTaken(
                f"{out_dir} holds {', '.join(unclaimed)} but no {MANIFEST_NAME} naming its question set, so it "
                f"is not known to be {questions}'s; give another --out, or move those files away."
            )
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = FolderManifest(question_set=question_set, sha256=digest)
    (out_dir / MANIFEST_NAME).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return FolderClaim(set_changed=earlier is not None and earlier.sha256 != digest)


def _manifest_of(out_dir: Path) -> FolderManifest | None:
    path = out_dir / MANIFEST_NAME
    if not path.exists():
        return None
    try:
        return FolderManifest.model_validate_json(path.read_bytes())
    except ValidationError:
        raise FolderTaken(f"{path} is not an evaluation manifest; give another --out, or move it away.") from None
