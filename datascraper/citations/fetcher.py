"""Reading a cited page: public addresses only, a few redirects followed by hand, bounded time and size.

The pages an answer cites are addresses a model wrote, so the server must not be made to read its own
network through them (an admin page on localhost, a cloud metadata address). Every hop's host is
resolved here and every address it resolves to must be public: loopback, private, link-local, reserved,
multicast, unspecified and other non-global ranges (IPv4 and IPv6; IPv4-mapped and 6to4 IPv6 judged by
their IPv4; site-local IPv6 and the 6to4 relays) are refused, unless CITATION_FETCH_ALLOW_PRIVATE=1 (tests
against local servers; the rule is a parameter of the fetcher, so a test can also let one local server count
as public). The request then goes to the very address that was checked (the URL's host becomes it; the Host
header and the TLS server name keep the name), so a DNS answer that changes between the check and the
connection cannot slip a private address in. Redirects are not followed by the client: each `Location` is a
new hop, checked the same way, at most `MAX_REDIRECTS` of them.

Each page has `timeout_s` to connect, for each read, and for all its hops together; its body is read up to
`max_bytes` and no further (uncompressed bytes; the fetcher asks for no compression). Only HTML is read.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urljoin

import httpx2

MAX_REDIRECTS = 3
USER_AGENT = "finance-research-citation-check/1.0"
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_DEFAULT_PORTS = {"http": 80, "https": 443}

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
AddressRule = Callable[[IPAddress], bool]


class PageUnreachable(Exception):
    """A cited page that was not read. `reason` is a short code the run's signals count and each unreachable
    citation carries: `bad_url`, `dns_failed`, `refused_address`, `connect_failed`, `timeout`,
    `http_<status>`, `not_html`, `too_many_redirects`, `read_failed` (and from the verifier `unreadable`,
    `deadline`, `no_market_data`, `internal_error`)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


def reason_text(reason: str) -> str:
    """A reason code as words: "HTTP 403" for `http_403`, "dns failed" for `dns_failed`. The page says
    the same (`trust.js`)."""
    status = re.fullmatch(r"http_(\d{3})", reason)
    return f"HTTP {status.group(1)}" if status else reason.replace("_", " ")


@dataclass(frozen=True)
class FetchedPage:
    url: str  # where the page was read, after redirects
    html: bytes
    truncated: bool  # the page went on past the size cap


# 6to4 relay anycast (RFC 3068, deprecated by RFC 7526): a relay into someone's IPv6 network, never a page.
_SIXTOFOUR_RELAYS = ipaddress.ip_network("192.88.99.0/24")


def is_public(address: IPAddress) -> bool:
    """Whether `address` may be fetched by default: globally routed, and none of the refused ranges.

    An IPv6 address that carries an IPv4 one is judged by it: IPv4-mapped (`::ffff:a.b.c.d`) and 6to4
    (`2002:AABB:CCDD::`, which a 6to4 router delivers to the embedded IPv4, `2002:7f00:1::` to 127.0.0.1).
    Python calls some ranges global that no page lives on: site-local `fec0::/10` (deprecated, still
    routed inside some networks) and the 6to4 relays' `192.88.99.0/24`.
    """
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is not None:
            return is_public(embedded)
        if address.is_site_local:
            return False
    elif address in _SIXTOFOUR_RELAYS:
        return False
    return address.is_global and not (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_reserved
        or address.is_multicast
        or address.is_unspecified
    )


def any_address(address: IPAddress) -> bool:
    """The rule with CITATION_FETCH_ALLOW_PRIVATE=1: every address may be fetched."""
    return True


async def resolve(host: str, port: int, *, is_allowed: AddressRule = is_public) -> str:
    """The address to connect to for `host` (IPv4 first), once every address it resolves to passed
    `is_allowed`. Raises `PageUnreachable` (`dns_failed`, `refused_address`)."""
    try:
        addresses: list[IPAddress] = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise PageUnreachable("dns_failed", host) from exc
        # An IPv6 link-local answer carries its zone ("fe80::1%eth0"); the zone plays no part in the rule.
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    if not addresses:
        raise PageUnreachable("dns_failed", host)
    refused = next((address for address in addresses if not is_allowed(address)), None)
    if refused is not None:
        raise PageUnreachable("refused_address", f"{host} is {refused}")
    return str(min(addresses, key=lambda address: address.version))


class PageFetcher:
    """Reads cited pages for one verification, over one connection pool; `aclose()` when done."""

    def __init__(self, *, timeout_s: float, max_bytes: int, is_allowed: AddressRule = is_public) -> None:
        self._timeout_s = timeout_s
        self._max_bytes = max_bytes
        self._is_allowed = is_allowed
        self._client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(timeout_s),
            follow_redirects=False,
            # Connections are pooled by address: one kept alive for a page of one name must not carry
            # another name's request (its TLS was checked for the first). Each page is read once anyway.
            limits=httpx2.Limits(max_keepalive_connections=0),
            trust_env=False,  # no proxy from the environment: the address rule is about the page's address
            headers={
                "User-Agent": USER_AGENT,
                "Accept": "text/html,application/xhtml+xml",
                # A compressed body is inflated before the cap can count it: ask for none.
                "Accept-Encoding": "identity",
            },
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def fetch(self, url: str) -> FetchedPage:
        """The page at `url`, its HTML cut at the size cap. Raises `PageUnreachable`."""
        try:
            async with asyncio.timeout(self._timeout_s):
                return await self._follow(url)
        except TimeoutError as exc:
            raise PageUnreachable("timeout", url) from exc

    async def _follow(self, url: str) -> FetchedPage:
        for _ in range(MAX_REDIRECTS + 1):
            target = _page_url(url)
            port = target.port or _DEFAULT_PORTS[target.scheme]
            host = target.raw_host.decode("ascii")  # an internationalised name in its IDNA form
            address = await resolve(host, port, is_allowed=self._is_allowed)
            extensions = {"sni_hostname": host} if target.scheme == "https" else {}
            try:
                async with self._client.stream(
                    "GET",
                    target.copy_with(host=address),
                    headers={"Host": target.netloc.decode("ascii")},
                    extensions=extensions,
                ) as response:
                    location = response.headers.get("location")
                    if response.status_code in _REDIRECTS and location:
                        url = urljoin(str(target), location)
                        continue
                    return await self._read(str(target), response)
            except httpx2.TimeoutException as exc:
                raise PageUnreachable("timeout", url) from exc
            except httpx2.ConnectError as exc:
                raise PageUnreachable("connect_failed", url) from exc
            except httpx2.HTTPError as exc:
                raise PageUnreachable("read_failed", f"{url}: {type(exc).__name__}") from exc
        raise PageUnreachable("too_many_redirects", url)

    async def _read(self, url: str, response: httpx2.Response) -> FetchedPage:
        if not 200 <= response.status_code < 300:
            raise PageUnreachable(f"http_{response.status_code}", url)
        content_type = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if content_type not in _HTML_TYPES:
            raise PageUnreachable("not_html", f"{url}: {content_type or 'no content type'}")
        body = bytearray()
        truncated = False
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > self._max_bytes:
                del body[self._max_bytes :]
                truncated = True
                break
        return FetchedPage(url=url, html=bytes(body), truncated=truncated)


def _page_url(url: str) -> httpx2.URL:
    try:
        target = httpx2.URL(url)
    except (httpx2.InvalidURL, ValueError, TypeError) as exc:
        raise PageUnreachable("bad_url", url) from exc
    if target.scheme not in _DEFAULT_PORTS or not target.host:
        raise PageUnreachable("bad_url", url)
    return target
