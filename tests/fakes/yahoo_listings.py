"""What the fake Yahoo knows about each listing: exchange, currency, prices and reported figures.

Deterministic and anchored at `TODAY` (a Friday). A few listings are modelled on the real ones because the
product gets them wrong when it assumes the simple case:

| symbol  | why it is here                                                                           |
|---------|------------------------------------------------------------------------------------------|
| AAPL    | fiscal year ends late September (52/53 weeks); pays dividends (closes vs adjusted);      |
|         | moved after hours on the day before TODAY (fast_info's previous close is not official);  |
|         | split 4:1 on 2020-08-31, as it did: Yahoo's earlier closes are a quarter of those traded |
| NVDA    | fiscal year ends late January: its "fiscal 2025" is mostly calendar 2024; split 10:1 on  |
|         | 2024-06-10, as it did                                                                    |
| MSFT    | fiscal year ends June 30; its balance sheet is long (more lines than the output cap)     |
| 7203.T  | Tokyo: Asia/Tokyo, JPY, fiscal year ends March 31                                        |
| VOD.L   | London: prices in pence (GBp), reports in EUR                                            |
| SBK.JO  | Johannesburg: prices in South African cents (ZAc), reports in ZAR                        |
| TEVA.TA | Tel Aviv: prices in agorot (ILA), reports in USD                                         |

Any other well-formed symbol is a US company 0.2x to 4.2x Apple's size with a calendar fiscal year, its
figures Apple's scaled.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import cached_property

import numpy as np
import pandas as pd
from yfinance import const

TODAY = date(2025, 6, 13)


@dataclass(frozen=True)
class Exchange:
    code: str  # Yahoo's exchange code, e.g. NMS
    name: str  # Yahoo's fullExchangeName
    timezone: str
    short_tz: str
    gmtoffset: int  # seconds, in June
    open_utc: str  # the daily bar's timestamp, HH:MM UTC (Yahoo stamps daily bars at the open)


NASDAQ = Exchange("NMS", "NasdaqGS", "America/New_York", "EDT", -4 * 3600, "13:30")
TOKYO = Exchange("JPX", "Tokyo", "Asia/Tokyo", "JST", 9 * 3600, "00:00")
LONDON = Exchange("LSE", "LSE", "Europe/London", "BST", 3600, "07:00")
JOHANNESBURG = Exchange("JNB", "Johannesburg", "Africa/Johannesburg", "SAST", 2 * 3600, "07:00")
TEL_AVIV = Exchange("TLV", "Tel Aviv", "Asia/Jerusalem", "IDT", 3 * 3600, "07:00")


# Apple's fiscal 2021-2024 figures (USD), newest first.
_APPLE_ANNUAL = {
    "income": {
        "TotalRevenue": [391_035e6, 383_285e6, 394_328e6, 365_817e6],
        "CostOfRevenue": [210_352e6, 214_137e6, 223_546e6, 212_981e6],
        "GrossProfit": [180_683e6, 169_148e6, 170_782e6, 152_836e6],
        "OperatingExpense": [57_467e6, 54_847e6, 51_345e6, 43_887e6],
        "OperatingIncome": [123_216e6, 114_301e6, 119_437e6, 108_949e6],
        "EBITDA": [134_661e6, 125_820e6, 130_541e6, 123_136e6],
        "NetIncome": [93_736e6, 96_995e6, 99_803e6, 94_680e6],
        "BasicEPS": [6.11, 6.16, 6.15, 5.67],
        "DilutedEPS": [6.08, 6.13, 6.11, 5.61],
        "TaxEffectOfUnusualItems": [0.0, 0.0, 0.0, None],
    },
    "balance": {
        "TotalAssets": [364_980e6, 352_583e6, 352_755e6, 351_002e6],
        "TotalLiabilitiesNetMinorityInterest": [308_030e6, 290_437e6, 302_083e6, 287_912e6],
        "StockholdersEquity": [56_950e6, 62_146e6, 50_672e6, 63_090e6],
        "CurrentAssets": [152_987e6, 143_566e6, 135_405e6, 134_836e6],
        "CurrentLiabilities": [176_392e6, 145_308e6, 153_982e6, 125_481e6],
        "CashAndCashEquivalents": [29_943e6, 29_965e6, 23_646e6, 34_940e6],
        "TotalDebt": [106_629e6, 111_088e6, 132_480e6, 136_522e6],
        "OrdinarySharesNumber": [15_116.786e6, 15_550.061e6, 15_943.425e6, 16_426.786e6],
    },
    "cash_flow": {
        "OperatingCashFlow": [118_254e6, 110_543e6, 122_151e6, 104_038e6],
        "CapitalExpenditure": [-9_447e6, -10_959e6, -10_708e6, -11_085e6],
        "FreeCashFlow": [108_807e6, 99_584e6, 111_443e6, 92_953e6],
        "RepurchaseOfCapitalStock": [-94_949e6, -77_550e6, -89_402e6, -85_971e6],
        "CashDividendsPaid": [-15_234e6, -15_025e6, -14_841e6, -14_467e6],
    },
}
# Apple's fiscal quarters Q2 FY2024 to Q2 FY2025 (March 2024 to March 2025), newest first (EBITDA approximate).
# Yahoo's quarterly tables hold about five quarters. The quarterly balance sheet and cash flow statement are
# the annual figures divided by four, four quarters of them.
_APPLE_QUARTERLY_INCOME = {
    "TotalRevenue": [95_359e6, 124_300e6, 94_930e6, 85_777e6, 90_753e6],
    "CostOfRevenue": [50_492e6, 66_025e6, 51_051e6, 46_099e6, 48_482e6],
    "GrossProfit": [44_867e6, 58_275e6, 43_879e6, 39_678e6, 42_271e6],
    "OperatingExpense": [15_278e6, 15_443e6, 14_288e6, 14_326e6, 14_371e6],
    "OperatingIncome": [29_589e6, 42_832e6, 29_591e6, 25_352e6, 27_900e6],
    "EBITDA": [32_250e6, 45_912e6, 32_502e6, 28_202e6, 30_736e6],
    "NetIncome": [24_780e6, 36_330e6, 14_736e6, 21_448e6, 23_636e6],
    "BasicEPS": [1.65, 2.41, 0.97, 1.40, 1.53],
    "DilutedEPS": [1.65, 2.40, 0.97, 1.40, 1.53],
    "TaxEffectOfUnusualItems": [0.0, 0.0, 0.0, 0.0, None],
}
# NVIDIA's reported revenue and net income (USD): fiscal 2022-2025, and Q1 FY2025 to Q1 FY2026.
_NVIDIA_ANNUAL = {"TotalRevenue": [130_497e6, 60_922e6, 26_974e6, 26_914e6],
                  "NetIncome": [72_880e6, 29_760e6, 4_368e6, 9_752e6]}
_NVIDIA_QUARTERLY = {"TotalRevenue": [44_062e6, 39_331e6, 35_082e6, 30_040e6, 26_044e6],
                     "NetIncome": [18_775e6, 22_091e6, 19_309e6, 16_599e6, 14_881e6]}


@dataclass(frozen=True)
class Listing:
    """One symbol as Yahoo serves it."""

    symbol: str
    name: str
    exchange: Exchange = NASDAQ
    currency: str = "USD"  # the quote currency, a sub-unit for London (GBp)
    financial_currency: str = "USD"  # the currency of the statements
    price: float = 100.0  # the last close, in the quote currency
    scale: float = 1.0  # statement figures: Apple's times this
    year_ends: tuple[str, ...] = ("2024-12-31", "2023-12-31", "2022-12-31", "2021-12-31")
    quarter_ends: tuple[str, ...] = ("2025-03-31", "2024-12-31", "2024-09-30", "2024-06-30", "2024-03-31")
    dividend: float = 0.0  # per share per quarter
    after_hours_move: float = 0.0  # the post-market move on the day before TODAY, as a fraction
    long_balance_sheet: bool = False
    overrides: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # "annual"/"quarterly" lines
    shares: float = 14.9e9
    splits: tuple[tuple[date, int, int], ...] = ()  # (day, numerator, denominator): 4:1 is (day, 4, 1)

    @cached_property
    def seed(self) -> int:
        return zlib.crc32(self.symbol.encode())

    def closes(self, days: pd.DatetimeIndex) -> np.ndarray:
        """Closes as Yahoo gives them on the given days: one random walk per symbol, ending at `price` on
        TODAY, and split-adjusted (a close before a split is the price then divided by the split's ratio)."""
        everyday = pd.bdate_range(end=TODAY, periods=6000)
        steps = np.random.default_rng(self.seed).normal(0.0004, 0.015, len(everyday))
        path = np.exp(np.cumsum(steps))
        walk = pd.Series(self.price * path / path[-1], index=everyday)
        return walk.reindex(days.normalize()).to_numpy()

    def split_factors(self, days: pd.DatetimeIndex) -> np.ndarray:
        """For each day, the product of the ratios of the splits after it: the traded price is the close
        times this."""
        factors = np.ones(len(days))
        for day, numerator, denominator in self.splits:
            factors[days.date < day] *= numerator / denominator
        return factors

    def traded_closes(self, days: pd.DatetimeIndex) -> np.ndarray:
        """The prices as traded on the given days, before any split that came after them."""
        return self.closes(days) * self.split_factors(days)

    def dividends(self) -> dict[date, float]:
        """Ex-dividend dates (quarterly, the latest in May) and amounts; none unless the listing pays."""
        if not self.dividend:
            return {}
        latest = date(2025, 5, 12)
        return {latest - timedelta(weeks=13 * n): self.dividend for n in range(90)}

    def statement(self, kind: str, timescale: str) -> tuple[list[str], dict[str, list[float | None]]]:
        """Period ends (newest first) and lines of one statement; timescale is annual/quarterly/trailing."""
        annual = _APPLE_ANNUAL[kind]
        if timescale == "annual":
            ends, lines, divisor = list(self.year_ends), annual, 1.0
        elif kind == "income":
            ends, lines, divisor = list(self.quarter_ends), _APPLE_QUARTERLY_INCOME, 1.0
            if timescale == "trailing":
                ends, lines = ends[:1], {name: [values[0] * 4] for name, values in annual.items()}
        else:
            ends, lines, divisor = list(self.quarter_ends[:4]), annual, 4.0
            if timescale == "trailing":
                ends, lines, divisor = ends[:1], {name: values[:1] for name, values in annual.items()}, 1.0
        values = {
            name: [None if v is None else v * self.scale / divisor for v in row][: len(ends)]
            for name, row in lines.items()
        }
        own = self.overrides.get("annual" if timescale == "annual" else "quarterly", {})
        for name, row in own.items():
            if kind == "income" and name in values:
                values[name] = list(row[: len(ends)]) if timescale != "trailing" else [sum(row[:4])]
        if kind == "balance" and self.long_balance_sheet:
            # Every line Yahoo knows, in its order: the ratio inputs come late, past the adapter's cap.
            for n, name in enumerate(const.fundamentals_keys["balance-sheet"]):
                values.setdefault(name, [1e9 * (n + 1) * self.scale] * len(ends))
        return ends, values


def _scaled(symbol: str) -> Listing:
    seed = zlib.crc32(symbol.encode())
    return Listing(
        symbol=symbol,
        name=f"{symbol} Holdings Inc.",
        price=round(20 + seed % 480 + (seed % 100) / 100, 2),
        scale=0.2 + (seed % 1000) / 250,
    )


LISTINGS = {
    "AAPL": Listing(
        symbol="AAPL",
        name="Apple Inc.",
        price=196.45,
        year_ends=("2024-09-28", "2023-09-30", "2022-09-24", "2021-09-25"),
        quarter_ends=("2025-03-29", "2024-12-28", "2024-09-28", "2024-06-29", "2024-03-30"),
        dividend=0.25,
        after_hours_move=0.03,
        splits=((date(2020, 8, 31), 4, 1),),
    ),
    "NVDA": Listing(
        symbol="NVDA",
        name="NVIDIA Corporation",
        price=141.97,
        scale=0.3,
        year_ends=("2025-01-26", "2024-01-28", "2023-01-29", "2022-01-30"),
        quarter_ends=("2025-04-27", "2025-01-26", "2024-10-27", "2024-07-28", "2024-04-28"),
        overrides={"annual": _NVIDIA_ANNUAL, "quarterly": _NVIDIA_QUARTERLY},
        shares=24.4e9,
        splits=((date(2024, 6, 10), 10, 1),),
    ),
    "MSFT": Listing(
        symbol="MSFT",
        name="Microsoft Corporation",
        price=474.96,
        scale=0.62,
        year_ends=("2024-06-30", "2023-06-30", "2022-06-30", "2021-06-30"),
        long_balance_sheet=True,
        shares=7.43e9,
    ),
    "7203.T": Listing(
        symbol="7203.T",
        name="Toyota Motor Corporation",
        exchange=TOKYO,
        currency="JPY",
        financial_currency="JPY",
        price=2_650.5,
        scale=120.0,
        year_ends=("2025-03-31", "2024-03-31", "2023-03-31", "2022-03-31"),
        shares=13.0e9,
    ),
    "VOD.L": Listing(
        symbol="VOD.L",
        name="Vodafone Group Public Limited Company",
        exchange=LONDON,
        currency="GBp",
        financial_currency="EUR",
        price=72.5,
        scale=0.1,
        year_ends=("2025-03-31", "2024-03-31", "2023-03-31", "2022-03-31"),
        dividend=2.25,
        shares=25.2e9,
    ),
    "SBK.JO": Listing(
        symbol="SBK.JO",
        name="Standard Bank Group Limited",
        exchange=JOHANNESBURG,
        currency="ZAc",
        financial_currency="ZAR",
        price=23_045.0,
        scale=2.0,
        year_ends=("2024-12-31", "2023-12-31", "2022-12-31", "2021-12-31"),
        shares=1.66e9,
    ),
    "TEVA.TA": Listing(
        symbol="TEVA.TA",
        name="Teva Pharmaceutical Industries Limited",
        exchange=TEL_AVIV,
        currency="ILA",
        financial_currency="USD",
        price=6_012.0,
        scale=0.04,
        shares=1.13e9,
    ),
}


def listing(symbol: str) -> Listing:
    return LISTINGS.get(symbol) or _scaled(symbol)
