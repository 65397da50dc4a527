"""Our line names mapped to the XBRL concepts companies report them under, in order of preference.

Companies moved between concepts over the years (Apple reported SalesRevenueNet until 2018, then
RevenueFromContractWithCustomerExcludingAssessedTax), so a line maps to several; for each period the first
one the company reported is used, and every figure says which. Yahoo's line names (TotalRevenue, ...) are
accepted too, so the router can ask for a line in either spelling.
"""

from __future__ import annotations

import re

from datascraper.filings.errors import FilingInvalidArgument

LINE_CONCEPTS: dict[str, tuple[str, ...]] = {
    "revenue": (
        "us-gaap:Revenues",
        "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax",
        "us-gaap:RevenueFromContractWithCustomerIncludingAssessedTax",
        "us-gaap:SalesRevenueNet",
    ),
    "cost_of_revenue": ("us-gaap:CostOfRevenue", "us-gaap:CostOfGoodsAndServicesSold", "us-gaap:CostOfGoodsSold"),
    "gross_profit": ("us-gaap:GrossProfit",),
    "research_and_development": ("us-gaap:ResearchAndDevelopmentExpense",),
    "operating_income": ("us-gaap:OperatingIncomeLoss",),
    "net_income": ("us-gaap:NetIncomeLoss", "us-gaap:ProfitLoss"),
    "eps_basic": ("us-gaap:EarningsPerShareBasic",),
    "eps_diluted": ("us-gaap:EarningsPerShareDiluted",),
    "total_assets": ("us-gaap:Assets",),
    "total_liabilities": ("us-gaap:Liabilities",),
    "stockholders_equity": ("us-gaap:StockholdersEquity",),
    "cash": ("us-gaap:CashAndCashEquivalentsAtCarryingValue",),
    "operating_cash_flow": ("us-gaap:NetCashProvidedByUsedInOperatingActivities",),
    "capital_expenditure": ("us-gaap:PaymentsToAcquirePropertyPlantAndEquipment",),
    "share_repurchases": ("us-gaap:PaymentsForRepurchaseOfCommonStock",),
    "dividends_paid": ("us-gaap:PaymentsOfDividends", "us-gaap:PaymentsOfDividendsCommonStock"),
    "shares_outstanding": ("dei:EntityCommonStockSharesOutstanding",),
}

# Yahoo's statement line names for the same lines (datascraper/market_data/statement_schemas.py).
YAHOO_LINES: dict[str, str] = {
    "TotalRevenue": "revenue",
    "CostOfRevenue": "cost_of_revenue",
    "GrossProfit": "gross_profit",
    "ResearchAndDevelopment": "research_and_development",
    "OperatingIncome": "operating_income",
    "NetIncome": "net_income",
    "BasicEPS": "eps_basic",
    "DilutedEPS": "eps_diluted",
    "TotalAssets": "total_assets",
    "TotalLiabilitiesNetMinorityInterest": "total_liabilities",
    "StockholdersEquity": "stockholders_equity",
    "CashAndCashEquivalents": "cash",
    "OperatingCashFlow": "operating_cash_flow",
    "CapitalExpenditure": "capital_expenditure",
    "RepurchaseOfCapitalStock": "share_repurchases",
    "CashDividendsPaid": "dividends_paid",
}

# Outflows Yahoo gives as negative amounts, which the filings report as positive payments.
YAHOO_OUTFLOWS = frozenset({"CapitalExpenditure", "RepurchaseOfCapitalStock", "CashDividendsPaid"})


def as_filed(yahoo_line: str, value: float) -> float:
    """A Yahoo value of `yahoo_line` with the sign the filings give it."""
    return -value if yahoo_line in YAHOO_OUTFLOWS else value


_CONCEPT = re.compile(r"^(?:(?P<taxonomy>us-gaap|dei|ifrs-full|srt):)?(?P<name>[A-Za-z][A-Za-z0-9]{0,150})$")


def resolve_concept(asked: str) -> tuple[str, ...]:
    """The qualified concepts (`taxonomy:Name`) to look for, best first.

    Raises:
        FilingInvalidArgument: neither a line name we map nor a concept name.
    """
    text = asked.strip()
    line = YAHOO_LINES.get(text, text.lower())
    if line in LINE_CONCEPTS:
        return LINE_CONCEPTS[line]
    match = _CONCEPT.match(text)
    if match is None:
        names = ", ".join(LINE_CONCEPTS)
        raise FilingInvalidArgument(
            f"Unknown concept {text[:60]!r}: give a us-gaap concept (e.g. Revenues) or one of {names}."
        )
    return (f"{match['taxonomy'] or 'us-gaap'}:{match['name']}",)
