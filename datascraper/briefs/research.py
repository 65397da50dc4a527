"""What the research run that writes a brief starts from: the changes as its question, and the tool results
they were read from as its findings, one per symbol, so that the answer cites them and its citations and
numbers are checked against them, as any research answer's are.

The run starts where a round of research would end (`ResearchCheckpoint`: the plan, the findings, the round
and its evidence confidence, no step left), so it goes straight to the synthesizer: one model call, with no
analysis, search or gap detection. `BRIEFS_MAX_TOKENS` bounds what it is given: the results that would take
it past the budget are left out, the least material kinds first, and the question says how many changes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date, datetime

from datascraper import prompts
from datascraper.briefs.schemas import BriefWindow, Change, DetectedChanges, SymbolEvidence, Unchecked
from datascraper.market_data.finding_schemas import MarketDataFinding, ToolResult
from datascraper.models_config import ResearchConfig
from datascraper.research_engine.confidence import assess
from datascraper.research_engine.data.filings import FilingFinding, FilingToolResult
from datascraper.research_engine.state import Finding, PlannedStep, ResearchCheckpoint, RoundRecord
from datascraper.research_engine.synthesizer import MARKET_DATA_PAYLOAD_CHARS
from datascraper.research_engine.trace import trace_entry
from datascraper.schemas import PlanEvent

# Roughly four characters a token, as the prompt is written (JSON payloads and English).
CHARS_PER_TOKEN = 4
# What is left out first when the budget is short: news, then rating changes, then earnings dates.
_KEPT_FIRST = {"get_filings": 0, "get_filing_section": 0, "get_insider_transactions": 0, "get_price_history": 1}
_KEPT_FIRST |= {"get_earnings": 2, "get_analyst_ratings": 3, "get_news": 4}
_KIND_OF_TOOL = {"get_price_history": "price", "get_earnings": "earnings", "get_analyst_ratings": "analyst"}
_KIND_OF_TOOL |= {"get_news": "news"}


def nothing_material(since: datetime, detected: DetectedChanges) -> str:
    """The answer of a brief with nothing material: it says so, then lists what was found and not checked."""
    lines = [prompts.BRIEF_NOTHING_MATERIAL.format(since=_when(since))]
    lines.extend(f"- {change.summary}" for change in detected.changes)
    if detected.unchecked:
        lines.append(prompts.BRIEF_UNCHECKED.format(items=_unchecked_text(detected.unchecked)).strip())
    return "\n".join(lines)


def brief_question(name: str, symbols: Sequence[str], window: BriefWindow, detected: DetectedChanges) -> str:
    """The run's question: the changes, symbol by symbol, and what could not be checked."""
    blocks = []
    for symbol in symbols:
        own = [change for change in detected.changes if change.symbol == symbol]
        if own:
            lines = "\n".join(prompts.BRIEF_CHANGE_LINE.format(kind=c.kind, summary=c.summary) for c in own)
            blocks.append(prompts.BRIEF_SYMBOL_CHANGES.format(symbol=symbol, lines=lines))
    unchecked = prompts.BRIEF_UNCHECKED.format(items=_unchecked_text(detected.unchecked)) if detected.unchecked else ""
    return prompts.BRIEF_QUESTION.format(
        name=name,
        symbols=", ".join(symbols),
        since=_when(window.since),
        until=_when(window.until),
        changes="".join(blocks),
        unchecked=unchecked,
    )


def within_budget(detected: DetectedChanges, max_tokens: int | None) -> tuple[DetectedChanges, list[Change]]:
    """The changes and results that fit in `max_tokens` of findings (None: all), and the changes left out."""
    if max_tokens is None:
        return detected, []
    results: list[tuple[str, ToolResult | FilingToolResult]] = [
        (evidence.symbol, result) for evidence in detected.evidence for result in evidence.market
    ]
    results += [(evidence.symbol, result) for evidence in detected.evidence for result in evidence.filings]
    ranked = sorted(results, key=lambda pair: _KEPT_FIRST[pair[1].tool])
    room = max_tokens * CHARS_PER_TOKEN - sum(len(change.summary) for change in detected.changes)
    dropped: set[tuple[str, str]] = set()
    for symbol, result in ranked:
        size = min(len(json.dumps(result.data, default=str)), MARKET_DATA_PAYLOAD_CHARS)
        if size > room:
            dropped.add((symbol, result.tool))
        else:
            room -= size
    if not dropped:
        return detected, []
    dropped_kinds = {(symbol, _KIND_OF_TOOL.get(tool, "filing")) for symbol, tool in dropped}
    kept = [change for change in detected.changes if (change.symbol, change.kind) not in dropped_kinds]
    left_out = [change for change in detected.changes if (change.symbol, change.kind) in dropped_kinds]
    evidence = [
        SymbolEvidence(
            symbol=item.symbol,
            market=[r for r in item.market if (item.symbol, r.tool) not in dropped],
            filings=[r for r in item.filings if (item.symbol, r.tool) not in dropped],
        )
        for item in detected.evidence
    ]
    return detected.model_copy(update={"changes": kept, "evidence": evidence}), left_out


def left_out_text(left_out: Sequence[Change]) -> str:
    if not left_out:
        return ""
    items = ", ".join(f"{change.symbol} {change.kind}" for change in left_out)
    return prompts.BRIEF_LEFT_OUT.format(count=len(left_out), items=items)


def brief_checkpoint(detected: DetectedChanges, *, today: date, config: ResearchConfig) -> dict:
    """The research state the run resumes from: one answered finding per symbol, and the round that found
    them with its evidence confidence (scored by the same rule as research rounds)."""
    findings = [_finding(n, evidence) for n, evidence in enumerate(detected.evidence, start=1)]
    steps = [finding.step for finding in findings]
    assessment = assess(findings, gaps=[], contradictions=[], today=today, weights=config.confidence_weights)
    state = ResearchCheckpoint(
        plan=PlanEvent(needs_decomposition=True, sub_questions=[step.public() for step in steps]),
        findings=findings,
        rounds=[RoundRecord(n=1, sub_questions=[s.question for s in steps], complete=True, stop_reason="complete")],
        asked=sorted({step.question.lower() for step in steps}),
        trace=[trace_entry(1, assessment, previous=None, contradictions=[], stop_reason="complete")],
    )
    return state.model_dump(mode="json")


def _finding(n: int, evidence: SymbolEvidence) -> Finding:
    symbol = evidence.symbol
    step = PlannedStep(
        id=f"q{n}",
        question=f"What changed for {symbol}, as the market data and the SEC's filings report it?",
        type="numerical",
        route="market_data",
        tickers=[symbol],
    )
    market = (
        MarketDataFinding(tickers=[symbol], data="price_history", question=step.question, results=evidence.market)
        if evidence.market
        else None
    )
    filings = FilingFinding(tickers=[symbol], results=evidence.filings) if evidence.filings else None
    return Finding(step=step, status="answered", route="market_data", market_data=market, filings=filings)


def _unchecked_text(unchecked: Sequence[Unchecked]) -> str:
    return "; ".join(f"{item.symbol} {item.check} ({item.reason.rstrip('.')})" for item in unchecked)


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M %Z").strip()
