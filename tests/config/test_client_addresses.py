"""The client address the limits count: a peer or a forwarded hop read as proxies write it (with a port,
IPv4-mapped), and forwarded headers believed only from TRUSTED_PROXIES, by the app and by `make run`'s
uvicorn alike."""

from __future__ import annotations

import asyncio

import httpx2
import pytest

from chat.callers import parse_address
from tests.config.test_middleware import forwarded
from tests.processes import running_apps


@pytest.mark.parametrize(
    ("written", "address"),
    [
        ("198.51.100.7", "198.51.100.7"),
        (" 198.51.100.7 ", "198.51.100.7"),
        ("198.51.100.7:5678", "198.51.100.7"),
        ("2001:db8::1", "2001:db8::1"),
        ("[2001:db8::1]", "2001:db8::1"),
        ("[2001:db8::1]:443", "2001:db8::1"),
        ("fe80::1%eth0", "fe80::1"),
        ("::ffff:10.0.0.1", "10.0.0.1"),
        ("[::ffff:10.0.0.1]:8080", "10.0.0.1"),
    ],
)
def test_an_address_is_read_as_peers_and_proxies_write_it(written, address):
    assert str(parse_address(written)) == address


@pytest.mark.parametrize(
    "written",
    [
        "",
        "unknown",
        "_hidden",
        "proxy.internal",
        "198.51.100.7:",
        "198.51.100.7:http",
        "[2001:db8::1",
        "[2001:db8::1]443",
    ],
)
def test_what_is_not_an_address_reads_as_none(written):
    assert parse_address(written) is None


def test_a_forwarded_hop_with_a_port_is_the_client(settings):
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]

    assert forwarded("10.0.0.1", settings, HTTP_X_FORWARDED_FOR="198.51.100.7:5678") == (False, "198.51.100.7")
    assert forwarded("10.0.0.1", settings, HTTP_X_FORWARDED_FOR="[2001:db8:1:2::7]:443, 10.0.0.2") == (
        False,
        "2001:db8:1:2::/64",
    )


def test_an_ipv4_mapped_proxy_peer_is_trusted_by_its_ipv4_network(settings):
    """A dual-stack socket names the IPv4 proxy `::ffff:10.0.0.1`: its forwarded headers still count."""
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    headers = {"HTTP_X_FORWARDED_PROTO": "https", "HTTP_X_FORWARDED_FOR": "::ffff:198.51.100.7"}

    assert forwarded("::ffff:10.0.0.1", settings, **headers) == (True, "198.51.100.7")


def test_a_trusted_network_written_ipv4_mapped_trusts_the_ipv4_peer(settings):
    settings.TRUSTED_PROXIES = ["::ffff:10.0.0.0/104"]

    assert forwarded("10.0.0.1", settings, HTTP_X_FORWARDED_FOR="198.51.100.7") == (False, "198.51.100.7")


def test_a_hop_that_is_no_address_ends_the_walk_at_the_nearest_one_read(settings):
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]

    assert forwarded("10.0.0.1", settings, HTTP_X_FORWARDED_FOR="198.51.100.7, unknown") == (False, "10.0.0.1")


@pytest.mark.django_db(transaction=True)
async def test_clients_behind_trusted_proxies_are_counted_apart_by_the_live_app(live_server_url, limits, settings):
    """Each client's hop carries a port, as some proxies write it, and reaches the app through a second
    proxy (10.0.0.2, which this test's client plays, on 127.0.0.1)."""
    limits(CHAT_ADDRESS_SESSION_RATE_LIMIT="1/h")
    settings.TRUSTED_PROXIES = ["127.0.0.1", "10.0.0.0/8"]

    async def new_session(forwarded_for: str) -> int:
        async with httpx2.AsyncClient(base_url=live_server_url, timeout=20) as client:
            response = await client.post("/api/conversations", json={}, headers={"X-Forwarded-For": forwarded_for})
            return response.status_code

    statuses = [
        await new_session("198.51.100.7:5678, 10.0.0.2"),
        await new_session("[2001:db8:1:2::7]:443, 10.0.0.2"),
        await new_session("198.51.100.7:6000, 10.0.0.3"),  # the first client again: its limit is spent
    ]

    assert statuses == [201, 201, 429]


@pytest.mark.django_db(transaction=True)
@pytest.mark.processes
async def test_make_runs_uvicorn_believes_no_forwarded_header_from_a_peer_that_is_not_a_trusted_proxy():
    """`make run`'s own command: with TRUSTED_PROXIES unset, a client on 127.0.0.1 writing X-Forwarded-For
    is still 127.0.0.1 (uvicorn's default would have taken the header's address from there)."""
    # Its own rate counts (no Redis): nothing another test counted for 127.0.0.1 is seen.
    with running_apps(TRUSTED_PROXIES="", REDIS_URL="", CHAT_ADDRESS_SESSION_RATE_LIMIT="1/h") as apps:
        _, url = await asyncio.to_thread(apps.web)
        async with httpx2.AsyncClient(base_url=url, timeout=20) as client:
            statuses = []
            for forwarded_for in ("198.51.100.7", "198.51.100.8"):
                client.cookies.clear()
                response = await client.post("/api/conversations", json={}, headers={"X-Forwarded-For": forwarded_for})
                statuses.append(response.status_code)

    assert statuses == [201, 429]
