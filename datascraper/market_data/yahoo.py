"""The one adapter over yfinance: every tool goes through it.

It owns what the tools must not each get wrong: symbol validation before any network call, a timeout
on every yfinance call (yfinance is synchronous, so it runs in a worker thread whose wait is bounded),
output caps, NaN/inf cleaning, yfinance's exclusive `end` made inclusive, an empty frame reported as
"no data", the cache, and the mapping of yfinance failures to named errors with a code.

Exact figures: a quote's change is measured from Yahoo's official previous close; a price history's closes
are Yahoo's, split-adjusted, with the dividend-adjusted close beside them and, where a split came after a bar,
the price as traded that day; sub-unit quote currencies (GBp, ZAc, ILA) are given in the main unit and carry
the sub-unit for display; yfinance's errors are raised rather than swallowed, and its own reply cache never
answers a refetch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import yfinance
from curl_cffi.requests.exceptions import HTTPError
from yfinance.data import YfData
from yfinance.exceptions import (
    YFInvalidPeriodError,
    YFPricesMissingError,
    YFRateLimitError,
    YFTickerMissingError,
)

from datascraper.cache import TTLCache
from datascraper.market_data import fundamentals
from datascraper.market_data.errors import (
    InvalidArgument,
    MarketDataError,
    MarketDataRateLimited,
    MarketDataTimeout,
    MarketDataUpstreamError,
    NoMarketData,
)
from datascraper.market_data.history import HistoryAsked, price_history, splits_in
from datascraper.market_data.schemas import (
    DEFAULT_NEWS_ITEMS,
    MAX_NEWS_ITEMS,
    AnalystRatings,
    CompanyProfile,
    HistoryInterval,
    HistoryPeriod,
    MarketDataResult,
    News,
    PriceHistory,
    Quote,
    StatementFrequency,
    StatementKind,
    StockSplit,
)
from datascraper.market_data.statement_schemas import Earnings, FinancialStatement
from datascraper.market_data.symbols import normalize_symbol
from datascraper.market_data.ticker import TickerFactory, yahoo_url
from datascraper.market_data.values import (
    SUB_UNITS,
    currency_or_none,
    integer,
    main_unit,
    news_item,
    num,
    scaled,
    sub_unit_note,
    text,
)

logger = logging.getLogger(__name__)

# Output caps keep a tool result small enough for a prompt (price history: `history.MAX_HISTORY_BARS`,
# statements, earnings and ratings: `fundamentals`).
MAX_DESCRIPTION_CHARS = 1200

# Time to live: prices move, fundamentals change a few times a year.
QUOTE_TTL_S = 60.0
HISTORY_TTL_S = 300.0
NEWS_TTL_S = 900.0
FUNDAMENTALS_TTL_S = 86_400.0

DEFAULT_UPSTREAM_TIMEOUT_S = 10.0
CACHE_KEY_PREFIX = "market_data:v1"

PREVIOUS_CLOSE_BASIS = "regularMarketPreviousClose: the official close of the previous regular session"

ResultT = TypeVar("ResultT", bound=MarketDataResult)


class YahooFinanceAdapter:
    """Yahoo Finance data as typed results, cached, bounded in time and size."""

    def __init__(
        self,
        ticker_factory: TickerFactory | None = None,
        *,
        cache: TTLCache | None = None,
        timeout_s: float = DEFAULT_UPSTREAM_TIMEOUT_S,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._ticker: TickerFactory = ticker_factory or yfinance.Ticker
        # yfinance swallows its errors by default: a 429 or a broken connection on statements comes back as an
        # empty frame, which would read as "no data". Raised, they map to our codes.
        yfinance.config.debug.hide_exceptions = False
        self.cache = cache if cache is not None else TTLCache()
        self.timeout_s = timeout_s
        self._now = now

    # --- tools ------------------------------------------------------------------------------------

    async def quote(self, symbol: str) -> Quote:
        symbol = normalize_symbol(symbol)
        return await self._fetch(Quote, symbol, "quote", f"quote:{symbol}", QUOTE_TTL_S, lambda: self._quote(symbol))

    async def price_history(
        self,
        symbol: str,
        *,
        period: HistoryPeriod = "1mo",
        start: date | None = None,
        end: date | None = None,
        interval: HistoryInterval = "1d",
    ) -> PriceHistory:
        symbol = normalize_symbol(symbol)
        if start is not None and end is not None and start > end:
            raise InvalidArgument(f"The start date {start} is after the end date {end}.")
        key = f"history:{symbol}:{period}:{start}:{end}:{interval}"
        # A range that ended before today costs a second request (the splits since), and its bars are settled:
        # kept as long as fundamentals.
        return await self._fetch(
            PriceHistory,
            symbol,
            "price history",
            key,
            FUNDAMENTALS_TTL_S if self._ended_before_today(end) else HISTORY_TTL_S,
            lambda: self._price_history(symbol, period, start, end, interval),
        )

    async def financial_statement(
        self, symbol: str, statement: StatementKind, frequency: StatementFrequency = "annual"
    ) -> FinancialStatement:
        symbol = normalize_symbol(symbol)
        if statement == "balance" and frequency == "ttm":
            raise InvalidArgument(
                "Yahoo Finance publishes no trailing-twelve-month balance sheet; ask for annual or quarterly."
            )
        return await self._fetch(
            FinancialStatement,
            symbol,
            fundamentals.STATEMENT_NAME[statement],
            f"statement:{symbol}:{statement}:{frequency}",
            FUNDAMENTALS_TTL_S,
            lambda: fundamentals.financial_statement(self._ticker(symbol), symbol, statement, frequency, self._now),
        )

    async def earnings(self, symbol: str) -> Earnings:
        symbol = normalize_symbol(symbol)
        return await self._fetch(
            Earnings,
            symbol,
            "earnings",
            f"earnings:{symbol}",
            FUNDAMENTALS_TTL_S,
            lambda: fundamentals.earnings(self._ticker(symbol), symbol, self._now),
        )

    async def analyst_ratings(self, symbol: str) -> AnalystRatings:
        symbol = normalize_symbol(symbol)
        return await self._fetch(
            AnalystRatings,
            symbol,
            "analyst ratings",
            f"analysts:{symbol}",
            FUNDAMENTALS_TTL_S,
            lambda: fundamentals.analyst_ratings(self._ticker(symbol), symbol, self._now),
        )

    async def company_profile(self, symbol: str) -> CompanyProfile:
        symbol = normalize_symbol(symbol)
        return await self._fetch(
            CompanyProfile,
            symbol,
            "company profile",
            f"profile:{symbol}",
            FUNDAMENTALS_TTL_S,
            lambda: self._company_profile(symbol),
        )

    async def news(self, symbol: str, limit: int = DEFAULT_NEWS_ITEMS) -> News:
        symbol = normalize_symbol(symbol)
        capped = max(1, min(limit, MAX_NEWS_ITEMS))
        return await self._fetch(
            News, symbol, "news", f"news:{symbol}:{limit}", NEWS_TTL_S, lambda: self._news(symbol, limit, capped)
        )

    # --- plumbing ---------------------------------------------------------------------------------

    async def _fetch(
        self, model: type[ResultT], symbol: str, what: str, key: str, ttl_s: float, build: Callable[[], ResultT]
    ) -> ResultT:
        def fresh() -> dict[str, Any]:
            # Our cache missed, so this is a refetch: yfinance's process-wide `YfData.cache_get` (an lru_cache
            # that keeps replies, failed ones included, for as long as the process lives) must not answer it.
            YfData.cache_get.cache_clear()
            return build().model_dump(mode="json")

        async def load() -> dict[str, Any]:
            return await self._in_thread(fresh, symbol, what)

        payload = await self.cache.get_or_fetch(f"{CACHE_KEY_PREFIX}:{key}", ttl_s, load)
        return model.model_validate(payload)

    async def _in_thread(self, work: Callable[[], dict[str, Any]], symbol: str, what: str) -> dict[str, Any]:
        """Run blocking yfinance work in a thread; a thread cannot be killed, so a late one is abandoned."""
        try:
            with anyio.fail_after(self.timeout_s):
                return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except MarketDataError:
            raise
        except TimeoutError:
            raise MarketDataTimeout(
                f"Yahoo Finance did not answer within {self.timeout_s:g} s for the {what} of {symbol}."
            ) from None
        except Exception as exc:
            raise _upstream_failure(exc, symbol, what) from exc

    # --- builders: run in a worker thread ----------------------------------------------------------

    def _quote(self, symbol: str) -> Quote:
        # `info` carries Yahoo's official session figures (/v7/finance/quote and summaryDetail). fast_info is
        # not used: its `previous_close` is the last trade of the day before, after-hours included, so after
        # an earnings move the change would be off by the whole move.
        info = self._ticker(symbol).info or {}
        quoted = text(info.get("currency"))
        currency, divisor = main_unit(quoted)
        price = scaled(info.get("regularMarketPrice") or info.get("currentPrice"), divisor)
        if price is None:
            raise NoMarketData(f"Yahoo Finance has no quote for {symbol}.")
        previous = scaled(info.get("regularMarketPreviousClose"), divisor)
        change = price - previous if previous is not None else None
        retrieved_at = self._now()
        traded_at = num(info.get("regularMarketTime"))
        sub_unit = SUB_UNITS.get(quoted or "")
        notes = [sub_unit_note(symbol, sub_unit, price)] if sub_unit is not None else []
        return Quote(
            symbol=symbol,
            currency=currency,
            as_of=datetime.fromtimestamp(traded_at, UTC) if traded_at else retrieved_at,
            retrieved_at=retrieved_at,
            url=yahoo_url(symbol),
            notes=notes,
            sub_unit=sub_unit,
            price=price,
            previous_close=previous,
            previous_close_basis=PREVIOUS_CLOSE_BASIS,
            change=num(change),
            change_percent=num(change / previous * 100) if change is not None and previous else None,
            open=scaled(info.get("regularMarketOpen"), divisor),
            day_high=scaled(info.get("regularMarketDayHigh"), divisor),
            day_low=scaled(info.get("regularMarketDayLow"), divisor),
            volume=integer(info.get("regularMarketVolume")),
            market_cap=_market_cap(info, divisor),
            year_high=scaled(info.get("fiftyTwoWeekHigh"), divisor),
            year_low=scaled(info.get("fiftyTwoWeekLow"), divisor),
            fifty_day_average=scaled(info.get("fiftyDayAverage"), divisor),
            two_hundred_day_average=scaled(info.get("twoHundredDayAverage"), divisor),
            exchange=text(info.get("exchange")),
            quote_type=text(info.get("quoteType")),
        )

    def _price_history(
        self, symbol: str, period: str, start: date | None, end: date | None, interval: str
    ) -> PriceHistory:
        ticker = self._ticker(symbol)
        # auto_adjust=False: Yahoo's closes (split-adjusted only), not lowered by every dividend since; the
        # dividend-adjusted close comes along, labelled as such.
        if start is None and end is None:
            frame = ticker.history(period=period, interval=interval, auto_adjust=False)
        else:
            # yfinance's `end` is exclusive; a reader's "to June 6" includes June 6.
            frame = ticker.history(
                start=start.isoformat() if start else None,
                end=(end + timedelta(days=1)).isoformat() if end else None,
                interval=interval,
                auto_adjust=False,
            )
        if frame is None or frame.empty:
            raise NoMarketData(f"Yahoo Finance has no price history for {symbol} in that range.")
        quoted = currency_or_none(symbol, lambda: ticker.get_history_metadata().get("currency"))
        splits, notes = splits_in(frame), []
        if end is not None and self._ended_before_today(end):
            # Splits after the range change its closes too: one more request, from the day after it to today.
            later, failure = self._splits_after(symbol, end)
            splits += later
            notes += [failure] if failure else []
        asked = HistoryAsked(symbol, period, start, end, interval, yahoo_url(symbol, "history"))
        return price_history(asked, frame, quoted=quoted, splits=splits, notes=notes, retrieved_at=self._now())

    def _ended_before_today(self, end: date | None) -> bool:
        return end is not None and end < self._now().date()

    def _splits_after(self, symbol: str, day: date) -> tuple[list[StockSplit], str | None]:
        """The stock splits after `day`, from Yahoo's daily bars since (its `events` name them), or none and
        a note saying why they could not be looked up."""
        try:
            frame = self._ticker(symbol).history(
                start=(day + timedelta(days=1)).isoformat(), interval="1d", auto_adjust=False
            )
        except YFPricesMissingError:
            return [], None  # no trading day since, so no split either
        except Exception as exc:
            failure = _upstream_failure(exc, symbol, "stock splits")
            return [], (
                f"Stock splits after {day} could not be looked up ({failure.message.rstrip('.')}): the closes are "
                "split-adjusted as Yahoo gives them, and differ from the prices as traded if a split came since."
            )
        return splits_in(frame) if frame is not None else [], None

    def _company_profile(self, symbol: str) -> CompanyProfile:
        info = self._ticker(symbol).info or {}
        name = text(info.get("longName")) or text(info.get("shortName"))
        if name is None:
            raise NoMarketData(f"Yahoo Finance has no company profile for {symbol}.")
        description = text(info.get("longBusinessSummary"))
        notes = []
        if description is not None and len(description) > MAX_DESCRIPTION_CHARS:
            description = description[:MAX_DESCRIPTION_CHARS].rsplit(" ", 1)[0] + "…"
            notes.append(f"The business description is cut to {MAX_DESCRIPTION_CHARS} characters.")
        retrieved_at = self._now()
        return CompanyProfile(
            symbol=symbol,
            currency=main_unit(text(info.get("currency")))[0],
            as_of=retrieved_at,
            retrieved_at=retrieved_at,
            url=yahoo_url(symbol, "profile"),
            notes=notes,
            name=name,
            sector=text(info.get("sector")),
            industry=text(info.get("industry")),
            country=text(info.get("country")),
            website=text(info.get("website")),
            employees=integer(info.get("fullTimeEmployees")),
            exchange=text(info.get("exchange")),
            quote_type=text(info.get("quoteType")),
            market_cap=_market_cap(info, main_unit(text(info.get("currency")))[1]),
            trailing_pe=num(info.get("trailingPE")),
            forward_pe=num(info.get("forwardPE")),
            dividend_yield=num(info.get("dividendYield")),
            beta=num(info.get("beta")),
            description=description,
        )

    def _news(self, symbol: str, requested: int, limit: int) -> News:
        articles = self._ticker(symbol).get_news(count=limit) or []
        items = [item for item in map(news_item, articles) if item is not None][:limit]
        if not items:
            raise NoMarketData(f"Yahoo Finance has no news for {symbol}.")
        notes = [f"Capped at {MAX_NEWS_ITEMS} items; {requested} were asked for."] if requested > limit else []
        dated = [item.published_at for item in items if item.published_at is not None]
        retrieved_at = self._now()
        return News(
            symbol=symbol,
            as_of=max(dated) if dated else retrieved_at,
            retrieved_at=retrieved_at,
            url=yahoo_url(symbol, "news"),
            notes=notes,
            items=items,
        )


def _market_cap(info: Mapping[str, Any], divisor: float) -> float | None:
    """Shares outstanding times the last price in the currency's main unit (never 100x for a London listing
    quoted in pence); Yahoo's own marketCap only when either is missing."""
    shares = num(info.get("sharesOutstanding"))
    price = scaled(info.get("regularMarketPrice") or info.get("currentPrice"), divisor)
    return num(shares * price) if shares and price is not None else num(info.get("marketCap"))


