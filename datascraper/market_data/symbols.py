"""Ticker symbols in Yahoo's spelling.

Kept apart from the adapter so the query analyzer can spell a ticker without importing yfinance and pandas.
"""

from __future__ import annotations

# Yahoo's exchange suffixes (VOD.L, 7203.T, 0700.HK, SAP.DE, MC.PA, RY.TO, ...): kept as typed. Any other
# one-letter suffix is a share class, which Yahoo spells with a dash (BRK.B -> BRK-B).
EXCHANGE_SUFFIXES = frozenset(
    "L T HK DE F PA TO V AX SS SZ KS KQ NS BO SI MI MC AS BR SW ST OL CO HE IR LS VI SA MX JO TA NZ TW TWO BK "
    "JK KL IS WA PR AT CN NE BA SN IL ME SG BE DU HM MU".split()
)


def yahoo_spelling(symbol: str) -> str:
    """A ticker as Yahoo spells it: exchange suffixes kept, a share class after a dot given a dash."""
    head, dot, suffix = symbol.rpartition(".")
    if dot and head and suffix not in EXCHANGE_SUFFIXES and len(suffix) == 1 and suffix.isalpha():
        return f"{head}-{suffix}"
    return symbol
