"""What a watchlist may hold: each field checked, or refused with a named code whose message names the field.

- `name`: 1 to 100 characters after trimming (`invalid_request`).
- `symbols`: 1 to 50 (`too_many_symbols`), each in Yahoo's spelling and known to Yahoo Finance
  (`unknown_symbol`, naming every unknown one). They are looked up through the market data server, as
  research reads them (a quote each, cached there for a minute). When Yahoo or the server cannot answer,
  the watchlist is refused with a 503 `market_data_unavailable`: an unknown symbol is never let in unchecked.
- `schedule` and `timezone`: a 5-field cron read in an IANA zone (`invalid_schedule`, `invalid_timezone`),
  whose firings are never closer than BRIEFS_MIN_INTERVAL seconds (`schedule_too_frequent`; chat.schedules).
- `channels`: at most 5; a webhook is an http(s) URL without credentials in it and a secret
  (`invalid_channel`), whose host resolves to public addresses only, judged as the citation fetcher judges
  a page's (`webhook_not_public`, unless WEBHOOK_ALLOW_PRIVATE=1); an e-mail is one valid address.

The delivery will judge the webhook's address again when it sends: a name may resolve elsewhere by then.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from chat.schedules import InvalidSchedule, InvalidTimezone, Schedule
from chat.watchlist_schemas import EmailChannelIn, WebhookChannelIn
from datascraper.citations.fetcher import PageUnreachable, any_address, is_public, resolve
from datascraper.market_data.errors import InvalidSymbol, MarketDataError
from datascraper.market_data.symbols import normalize_symbol
from datascraper.research_engine.data.market_data import MAX_TICKERS, fetch_market_data

MAX_NAME_CHARS = 100
MAX_SYMBOLS = 50
MAX_CHANNELS = 5
SYMBOL_CHECK_TIMEOUT_S = 10.0
DNS_TIMEOUT_S = 5.0
# What the quote tool answers for a symbol Yahoo does not know; any other failure is Yahoo's, not the symbol's.
UNKNOWN_SYMBOL_CODES = frozenset({"invalid_symbol", "no_data"})
_DEFAULT_PORTS = {"http": 80, "https": 443}

Channel = WebhookChannelIn | EmailChannelIn


class WatchlistRefused(Exception):
    """A watchlist that cannot be stored as asked: the API's error `code`, a `message` naming the field."""

    def __init__(self, code: str, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


def checked_name(name: str) -> str:
    name = name.strip()
    if not 1 <= len(name) <= MAX_NAME_CHARS:
        raise WatchlistRefused("invalid_request", f"name: 1 to {MAX_NAME_CHARS} characters after trimming")
    return name


async def checked_symbols(raw: Sequence[str], *, known: Collection[str] = ()) -> list[str]:
    """The symbols in Yahoo's spelling, each once, in the order given. Those in `known` (already on the
    watchlist) are not looked up again."""
    symbols: list[str] = []
    for value in raw:
        try:
            symbol = normalize_symbol(value)
        except InvalidSymbol as exc:
            raise WatchlistRefused("unknown_symbol", f"symbols: {exc.message}") from None
        if symbol not in symbols:
            symbols.append(symbol)
    if not symbols:
        raise WatchlistRefused("invalid_request", "symbols: at least one symbol")
    if len(symbols) > MAX_SYMBOLS:
        raise WatchlistRefused("too_many_symbols", f"symbols: at most {MAX_SYMBOLS}; got {len(symbols)}")
    await _look_up([symbol for symbol in symbols if symbol not in known])
    return symbols


async def _look_up(symbols: list[str]) -> None:
    """Refuse the symbols Yahoo Finance does not know; a 503 when it cannot say."""
    if not symbols:
        return
    chunks = [symbols[start : start + MAX_TICKERS] for start in range(0, len(symbols), MAX_TICKERS)]
    try:
        findings = await asyncio.gather(
            *(fetch_market_data(chunk, "quote", timeout_s=SYMBOL_CHECK_TIMEOUT_S) for chunk in chunks)
        )
    except MarketDataError as exc:
        raise _unavailable(exc.message) from None
    failures = [failure for finding in findings for failure in finding.errors]
    unknown = [failure.symbol for failure in failures if failure.code in UNKNOWN_SYMBOL_CODES]
    if unknown:
        raise WatchlistRefused("unknown_symbol", f"symbols: Yahoo Finance does not know {', '.join(unknown)}")
    if failures:
        raise _unavailable(failures[0].message)


def _unavailable(reason: str) -> WatchlistRefused:
    return WatchlistRefused(
        "market_data_unavailable",
        f"symbols: could not be checked with Yahoo Finance ({reason.rstrip('.')}); nothing was stored, try again",
        status=503,
    )


async def checked_schedule(cron: str, timezone: str) -> Schedule:
    """The schedule, once its firings are known to be at least BRIEFS_MIN_INTERVAL apart over the coming
    year (measured off the event loop: tens of milliseconds)."""
    return await asyncio.to_thread(_checked_schedule, cron, timezone)


def _checked_schedule(cron: str, timezone: str) -> Schedule:
    try:
        schedule = Schedule.parse(cron, timezone)
    except InvalidTimezone as exc:
        raise WatchlistRefused("invalid_timezone", f"timezone: {exc}") from None
    except InvalidSchedule as exc:
        raise WatchlistRefused("invalid_schedule", f"schedule: {exc}") from None
    minimum = settings.BRIEFS_MIN_INTERVAL
    too_close = schedule.closest_firings(timedelta(seconds=minimum), datetime.now(UTC))
    if too_close is not None:
        raise WatchlistRefused(
            "schedule_too_frequent",
            f"schedule: {schedule.cron!r} fires {too_close.gap_s} s apart at {too_close.first:%Y-%m-%d %H:%M} and "
            f"{too_close.second:%Y-%m-%d %H:%M} ({timezone}); BRIEFS_MIN_INTERVAL is {minimum} s",
        )
    return schedule


async def checked_channels(channels: Sequence[Channel], *, stored: Sequence[dict] = ()) -> list[dict]:
    """The channels as stored. A webhook given without a secret keeps the secret stored for its URL."""
    if len(channels) > MAX_CHANNELS:
        raise WatchlistRefused("invalid_channel", f"channels: at most {MAX_CHANNELS}")
    secrets = {channel["url"]: channel["secret"] for channel in stored if channel["type"] == "webhook"}
    checked = []
    for n, channel in enumerate(channels):
        where = f"channels.{n}"
        if isinstance(channel, EmailChannelIn):
            checked.append({"type": "email", "to": _checked_address(where, channel.to)})
            continue
        secret = channel.secret if channel.secret is not None else secrets.get(channel.url)
        if not secret or not secret.strip():
            raise WatchlistRefused("invalid_channel", f"{where}.secret: a webhook needs a secret to sign its bodies")
        await _check_webhook(where, channel.url)
        checked.append({"type": "webhook", "url": channel.url, "secret": secret})
    return checked


def _checked_address(where: str, address: str) -> str:
    address = address.strip()
    try:
        validate_email(address)
    except ValidationError:
        raise WatchlistRefused("invalid_channel", f"{where}.to: not a valid e-mail address") from None
    return address


async def _check_webhook(where: str, url: str) -> None:
    """An http(s) URL with a host and no credentials, every address of which is public (unless
    WEBHOOK_ALLOW_PRIVATE=1)."""
    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        raise WatchlistRefused("invalid_channel", f"{where}.url: not a valid URL") from None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or port is None:
        raise WatchlistRefused("invalid_channel", f"{where}.url: an http or https URL with a host")
    if parts.username is not None or parts.password is not None:
        raise WatchlistRefused("invalid_channel", f"{where}.url: no credentials in the URL; the secret signs the body")
    rule = any_address if settings.WEBHOOK_ALLOW_PRIVATE else is_public
    try:
        await asyncio.wait_for(resolve(parts.hostname, port, is_allowed=rule), DNS_TIMEOUT_S)
    except TimeoutError:
        raise WatchlistRefused(
            "invalid_channel", f"{where}.url: {parts.hostname} did not resolve within {DNS_TIMEOUT_S:g} s"
        ) from None
    except PageUnreachable as exc:
        if exc.reason == "refused_address":
            raise WatchlistRefused(
                "webhook_not_public",
                f"{where}.url: {parts.hostname} is a loopback, private, link-local or otherwise non-public address",
            ) from None
        raise WatchlistRefused("invalid_channel", f"{where}.url: {parts.hostname} does not resolve") from None