def _upstream_failure(exc: Exception, symbol: str, what: str) -> MarketDataError:
    if isinstance(exc, YFRateLimitError):
        return MarketDataRateLimited(f"Yahoo Finance is rate limiting requests; retry the {what} of {symbol} shortly.")
    if isinstance(exc, YFTickerMissingError):
        return NoMarketData(f"Yahoo Finance has no {what} for {symbol}; the symbol may be delisted.")
    if isinstance(exc, KeyError):
        # yfinance indexes Yahoo's payload without checking it: for a well-formed symbol Yahoo does not know
        # (unknown or delisted) the payload is empty, and e.g. `fast_info["lastPrice"]` raises
        # KeyError('currentTradingPeriod'). Logged, in case it is Yahoo's format changing instead.
        logger.warning("Yahoo Finance answered the %s of %s without %s", what, symbol, exc)
        return NoMarketData(f"Yahoo Finance has no {what} for {symbol}; the symbol may be unknown or delisted.")
    if isinstance(exc, HTTPError) and getattr(exc.response, "status_code", None) == 404:
        # Yahoo answers 404 to quoteSummary for a symbol it does not know.
        return NoMarketData(f"Yahoo Finance has no {what} for {symbol}; the symbol may be unknown or delisted.")
    if isinstance(exc, HTTPError) and getattr(exc.response, "status_code", None) == 429:
        return MarketDataRateLimited(f"Yahoo Finance is rate limiting requests; retry the {what} of {symbol} shortly.")
    if isinstance(exc, YFInvalidPeriodError):
        return InvalidArgument(f"Yahoo Finance does not offer that period and interval for {symbol}.")
    # The traceback only when debugging: upstream failures are routine, and the sentence says enough.
    logger.warning(
        "Yahoo Finance call for the %s of %s failed: %r", what, symbol, exc, exc_info=logger.isEnabledFor(logging.DEBUG)
    )
    return MarketDataUpstreamError(f"Yahoo Finance returned an error for the {what} of {symbol}.")
