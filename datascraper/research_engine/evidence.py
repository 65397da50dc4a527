"""What each structured source of an answer said, for the two checks of its figures: the citation check
(`datascraper.citations`) and the number check (`quality_logger.check_numbers`).

Market data and the figures filed with the SEC are checked against what the tools returned, never fetched
again: a market-data source against its payloads and the facts computed from it; a filing cited for a
figure against the values that filing reported (its XBRL facts, the version it filed, so a restated
period's older filing still bears out what it said); a filing cited for its words (a section, an 8-K item,
a listed filing or a Form 4 trade) against the passage read from it.
"""

from __future__ import annotations

from collections.abc import Iterator

from datascraper.citations import MarketEvidence, SourceText
from datascraper.market_data.schemas import in_sub_unit
from datascraper.quality_logger import NumberCheck, check_numbers, market_values
from datascraper.research_engine.state import RunState
from datascraper.sources import clean_url


def market_evidence(state: RunState) -> dict[int, MarketEvidence | SourceText]:
    """What each market-data or filing source of the answer returned, and the facts computed from it."""
    payloads: dict[tuple[str, str], list[dict]] = {}
    for key, payload in _market_results(state):
        payloads.setdefault(key, []).append(payload)
    market_sources = [source for source in state.sources if source.kind == "market_data"]
    if state.market_payloads:
        # The fast path's quote: its answer's one source.
        for source in market_sources:
            payloads.setdefault((source.url, source.title), []).extend(_as_written(state.market_payloads))
    evidence: dict[int, MarketEvidence | SourceText] = {
        source.n: MarketEvidence.of(source, payloads[(source.url, source.title)], state.facts)
        for source in market_sources
        if (source.url, source.title) in payloads
    }
    filed, passages = _filed_values(state), _passages(state)
    for source in state.sources:
        if source.kind != "filing":
            continue
        if source.url in filed:
            evidence[source.n] = MarketEvidence.of_values(source, filed[source.url], state.facts)
        elif source.url in passages:
            evidence[source.n] = SourceText("\n".join(passages[source.url]))
    return evidence


def number_check(state: RunState) -> NumberCheck:
    """The answer's numbers cited to market data or to a filing's figures, against the values returned and
    the figures computed from them. The answer as the model wrote it: the note under it is not checked."""
    filed = _filed_values(state)
    checked = [s for s in state.sources if s.kind == "market_data" or (s.kind == "filing" and s.url in filed)]
    values = market_values(_market_payloads(state)) + [abs(v) for pairs in filed.values() for v, _ in pairs]
    facts = [fact.value for fact in state.facts if fact.value is not None]
    return check_numbers(state.answer, checked, sorted(values), facts)


def _market_payloads(state: RunState) -> list[dict]:
    return [*_as_written(state.market_payloads), *(payload for _, payload in _market_results(state))]


def _market_results(state: RunState) -> Iterator[tuple[tuple[str, str], dict]]:
    """Each market-data tool result of the findings: the URL and title its source cites, and its payload."""
    for finding in state.findings:
        if finding.market_data is not None:
            for result in finding.market_data.results:
                for payload in _as_written([result.data]):
                    yield (clean_url(result.url), result.title), payload


def _as_written(payloads: list[dict]) -> list[dict]:
    """The payloads, and for a listing quoted in a sub-unit its prices in that unit too: an answer writes
    a London price as 72.50p (£0.7250), and both numbers trace."""
    return [*payloads, *(twin for payload in payloads if (twin := in_sub_unit(payload)) is not None)]


def _filed_values(state: RunState) -> dict[str, list[tuple[float, str]]]:
    """Each value a filing reported, by the filing's URL, with where it is."""
    filed: dict[str, list[tuple[float, str]]] = {}
    for finding in state.findings:
        if finding.filings is not None:
            for url, value, label in finding.filings.filed_values():
                filed.setdefault(clean_url(url), []).append((value, label))
    return filed


def _passages(state: RunState) -> dict[str, list[str]]:
    passages: dict[str, list[str]] = {}
    for finding in state.findings:
        if finding.filings is not None:
            for url, text in finding.filings.passages():
                passages.setdefault(clean_url(url), []).append(text)
    return passages
