"""The arithmetic of computed facts, and when a figure is not meaningful.

`facts` decides which figures a run's market data gives; each is computed here, with its formula written
out with the amounts it used, so a reader can redo it.

The rules, deliberately:
- Growth is (current - base) / base x 100 and needs a positive base. From a zero base there is no growth
  figure; from a negative base (a loss) a percentage misleads (a loss narrowing from -10 to -5 is not
  "-50%"). Either way the fact is kept with no value and a note saying why; the change in amount, always
  meaningful, is a fact of its own.
- CAGR needs a positive first and last value; margins a positive revenue; ratios a positive denominator
  (debt over negative equity means nothing). Otherwise: no value, and a note.
- Cash outflows (capital expenditure, buybacks, dividends), which statements show as negative numbers,
  are compared as the amounts spent.
- Values are rounded to six decimals: enough for any figure an answer writes, none of the float noise.
"""

from __future__ import annotations

from collections.abc import Callable

from datascraper.formatting import fmt, humanize
from datascraper.schemas import Fact, FactInput, FactKind

OUTFLOW_LINES = {"CapitalExpenditure", "RepurchaseOfCapitalStock", "CashDividendsPaid"}


def amount(value: FactInput) -> float:
    """The amount compared: outflows as the amount spent."""
    return -value.value if value.line in OUTFLOW_LINES else value.value


def growth_fact(
    kind: FactKind, label: str, current: FactInput, base: FactInput, shown: Callable[[float], str] = fmt
) -> Fact:
    """`shown` writes the amounts in the formula (a London price: 72.50p (£0.7250))."""
    now, then = amount(current), amount(base)
    formula = "(current - base) / base x 100"
    if then == 0:
        note = "no growth figure: the base is zero"
        return new_fact(label, None, "percent", kind, formula, [current, base], note=note)
    if then < 0:
        note = f"not reported as a percentage: the base is negative ({fmt(then)}); use the change in amount"
        return new_fact(label, None, "percent", kind, formula, [current, base], note=note)
    formula += f" = ({shown(now)} - {shown(then)}) / {shown(then)} x 100"
    return new_fact(label, (now - then) / then * 100, "percent", kind, formula, [current, base])


def change_fact(label: str, current: FactInput, base: FactInput, unit: str) -> Fact:
    now, then = amount(current), amount(base)
    return new_fact(label, now - then, unit, "change", f"current - base = {fmt(now)} - {fmt(then)}", [current, base])


def cagr_fact(label: str, first: FactInput, last: FactInput, years: int) -> Fact:
    start, end = amount(first), amount(last)
    formula = f"((last / first) ^ (1 / years) - 1) x 100, over {years} years"
    if start <= 0 or end <= 0:
        note = "not meaningful: the first and last values must both be positive"
        return new_fact(label, None, "percent", "cagr", formula, [last, first], note=note)
    formula += f" = (({fmt(end)} / {fmt(start)}) ^ (1 / {years}) - 1) x 100"
    return new_fact(label, ((end / start) ** (1 / years) - 1) * 100, "percent", "cagr", formula, [last, first])


def margin_fact(label: str, line: str, part: FactInput, revenue: FactInput) -> Fact:
    """`line` (`part`) as a percentage of Total Revenue (`revenue`)."""
    formula = f"{humanize(line)} / Total Revenue x 100"
    if revenue.value <= 0:
        note = f"no margin: revenue is {'zero' if revenue.value == 0 else 'negative'}"
        return new_fact(label, None, "percent", "margin", formula, [part, revenue], note=note)
    formula += f" = {fmt(part.value)} / {fmt(revenue.value)} x 100"
    return new_fact(label, part.value / revenue.value * 100, "percent", "margin", formula, [part, revenue])


def ratio_fact(label: str, numerator: str, denominator: str, top: FactInput, bottom: FactInput) -> Fact:
    """`numerator` (`top`) over `denominator` (`bottom`)."""
    formula = f"{humanize(numerator)} / {humanize(denominator)}"
    if bottom.value <= 0:
        state = "zero" if bottom.value == 0 else f"negative ({fmt(bottom.value)})"
        note = f"not meaningful: {humanize(denominator)} is {state}"
        return new_fact(label, None, "ratio", "ratio", formula, [top, bottom], note=note)
    formula += f" = {fmt(top.value)} / {fmt(bottom.value)}"
    return new_fact(label, top.value / bottom.value, "ratio", "ratio", formula, [top, bottom])


def new_fact(
    label: str,
    value: float | None,
    unit: str,
    kind: FactKind,
    formula: str,
    inputs: list[FactInput],
    *,
    note: str | None = None,
) -> Fact:
    """A fact to number later (`facts.compute_facts` numbers a run's facts once they are ranked)."""
    rounded = None if value is None else _rounded(value)
    return Fact(id="", label=label, value=rounded, unit=unit, kind=kind, formula=formula, inputs=inputs, note=note)


def figure_text(value: float, unit: str) -> str:
    """A compared figure as a formula writes it: 12.34% for a percentage, else as `fmt` writes it."""
    return f"{value:.2f}%" if unit == "percent" else fmt(value)


def _rounded(value: float) -> float:
    # Enough digits for any figure an answer writes; none of the float noise (6.08 - 6.13 = -0.04999...).
    return round(value, 6)
