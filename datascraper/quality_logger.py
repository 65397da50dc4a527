"""Quality signals of one run: stored on the run (`RunSummary.signals`) and logged as one JSON line.

The signals say which path a question took and how well the answer holds up: routes and fallbacks, why
research stopped, time and tokens, whether every citation resolves, and whether the numbers the answer
attributes to market data are numbers market data returned or figures computed from them (those that are
neither are also shown to the user, in a note under the answer).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from datascraper import prompts
from datascraper.figures import figures_in, near
from datascraper.schemas import Route, Source, SubQuestionType, UsageLedger
from datascraper.sources import publisher_url

logger = logging.getLogger("datascraper.quality")


class SubQuestionOutcome(BaseModel):
    """How one sub-question went: its planned route, the route that answered it, and its status."""

    id: str
    type: SubQuestionType
    planned_route: Route
    route: Route
    status: Literal["answered", "failed", "deferred"]
    fallback_reason: str | None = None
    error: str | None = None
    from_filings: bool = False  # answered (in part) from the company's SEC filings


class SpeculationOutcome(BaseModel):
    """What became of a web search started while the analyzer decided (mode auto).

    `elapsed_ms`: kept, how long the search had been running when the analyzer decided (its head start);
    cancelled, how long it ran before it was closed. A cancelled call's tokens are those the provider
    reported, none unless it finished (`completed`) first; it may still bill the search and the input.
    """

    outcome: Literal["kept", "cancelled"]
    elapsed_ms: int
    completed: bool | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


class RunRecord(BaseModel):
    """What the pipeline knows at the end of a run; `compute_signals` turns it into the signals."""

    requested_mode: str
    mode: Literal["quick", "research"]
    fast_path: bool = False
    analysis_fallback: str | None = None  # the error code when the analyzer failed
    quote_fallback: str | None = None  # why a fast-path quote gave way to a web search
    speculation: SpeculationOutcome | None = None  # None: no web search was started speculatively
    outcomes: list[SubQuestionOutcome] = Field(default_factory=list)
    rounds: int = 0
    max_rounds: int = 0
    stop_reason: str | None = None
    gap_detector_fallback: str | None = None
    timings: dict[str, int] = Field(default_factory=dict)
    usage: UsageLedger = Field(default_factory=UsageLedger)
    answer: str = ""
    sources: list[Source] = Field(default_factory=list)
    citations_dropped: int = 0  # markers the synthesizer's guard removed while streaming
    numbers: NumberCheck  # the answer's numbers cited to market data, checked once by the pipeline


def compute_signals(record: RunRecord) -> dict[str, Any]:
    outcomes = record.outcomes
    web_hits = sum(1 for o in outcomes if o.route == "web_search" and o.status == "answered")
    market_hits = sum(1 for o in outcomes if o.route == "market_data" and o.status == "answered")
    return {
        "mode": record.mode,
        "requested_mode": record.requested_mode,
        "fast_path": record.fast_path,
        "analysis_fallback": record.analysis_fallback,
        "quote_fallback": record.quote_fallback,
        "speculative_search": record.speculation.model_dump() if record.speculation is not None else None,
        "sub_questions": {
            "total": len(outcomes),
            "by_type": dict(Counter(o.type for o in outcomes)),
            "by_route": dict(Counter(o.planned_route for o in outcomes)),
        },
        "market_data_hits": market_hits,
        "filing_hits": sum(1 for o in outcomes if o.from_filings),
        "web_hits": web_hits,
        "fallbacks": sum(1 for o in outcomes if o.fallback_reason is not None),
        "fallback_reasons": dict(Counter(o.fallback_reason for o in outcomes if o.fallback_reason)),
        "failed": sum(1 for o in outcomes if o.status == "failed"),
        "rounds": record.rounds,
        "stop_reason": record.stop_reason,
        "completed_early": record.rounds > 0 and record.rounds < record.max_rounds,
        "gap_detector_fallback": record.gap_detector_fallback,
        "timings": record.timings,
        "model_calls": record.usage.calls,
        "tokens": {
            "input": sum(u.input_tokens for u in record.usage.by_model.values()),
            "output": sum(u.output_tokens for u in record.usage.by_model.values()),
        },
        "by_model": {model: usage.model_dump() for model, usage in record.usage.by_model.items()},
        "sources": len(record.sources),
        "distinct_domains": len({_domain(publisher_url(s)) for s in record.sources}),
        "citations": citation_integrity(record.answer, record.sources, dropped=record.citations_dropped),
        "numbers": record.numbers.signal(),
    }


def log_signals(signals: dict[str, Any]) -> None:
    """One structured line per run, for whatever collects the logs."""
    logger.info(json.dumps({"event": "research_run", **signals}, sort_keys=True, default=str))


def _domain(url: str) -> str:
    return (urlsplit(url).hostname or "").removeprefix("www.")


# --- citation integrity -----------------------------------------------------------------------------------

_MARKER = re.compile(r"\[(\d+)\]")


def citation_integrity(answer: str, sources: Sequence[Source], *, dropped: int = 0) -> dict[str, Any]:
    """Markers in the answer that resolve to a source, those that do not, and sources never cited.

    `dropped` counts markers removed during streaming because they named no source; they count as
    unresolved even though the stored answer no longer shows them.
    """
    numbers = {source.n for source in sources}
    cited = [int(n) for n in _MARKER.findall(answer)]
    resolved = sum(1 for n in cited if n in numbers)
    return {
        "markers": len(cited) + dropped,
        "resolved": resolved,
        "unresolved": len(cited) - resolved + dropped,
        "uncited_sources": sorted(numbers - set(cited)),
    }


# --- numbers that match no market data value --------------------------------------------------------------
#
# The heuristic, in full (figures are read by `datascraper.figures`, shared with citation verification):
# - Only sentences that cite a market data source are checked (a sentence is split at . ! ? followed by
#   white space); numbers elsewhere come from the web and are not expected to match.
# - Markers [n], ISO dates, times (14:30) and years (1900-2100 without decimals) are ignored, as are plain
#   integers below 1,000 with no currency, percent, decimals or magnitude ("3 analysts", "Q3").
# - A number's magnitude word or suffix (thousand/K, million/M, billion/B/bn, trillion/T) scales it.
# - It matches a market data value (any number in the payloads) or a computed figure (a fact's value, in
#   percent for percentages), compared by absolute value so "down 1.23" matches -1.23, when they differ by
#   at most one unit of the last digit written, after scaling. The tolerance is deliberate: a figure
#   rounded (or cut) to the precision it is written with matches, and so does one rounded twice (the
#   prompt shows figures rounded, +2.05% for 2.046, which the answer may write as 2.1%); one off by more
#   does not. "$391.04 billion" matches 391,035,000,000; "6.1%" matches a computed 6.07; "6.2%" does not.
# - A figure the answer derives itself (nothing computed it) does not match: it is listed in the signals
#   and in a note under the answer (`NumberCheck.note`). The check flags figures to verify; it does not
#   prove an error.

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def market_values(payloads: Iterable[Any]) -> list[float]:
    """Every number in market data payloads (nested dicts and lists), as absolute values."""
    return sorted({abs(float(v)) for v in _numbers_in(list(payloads)) if math.isfinite(v)})


def _numbers_in(value: Any) -> Iterator[float]:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield float(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _numbers_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _numbers_in(item)


_LISTED_UNTRACED = 10  # in the signals and the note


class UntracedNumber(BaseModel):
    """A number cited to market data that matches neither a value it returned nor a computed figure."""

    value: str = Field(description="As the answer writes it, e.g. 12.3%.")
    sources: list[int] = Field(description="The market data sources its sentence cites.")


class NumberCheck(BaseModel):
    """The numbers of an answer's sentences that cite market data, against the values they can come from."""

    checked: int = 0
    computed: int = 0  # matched a computed figure rather than a value of the payloads
    untraced: list[UntracedNumber] = Field(default_factory=list)

    def signal(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "computed": self.computed,
            "unmatched": len(self.untraced),
            "unmatched_values": [item.model_dump() for item in self.untraced[:_LISTED_UNTRACED]],
        }

    def note(self) -> str:
        """The note shown under the answer, naming each untraced number with its markers; "" when none."""
        listed = dict.fromkeys(f"{item.value} " + "".join(f"[{n}]" for n in item.sources) for item in self.untraced)
        if not listed:
            return ""
        shown = list(listed)[:_LISTED_UNTRACED]
        more = len(listed) - len(shown)
        figures = ", ".join(shown) + (f" and {more} more" if more else "")
        return prompts.UNTRACED_NUMBERS_NOTE.format(figures=figures)


def check_numbers(
    answer: str, sources: Sequence[Source], values: Sequence[float], computed: Sequence[float] = ()
) -> NumberCheck:
    """Check each number of the sentences citing one of `sources` (market data, or filings cited for their
    figures; web sources are left to the citation check) against the payloads' `values`, then the
    `computed` figures."""
    market_numbers = {s.n for s in sources if s.kind != "web"}
    check = NumberCheck()
    if not market_numbers:
        return check
    for sentence in _SENTENCE_END.split(answer):
        cited = sorted({int(n) for n in _MARKER.findall(sentence)} & market_numbers)
        if not cited:
            continue
        for figure in figures_in(sentence):
            if not figure.checkable:
                continue
            check.checked += 1
            if near(figure, values):
                continue
            if near(figure, computed):
                check.computed += 1
                continue
            check.untraced.append(UntracedNumber(value=figure.written, sources=cited))
    return check
