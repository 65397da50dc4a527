"""Yahoo's real replies (`../shared/recorded/yahoo/`, see its SOURCES.md) as the fake Yahoo's answers.

`FakeYahoo(recorded=RecordedYahoo())` answers every request about a recorded symbol (AAPL, OCDO.L, WSKT.JK)
from the recordings, at the wire, so the real yfinance parses Yahoo's own bytes. The recordings answered
other queries than yfinance 1.7 sends, on other days; each request gets the closest answer they hold:

- chart, `period1`/`period2`: the bars and events of every recording of the symbol that fall in the asked
  window, in time order (a window nobody recorded in full gets the recorded part of Yahoo's reply: a window
  from 2020-01-03 to today gets the 49 bars from 2020-08-31 with the 4:1 split, the bar of 2022-02-22 and the
  127 bars of 2025); no bar in it is a reply without bars, as Yahoo sends. The meta is the newest recording's.
- chart, `range`: the newest recording as it is (yfinance asks `range=1d` only for the timezone).
- quoteSummary: the recording answering the most of the asked modules, cut to them.
- /v7/finance/quote: the symbol's recording.
- fundamentals-timeseries: the recording sharing the most asked types; none shares any (`info` asks for
  `trailingPegRatio` on every call) gets the symbol's smallest one, in which yfinance finds no such type,
  as Yahoo answers a type it has no value for.
- anything else about a recorded symbol (news, the earnings page) was not recorded: a 404.

`served` lists, for each reply, the endpoint and the ids of the recordings it came from.
"""

from __future__ import annotations

import logging
from typing import Any

from tests.recorded import recorded_json

logger = logging.getLogger(__name__)

_FOLDER = "yahoo"


class RecordedYahoo:
    """The recorded replies by symbol and kind; the test skips (tests/recorded.py) where they are absent."""

    def __init__(self) -> None:
        self.manifest: list[dict[str, Any]] = recorded_json(_FOLDER, "MANIFEST.json")
        self.served: list[tuple[str, list[str]]] = []
        self._bodies: dict[str, Any] = {}

    @property
    def symbols(self) -> set[str]:
        return {entry["symbol"] for entry in self.manifest if entry.get("symbol")}

    def answer(self, symbol: str, endpoint: str, query: dict[str, str]) -> tuple[int, Any]:
        """The status and JSON body of the reply to a request about a recorded `symbol`."""
        if endpoint == "chart":
            reply, ids = self._chart(symbol, query)
        elif endpoint == "quoteSummary":
            reply, ids = self._quote_summary(symbol, query.get("modules", "").split(","))
        elif endpoint == "quote":
            reply, ids = self._whole(symbol, "quote")
        elif endpoint == "key_statistics" or ":" in endpoint:
            reply, ids = self._timeseries(symbol, query.get("type", "").split(","))
        else:
            reply, ids = None, []
        if reply is None:
            logger.info("Recorded Yahoo: nothing recorded for the %s of %s", endpoint, symbol)
            return 404, {"finance": {"result": None, "error": {"code": "Not Found", "description": "Not recorded"}}}
        logger.info("Recorded Yahoo: the %s of %s from %s", endpoint, symbol, ", ".join(ids))
        self.served.append((endpoint, ids))
        return 200, reply

    # --- per endpoint --------------------------------------------------------------------------------------

    def _recordings(self, symbol: str, kind: str) -> list[dict[str, Any]]:
        """The symbol's recordings of one kind, oldest first."""
        found = [entry for entry in self.manifest if entry["kind"] == kind and entry.get("symbol") == symbol]
        return sorted(found, key=lambda entry: entry["recorded_at"])

    def _body(self, entry: dict[str, Any]) -> Any:
        if entry["id"] not in self._bodies:
            self._bodies[entry["id"]] = recorded_json(_FOLDER, entry["stored"])
        return self._bodies[entry["id"]]

    def _whole(self, symbol: str, kind: str) -> tuple[Any, list[str]]:
        recordings = self._recordings(symbol, kind)
        return (self._body(recordings[-1]), [recordings[-1]["id"]]) if recordings else (None, [])

    def _chart(self, symbol: str, query: dict[str, str]) -> tuple[Any, list[str]]:
        recordings = self._recordings(symbol, "chart")
        if not recordings:
            return None, []
        if "period1" not in query:
            return self._whole(symbol, "chart")
        first, end = int(query["period1"]), int(query.get("period2") or 2**40)
        meta = self._body(recordings[-1])["chart"]["result"][0]["meta"]
        bars: dict[int, dict[str, Any]] = {}
        events: dict[str, dict[str, Any]] = {}
        ids = []
        for entry in recordings:
            result = self._body(entry)["chart"]["result"][0]
            quote = result["indicators"]["quote"][0]
            adjusted = (result["indicators"].get("adjclose") or [{}])[0].get("adjclose")
            inside = [(i, t) for i, t in enumerate(result.get("timestamp") or []) if first <= t < end]
            for i, stamp in inside:
                bar = {name: values[i] for name, values in quote.items()}
                bars.setdefault(stamp, {**bar, "adjclose": adjusted[i] if adjusted else None})
            for kind, dated in (result.get("events") or {}).items():
                kept = {key: event for key, event in dated.items() if first <= event["date"] < end}
                events.setdefault(kind, {}).update(kept)
            if inside:
                ids.append(entry["id"])
        stamps = sorted(bars)
        result = {"meta": meta}
        if stamps:
            names = [name for name in bars[stamps[0]] if name != "adjclose"]
            result["timestamp"] = stamps
            result["indicators"] = {
                "quote": [{name: [bars[stamp].get(name) for stamp in stamps] for name in names}],
                "adjclose": [{"adjclose": [bars[stamp]["adjclose"] for stamp in stamps]}],
            }
            if any(events.values()):
                result["events"] = {kind: dated for kind, dated in events.items() if dated}
        else:
            result["indicators"] = {"quote": [{}], "adjclose": [{}]}
        return {"chart": {"result": [result], "error": None}}, ids or [f"no bar ({recordings[-1]['id']} meta)"]

    def _quote_summary(self, symbol: str, modules: list[str]) -> tuple[Any, list[str]]:
        recordings = self._recordings(symbol, "quoteSummary")
        if not recordings:
            return None, []

        def answered(entry: dict[str, Any]) -> int:
            return len(set(modules) & set(self._body(entry)["quoteSummary"]["result"][0]))

        best = max(reversed(recordings), key=answered)  # the newest among those answering the most
        recorded = self._body(best)["quoteSummary"]["result"][0]
        result = {module: recorded[module] for module in modules if module in recorded}
        return {"quoteSummary": {"result": [result], "error": None}}, [best["id"]]

    def _timeseries(self, symbol: str, types: list[str]) -> tuple[Any, list[str]]:
        recordings = self._recordings(symbol, "timeseries")
        if not recordings:
            return None, []

        def shared(entry: dict[str, Any]) -> int:
            return len(set(types) & set(entry["request"]["query"].get("type", "").split(",")))

        best = max(recordings, key=lambda entry: (shared(entry), -entry["bytes"]))
        return self._body(best), [best["id"]]
