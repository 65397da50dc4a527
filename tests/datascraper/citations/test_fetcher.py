"""Reading a cited page: the address rule on every hop, redirects, errors, timeouts and the size cap,
against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import ipaddress
import time

import pytest

from datascraper.citations.fetcher import MAX_REDIRECTS, PageFetcher, PageUnreachable, any_address, is_public, resolve
from tests.fakes.page_server import FakePageServer, article
from tests.processes import free_port

LOOPBACK = ipaddress.ip_address("127.0.0.1")


def only_this_server_is_public(address) -> bool:
    """The default rule, except that 127.0.0.1 (the page server) counts as public: what a public site
    redirecting to a private address looks like."""
    return address == LOOPBACK or is_public(address)


def fetcher(rule=any_address, *, timeout_s: float = 2.0, max_bytes: int = 1_048_576) -> PageFetcher:
    return PageFetcher(timeout_s=timeout_s, max_bytes=max_bytes, is_allowed=rule)


async def fetch(url: str, **options):
    pages = fetcher(**options)
    try:
        return await pages.fetch(url)
    finally:
        await pages.aclose()


async def reason(url: str, **options) -> str:
    with pytest.raises(PageUnreachable) as raised:
        await fetch(url, **options)
    return raised.value.reason


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1", "127.8.8.8", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1",
        "0.0.0.0", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
        "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
        "2001:db8::1",
    ],
)
def test_loopback_private_link_local_reserved_and_multicast_addresses_are_not_public(address):
    assert not is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "address",
    [
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
        "2002:a9fe:a9fe::",  # 6to4 of 169.254.169.254, the cloud metadata address
        "2002:c0a8:101::",  # 6to4 of 192.168.1.1
        "fec0::1",  # site-local
        "fed0:1234::5",
        "192.88.99.1",  # the 6to4 relays
        "2002:c058:6301::",  # 6to4 of a relay
    ],
)
def test_6to4_addresses_are_judged_by_their_ipv4_and_site_local_and_relay_ranges_are_refused(address):
    assert not is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8", "2002:808:808::1"]
)
def test_global_addresses_are_public(address):
    assert is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("host", ["10.1.2.3", "192.168.0.10", "169.254.169.254", "::1", "localhost"])
async def test_a_host_that_is_or_resolves_to_a_refused_address_is_refused_before_any_connection(host):
    with pytest.raises(PageUnreachable) as raised:
        await resolve(host, 80)
    assert raised.value.reason == "refused_address"


async def test_the_default_rule_refuses_127_0_0_1_and_the_page_is_never_asked_for(page_server: FakePageServer):
    url = page_server.add("/article", article("Title", "Text."))

    assert await reason(url, rule=is_public) == "refused_address"
    assert page_server.hits["/article"] == 0


async def test_a_redirect_to_a_loopback_address_is_refused_when_private_addresses_are_not_allowed(
    page_server: FakePageServer,
):
    page_server.add("/secret", article("Internal", "Not for outsiders."))
    targets = {
        "/to-v4": f"http://127.0.0.2:{page_server.port}/secret",
        "/to-v6": f"http://[::1]:{page_server.port}/secret",
    }
    for path, target in targets.items():
        url = page_server.add(path, redirect_to=target)

        assert await reason(url, rule=only_this_server_is_public) == "refused_address"
        assert page_server.hits[path] == 1
    assert page_server.hits["/secret"] == 0


async def test_redirects_are_followed_by_hand_with_relative_locations(page_server: FakePageServer):
    page_server.add("/final", article("Final", "The page at the end."))
    page_server.add("/second", redirect_to="/final")
    url = page_server.add("/first", redirect_to=page_server.url("/second"))

    page = await fetch(url, rule=only_this_server_is_public)

    assert page.url == page_server.url("/final")
    assert b"The page at the end." in page.html
    assert [page_server.hits[p] for p in ("/first", "/second", "/final")] == [1, 1, 1]


async def test_more_than_a_few_redirects_are_not_followed(page_server: FakePageServer):
    for i in range(MAX_REDIRECTS + 1):
        page_server.add(f"/hop{i}", redirect_to=f"/hop{i + 1}")
    page_server.add(f"/hop{MAX_REDIRECTS + 1}", article("End", "Never reached."))

    assert await reason(page_server.url("/hop0")) == "too_many_redirects"
    assert page_server.hits[f"/hop{MAX_REDIRECTS + 1}"] == 0


async def test_http_errors_connection_refused_and_non_html_are_unreachable(page_server: FakePageServer):
    assert await reason(page_server.url("/nothing-here")) == "http_404"
    assert await reason(page_server.add("/broken", "oops", status=500)) == "http_500"
    assert await reason(page_server.add("/report.pdf", b"%PDF-1.7", content_type="application/pdf")) == "not_html"
    assert await reason(f"http://127.0.0.1:{free_port()}/closed") == "connect_failed"
    assert await reason("ftp://127.0.0.1/file") == "bad_url"


async def test_a_page_slower_than_the_timeout_is_unreachable_in_about_the_timeout(page_server: FakePageServer):
    url = page_server.add("/slow", article("Slow", "Late."), delay_s=5)

    started = time.monotonic()
    assert await reason(url, timeout_s=0.3) == "timeout"
    assert time.monotonic() - started < 4  # not the page's 5 s


async def test_an_oversized_page_is_cut_at_the_cap(page_server: FakePageServer):
    body = article("Big", "Start.") + b"<p>" + b"x" * 3_000_000 + b"</p>"
    url = page_server.add("/big", body)

    page = await fetch(url, max_bytes=65_536)

    assert page.truncated
    assert len(page.html) == 65_536
    assert page.html == body[:65_536]


async def test_a_page_within_the_cap_is_read_whole(page_server: FakePageServer):
    body = article("Small", "All of it.")
    page = await fetch(page_server.add("/small", body), max_bytes=len(body))

    assert (page.html, page.truncated) == (body, False)
