"""The README and docs/ stay true: what they name exists, their links resolve, and their example outputs are
what the code prints today.

Docs rot silently: a renamed command, a setting nobody reads any more, a moved file or a changed event still
reads well. These tests read README.md and every docs/*.md file and check what they name against the tree:

- every `manage.py <command>` is a management command Django knows, and every `make <target>` a target of the
  Makefile (looked for in code: inline code spans and fenced blocks, not in prose);
- every environment variable (an upper-case name with an underscore in code) is read by the code: it appears
  as a string literal in the code (config/, chat/, datascraper/, manage.py; tests/ and benchmarks/ for the
  variables only they read), unless it is one of Django's own settings;
- every backticked path into the tree (`chat/...`, `datascraper/...`, `benchmarks/...`, ...) exists;
- every relative link resolves, to a file and, with `#anchor`, to one of its headings;
- every figure in docs/performance.md's tables names the benchmark script that prints it;
- every block fenced by `<!-- output of: python benchmarks/X.py [args] -->` and `<!-- end of output -->` is
  what that script prints now (timings normalised). `python tests/test_docs.py --write` rewrites the blocks.

Each failure names the file, the line and what is missing, so whoever adds a setting or a command knows what to
write or fix.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
CODE_DIRS = [ROOT / "config", ROOT / "chat", ROOT / "datascraper", ROOT / "tests", ROOT / "benchmarks"]
TREE_TOPS = ("config/", "chat/", "datascraper/", "tests/", "benchmarks/", "docs/", ".ci/")

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`([^`\n]+)`")
MANAGE_COMMAND = re.compile(r"manage\.py\s+([a-z][a-z0-9_]*)")
MAKE_TARGET = re.compile(r"(?:^|[\s;&|(])make\s+([a-z][a-z0-9_-]*)", re.MULTILINE)
VARIABLE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
ASSIGNED_VARIABLE = re.compile(r"(?<![\w.$])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)=")
TREE_PATH = re.compile(r"^[\w./-]+$")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
EXAMPLE = re.compile(
    r"^<!-- output of: python (?P<command>[^>]+?) -->\n```text\n(?P<block>.*?)```\n<!-- end of output -->",
    re.MULTILINE | re.DOTALL,
)
TIMING = re.compile(r'"elapsed_ms": \d+|\(\d+ ms\)')


def _without_timings(text: str) -> str:
    """Measured times (`"elapsed_ms": 12`, `(12 ms)`) as `…`: they differ every run."""
    return TIMING.sub(lambda match: re.sub(r"\d+", "…", match.group(0)), text)


@dataclass(frozen=True)
class Mention:
    """A name found in a doc, with where it was found, so a failure can point at it."""

    doc: Path
    line: int
    name: str

    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _blanked(pattern: re.Pattern[str], text: str) -> str:
    """`text` with what `pattern` matches turned to spaces, so offsets (and line numbers) stay true."""
    return pattern.sub(lambda match: re.sub(r"[^\n]", " ", match.group(0)), text)


def _code_spans(text: str) -> list[tuple[int, str]]:
    """Each fenced block and inline code span, with its offset: where commands and variables are named."""
    spans = [(match.start(), match.group(0)) for match in FENCE.finditer(text)]
    prose = _blanked(FENCE, text)
    spans += [(match.start(1), match.group(1)) for match in INLINE_CODE.finditer(prose)]
    return spans


def _mentions(pattern: re.Pattern[str]) -> list[Mention]:
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for offset, span in _code_spans(text):
            for match in pattern.finditer(span):
                found.append(Mention(doc, _line_of(text, offset + match.start(1)), match.group(1)))
    return found


def _variables() -> list[Mention]:
    """Upper-case names with an underscore, alone in a code span (`NAME` or `NAME=value`), or assigned in a
    fenced block (`export NAME=...`, `NAME=... command`)."""
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for offset, span in _code_spans(text):
            if span.startswith(("```", "~~~")):
                found += [
                    Mention(doc, _line_of(text, offset + m.start(1)), m.group(1)) for m in ASSIGNED_VARIABLE.finditer(span)
                ]
                continue
            name = span.split("=", 1)[0].strip()
            if VARIABLE.match(name):
                found.append(Mention(doc, _line_of(text, offset), name))
    return found


def _code_text() -> str:
    files = [path for folder in CODE_DIRS for path in folder.rglob("*.py") if path != Path(__file__).resolve()]
    files.append(ROOT / "manage.py")
    return "\n".join(path.read_text() for path in files)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    text = FENCE.sub("", doc.read_text())
    return {_slug(match.group(1)) for match in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", text, re.MULTILINE)}


def _report(problems: list[str], what: str) -> str:
    return f"{len(problems)} {what}:\n  " + "\n  ".join(problems)


def test_every_manage_py_command_named_exists() -> None:
    from django.core.management import get_commands

    commands = set(get_commands())
    problems = [
        f"{m.where()}: `manage.py {m.name}` is not a management command: add it under "
        f"chat/management/commands/ or fix the doc"
        for m in _mentions(MANAGE_COMMAND)
        if m.name not in commands
    ]
    assert not problems, _report(problems, "commands named in the docs do not exist")


def test_every_make_target_named_exists() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-zA-Z][\w-]*)\s*:(?!=)", makefile, re.MULTILINE))
    problems = [
        f"{m.where()}: `make {m.name}` is not a target of the Makefile (targets: {', '.join(sorted(targets))})"
        for m in _mentions(MAKE_TARGET)
        if m.name not in targets
    ]
    assert not problems, _report(problems, "make targets named in the docs do not exist")


def test_every_environment_variable_named_is_read_by_the_code() -> None:
    from django.conf import global_settings

    code = _code_text()
    problems = []
    for mention in _variables():
        if hasattr(global_settings, mention.name):
            continue  # one of Django's settings (SECURE_PROXY_SSL_HEADER, ...), named as such
        if re.search(rf"""["']{mention.name}["']""", code):
            continue
        problems.append(
            f"{mention.where()}: {mention.name} is not read anywhere in the code "
            f'(no "{mention.name}" string in the code): read it (config/settings.py or '
            f"datascraper/models_config.py) or drop it from the doc"
        )
    assert not problems, _report(problems, "environment variables named in the docs are not read by the code")


def test_every_path_into_the_tree_named_exists() -> None:
    problems = []
    for doc in DOCS:
        text = doc.read_text()
        for match in INLINE_CODE.finditer(_blanked(FENCE, text)):
            path = match.group(1).strip()
            if not path.startswith(TREE_TOPS) or not TREE_PATH.match(path) or "*" in path:
                continue
            if not (ROOT / path).exists():
                problems.append(f"{doc.relative_to(ROOT)}:{_line_of(text, match.start())}: `{path}` does not exist")
    assert not problems, _report(problems, "paths named in the docs do not exist")


def test_every_relative_link_resolves() -> None:
    problems = []
    for doc in DOCS:
        text = doc.read_text()
        prose = _blanked(INLINE_CODE, _blanked(FENCE, text))  # in code, `[n](url)` shows a format, not a link
        for match in LINK.finditer(prose):
            target = match.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            resolved = (doc.parent / path).resolve() if path else doc
            where = f"{doc.relative_to(ROOT)}:{_line_of(text, match.start())}"
            if not resolved.exists():
                problems.append(f"{where}: link to {target}: {path} does not exist")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                problems.append(f"{where}: link to {target}: {resolved.relative_to(ROOT)} has no heading #{anchor}")
    assert not problems, _report(problems, "relative links in the docs do not resolve")


def test_every_measured_figure_names_the_command_that_reproduces_it() -> None:
    """docs/performance.md: each row of a table with a `command` column names a benchmark script that exists."""
    doc = ROOT / "docs" / "performance.md"
    problems, columns = [], None
    for number, line in enumerate(doc.read_text().splitlines(), start=1):
        if not line.startswith("|"):
            columns = None
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if columns is None:
            columns = cells
            continue
        if "command" not in columns or set(line) <= set("|-: "):
            continue
        command = cells[columns.index("command")]
        scripts = re.findall(r"python (benchmarks/[\w.]+\.py)", command)
        if not scripts or not all((ROOT / script).exists() for script in scripts):
            problems.append(f"docs/performance.md:{number}: `{cells[0]}` names no benchmark script that exists ({command!r})")
    assert not problems, _report(problems, "figures lack the command that reproduces them")


def _examples() -> list[tuple[Path, int, str, str]]:
    return [
        (doc, _line_of(doc.read_text(), match.start()), match.group("command"), match.group("block"))
        for doc in DOCS
        for match in EXAMPLE.finditer(doc.read_text())
    ]


# The examples show the product's defaults: the suite's own settings (CITATION_VERIFY=0, ...) and a reader's
# configuration are not passed on to the scripts.
SETTINGS_PREFIXES = (
    *("RESEARCH_", "CITATION_", "MARKET_DATA_", "OPENAI_", "CHAT_", "RUNS_", "SEC_"),
    *("SEARCH_", "SEARXNG_", "TAVILY_", "BRAVE_", "EXA_"),
)


def _run_example(command: str) -> str:
    """What the script prints now, with the default settings: from the repository's root, with this interpreter."""
    script, *arguments = command.split()
    environment = {name: value for name, value in os.environ.items() if not name.startswith(SETTINGS_PREFIXES)}
    completed = subprocess.run(
        [sys.executable, script, *arguments],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert completed.returncode == 0, f"python {command} failed:\n{completed.stderr[-3000:]}"
    return completed.stdout


def test_the_docs_name_their_example_scripts() -> None:
    commands = {command for _, _, command, _ in _examples()}
    assert "benchmarks/router_example.py --brief" in commands, "docs/research-router.md shows the router example"
    assert "benchmarks/trace_example.py" in commands, "docs/confidence.md shows the trace example"
    assert "benchmarks/doctor_example.py" in commands, "README.md shows the doctor example"


@pytest.mark.parametrize("command", sorted({command for _, _, command, _ in _examples()}))
def test_example_outputs_are_what_the_scripts_print(command: str) -> None:
    printed = _without_timings(_run_example(command))
    stale = [
        f"{doc.relative_to(ROOT)}:{line}"
        for doc, line, named, block in _examples()
        if named == command and _without_timings(block) != printed
    ]
    assert not stale, (
        f"the output of `python {command}` has changed, and these blocks show the old one: {', '.join(stale)}. "
        f"Run `python tests/test_docs.py --write` to rewrite them, and read the diff.\nIt prints now:\n{printed}"
    )


def write_examples() -> None:
    """Rewrite every example block with what its script prints now."""
    outputs: dict[str, str] = {}
    for doc in DOCS:
        text = doc.read_text()

        def fill(match: re.Match[str]) -> str:
            command = match.group("command")
            if command not in outputs:
                outputs[command] = _run_example(command)
            return f"<!-- output of: python {command} -->\n```text\n{outputs[command]}```\n<!-- end of output -->"

        updated = EXAMPLE.sub(fill, text)
        if updated != text:
            doc.write_text(updated)
            print(f"rewrote the examples of {doc.relative_to(ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_docs.py --write   (rewrites the docs' example blocks)")
    write_examples()
