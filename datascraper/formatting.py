"""Figures written for readers and models: the summaries of tool results, the facts' formulas, the titles of
charts and the cross-check's claims all write numbers and line items the same way.

`figures` reads figures back from text; this module writes them. It imports nothing of the project, so the
MCP server's side (market_data/, filings/) and the research engine share it.
"""

from __future__ import annotations

import re


def fmt(value: float | int | None) -> str:
    """A number as a reader expects it: 391.04B, 196.45, 1.0853."""
    if value is None:
        return "n/a"
    magnitude = abs(value)
    for threshold, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if magnitude >= threshold:
            return f"{value / threshold:.2f}{suffix}"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.2f}" if magnitude >= 10 else f"{value:.4f}"


def fmt_pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.2f}%"


def plain_number(value: float) -> str:
    """A figure as filed, unabbreviated: 391,035,000,000 or 2.94."""
    return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}"


def humanize(name: str) -> str:
    """`TotalRevenue` -> `Total Revenue`; acronyms such as EBITDA stay whole."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)
