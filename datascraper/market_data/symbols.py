"""Ticker symbols in Yahoo's spelling.

Kept apart from the adapter so the query analyzer and the watchlists can spell a ticker without importing
yfinance and pandas.
"""

from __future__ import annotations

import re

from datascraper.market_data.errors import InvalidSymbol

# Yahoo's exchange suffixes (VOD.L, 7203.T, 0700.HK, SAP.DE, MC.PA, RY.TO, ...): kept as typed. Any other
# one-letter suffix is a share class, which Yahoo spells with a dash (BRK.B -> BRK-B).
EXCHANGE_SUFFIXES = frozenset(
    "L T HK DE F PA TO V AX SS SZ KS KQ NS BO SI MI MC AS BR SW ST OL CO HE IR LS VI SA MX JO TA NZ TW TWO BK "
    "JK KL IS WA PR AT CN NE BA SN IL ME SG BE DU HM MU".split()
)

# AAPL, BRK-B, ^GSPC, EURUSD=X, CL=F, 7203.T, 0700.HK, BTC-USD: letters and digits, an optional index
# caret, up to two dot/dash suffixes, an optional currency (=X) or futures (=F) marker.
_SYMBOL = re.compile(r"\^?[A-Z0-9]{1,12}(?:[.-][A-Z0-9]{1,6}){0,2}(?:=[XF])?")
_MAX_SYMBOL_CHARS = 20


def yahoo_spelling(symbol: str) -> str:
    """A ticker as Yahoo spells it: exchange suffixes kept, a share class after a dot given a dash."""
    head, dot, suffix = symbol.rpartition(".")
    if dot and head and suffix not in EXCHANGE_SUFFIXES and len(suffix) == 1 and suffix.isalpha():
        return f"{head}-{suffix}"
    return symbol


def normalize_symbol(raw: str) -> str:
    """The symbol in Yahoo's spelling, or `InvalidSymbol` before anything reaches the network."""
    symbol = raw.strip().upper() if isinstance(raw, str) else ""
    if len(symbol) > _MAX_SYMBOL_CHARS or not _SYMBOL.fullmatch(symbol):
        shown = raw[:32] if isinstance(raw, str) else type(raw).__name__
        raise InvalidSymbol(f"{shown!r} is not a valid ticker symbol.")
    return yahoo_spelling(symbol)
