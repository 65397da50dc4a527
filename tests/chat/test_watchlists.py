"""Watchlists through the API: created, listed, read, changed and deleted by their owner alone; every bad
field refused with a named code whose message names it, and nothing stored; a webhook's secret stored but
never sent back.

The live app answers over HTTP; symbols are looked up through the real market data server (in memory)
over the fake yfinance, where NOSUCH is a symbol Yahoo does not know and LIMIT one it rate-limits.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from chat.models import Watchlist
from chat.schedules import Schedule
from tests.chat.test_csrf import browser, token  # noqa: F401 (the fixture)
from tests.datascraper.conftest import market_data, market_data_down  # noqa: F401 (the fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "placeholder-webhook-secret"
PUBLIC_HOOK = "https://93.184.215.14/hooks/briefs"  # a public address, written as one: no DNS needed


def new_watchlist(**changes: object) -> dict:
    body = {
        "name": "Morning tech",
        "symbols": ["AAPL", "NVDA"],
        "schedule": "30 7 * * 1-5",
        "timezone": "Europe/Paris",
        "channels": [
            {"type": "webhook", "url": PUBLIC_HOOK, "secret": SECRET},
            {"type": "email", "to": "analyst@example.com"},
        ],
    }
    return {**body, **changes}


def error_of(response) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"}
    return body["error"]


async def create(api, **changes: object) -> dict:
    response = await api.post("/api/watchlists", json=new_watchlist(**changes))
    assert response.status_code == 201, response.text
    return response.json()


async def test_a_watchlist_is_created_with_its_symbols_normalised_and_its_next_firing(api, market_data):  # noqa: F811
    before = datetime.now(UTC)
    response = await api.post("/api/watchlists", json=new_watchlist(symbols=[" aapl", "brk.b", "AAPL", "mc.pa"]))

    assert response.status_code == 201
    created = response.json()
    assert created["symbols"] == ["AAPL", "BRK-B", "MC.PA"]
    assert (created["schedule"], created["timezone"]) == ("30 7 * * 1-5", "Europe/Paris")
    expected = Schedule.parse("30 7 * * 1-5", "Europe/Paris").next_after(before)
    assert datetime.fromisoformat(created["next_run_at"]) == expected
    stored = await Watchlist.objects.aget(pk=created["id"])
    assert stored.symbols == ["AAPL", "BRK-B", "MC.PA"] and stored.next_run_at == expected
    assert {symbol for symbol, _ in market_data.calls} == {"AAPL", "BRK-B", "MC.PA"}


async def test_the_webhook_secret_is_stored_and_never_sent_back_nor_logged(api, market_data, caplog):  # noqa: F811
    caplog.set_level("DEBUG")
    created = await create(api)
    responses = [
        await api.get("/api/watchlists"),
        await api.get(f"/api/watchlists/{created['id']}"),
        await api.patch(f"/api/watchlists/{created['id']}", json={"name": "Renamed"}),
        await api.post("/api/watchlists", json=new_watchlist(**webhook("http://127.0.0.1/hook"))),
    ]

    assert created["channels"] == [
        {"type": "webhook", "url": PUBLIC_HOOK, "secret_set": True},
        {"type": "email", "to": "analyst@example.com"},
    ]
    assert [response.status_code for response in responses] == [200, 200, 200, 400]
    assert not [response for response in responses if SECRET in response.text]
    assert caplog.records and SECRET not in caplog.text
    stored = await Watchlist.objects.aget(pk=created["id"])
    assert stored.channels[0]["secret"] == SECRET


async def test_owners_list_read_change_and_delete_only_their_own(api, other_api, market_data):  # noqa: F811
    mine = await create(api, name="Mine")
    theirs = await create(other_api, name="Theirs")

    assert [w["name"] for w in (await api.get("/api/watchlists")).json()] == ["Mine"]
    assert (await api.get(f"/api/watchlists/{mine['id']}")).json()["name"] == "Mine"
    for response in [
        await api.get(f"/api/watchlists/{theirs['id']}"),
        await api.patch(f"/api/watchlists/{theirs['id']}", json={"name": "Taken"}),
        await api.delete(f"/api/watchlists/{theirs['id']}"),
    ]:
        assert response.status_code == 404 and error_of(response)["code"] == "not_found"
    assert (await Watchlist.objects.aget(pk=theirs["id"])).name == "Theirs"

    assert (await api.delete(f"/api/watchlists/{mine['id']}")).status_code == 204
    assert (await api.get(f"/api/watchlists/{mine['id']}")).status_code == 404
    assert await Watchlist.objects.acount() == 1


async def test_a_patch_changes_only_what_it_names_and_a_new_schedule_moves_the_next_firing(api, market_data):  # noqa: F811
    created = await create(api)
    before = datetime.now(UTC)

    response = await api.patch(f"/api/watchlists/{created['id']}", json={"schedule": "0 18 * * *", "timezone": "UTC"})

    assert response.status_code == 200
    changed = response.json()
    assert (changed["schedule"], changed["timezone"], changed["name"]) == ("0 18 * * *", "UTC", "Morning tech")
    assert changed["symbols"] == created["symbols"] and changed["channels"] == created["channels"]
    expected = Schedule.parse("0 18 * * *", "UTC").next_after(before)
    assert datetime.fromisoformat(changed["next_run_at"]) == expected


async def test_a_patch_looks_up_only_the_symbols_it_adds(api, market_data):  # noqa: F811
    created = await create(api)
    market_data.calls.clear()

    response = await api.patch(f"/api/watchlists/{created['id']}", json={"symbols": ["NVDA", "msft"]})

    assert response.json()["symbols"] == ["NVDA", "MSFT"]
    assert {symbol for symbol, _ in market_data.calls} == {"MSFT"}


async def test_a_patch_keeps_a_webhooks_stored_secret_for_the_same_url_only(api, market_data):  # noqa: F811
    created = await create(api)
    path = f"/api/watchlists/{created['id']}"

    same_url = await api.patch(path, json={"channels": [{"type": "webhook", "url": PUBLIC_HOOK}]})
    new_url = await api.patch(path, json={"channels": [{"type": "webhook", "url": "https://93.184.215.15/x"}]})

    assert same_url.status_code == 200
    assert (await Watchlist.objects.aget(pk=created["id"])).channels == [
        {"type": "webhook", "url": PUBLIC_HOOK, "secret": SECRET}
    ]
    assert new_url.status_code == 400 and error_of(new_url)["code"] == "invalid_channel"
    assert "channels.0.secret" in error_of(new_url)["message"]


def webhook(url: str, **fields: object) -> dict:
    return {"channels": [{"type": "webhook", "url": url, "secret": SECRET, **fields}]}


@pytest.mark.parametrize(
    ("changes", "code", "named"),
    [
        ({"symbols": ["AAPL", "NOSUCH"]}, "unknown_symbol", "NOSUCH"),
        ({"symbols": ["AAPL", "$$$"]}, "unknown_symbol", "'$$$'"),
        ({"symbols": [f"S{n}" for n in range(51)]}, "too_many_symbols", "symbols"),
        ({"symbols": []}, "invalid_request", "symbols"),
        ({"name": "   "}, "invalid_request", "name"),
        ({"schedule": "30 7 * *"}, "invalid_schedule", "schedule"),
        ({"schedule": "0 0 31 2 *"}, "invalid_schedule", "schedule"),
        ({"schedule": "0 " + ",".join(["1-2"] * 40) + " * * *"}, "invalid_schedule", "schedule"),
        ({"timezone": "Mars/Olympus"}, "invalid_timezone", "timezone"),
        ({"schedule": "*/30 * * * *"}, "schedule_too_frequent", "schedule"),
        (webhook("ftp://93.184.215.14/x"), "invalid_channel", "channels.0.url"),
        (webhook("https://user:pass@93.184.215.14/x"), "invalid_channel", "channels.0.url"),
        (webhook(PUBLIC_HOOK, secret=""), "invalid_channel", "channels.0.secret"),
        (webhook(PUBLIC_HOOK, secret="s" * 257), "invalid_channel", "channels.0.secret"),
        ({"channels": [{"type": "webhook", "url": PUBLIC_HOOK}]}, "invalid_channel", "channels.0.secret"),
        ({"channels": [{"type": "email", "to": "not an address"}]}, "invalid_channel", "channels.0.to"),
        ({"channels": [{"type": "sms", "to": "+33600000000"}]}, "invalid_channel", "channels.0"),
        (webhook("http://127.0.0.1:8080/hook"), "webhook_not_public", "channels.0.url"),
        (webhook("http://10.1.2.3/hook"), "webhook_not_public", "channels.0.url"),
        (webhook("http://169.254.169.254/latest/meta-data"), "webhook_not_public", "channels.0.url"),
        (webhook("http://[::1]/hook"), "webhook_not_public", "channels.0.url"),
        (webhook("http://localhost:9000/hook"), "webhook_not_public", "channels.0.url"),
    ],
)
async def test_a_bad_field_is_a_400_with_its_code_naming_it_and_nothing_is_stored(
    api,
    market_data,  # noqa: F811
    changes,
    code,
    named,
):
    response = await api.post("/api/watchlists", json=new_watchlist(**changes))

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == code and named in error["message"]
    assert SECRET not in response.text and "s" * 257 not in response.text
    assert await Watchlist.objects.acount() == 0


async def test_a_patch_is_checked_as_a_creation_is(api, market_data):  # noqa: F811
    created = await create(api)

    response = await api.patch(f"/api/watchlists/{created['id']}", json={"schedule": "*/10 * * * *"})

    assert response.status_code == 400 and error_of(response)["code"] == "schedule_too_frequent"
    assert (await Watchlist.objects.aget(pk=created["id"])).schedule == "30 7 * * 1-5"


async def test_an_hourly_schedule_is_allowed_at_the_default_minimum_and_refused_above_it(api, market_data, settings):  # noqa: F811
    assert (await api.post("/api/watchlists", json=new_watchlist(schedule="0 * * * *"))).status_code == 201
    settings.BRIEFS_MIN_INTERVAL = 7200

    response = await api.post("/api/watchlists", json=new_watchlist(schedule="0 * * * *"))

    assert response.status_code == 400
    assert error_of(response)["code"] == "schedule_too_frequent" and "7200" in error_of(response)["message"]


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/hook", "http://localhost:9000/hook"])
async def test_private_webhooks_are_allowed_when_the_setting_says_so(api, market_data, settings, url):  # noqa: F811
    settings.WEBHOOK_ALLOW_PRIVATE = True

    response = await api.post("/api/watchlists", json=new_watchlist(**webhook(url)))

    assert response.status_code == 201
    assert response.json()["channels"] == [{"type": "webhook", "url": url, "secret_set": True}]


async def test_an_owner_past_the_limit_of_watchlists_is_refused(api, other_api, market_data, settings):  # noqa: F811
    settings.WATCHLISTS_MAX_PER_OWNER = 2
    await create(api)
    await create(api)

    refused = await api.post("/api/watchlists", json=new_watchlist())

    assert refused.status_code == 400 and error_of(refused)["code"] == "too_many_watchlists"
    assert (await other_api.post("/api/watchlists", json=new_watchlist())).status_code == 201
    assert await Watchlist.objects.acount() == 3


async def test_a_rate_limited_yahoo_is_a_503_and_no_symbol_is_let_in_unchecked(api, market_data):  # noqa: F811
    response = await api.post("/api/watchlists", json=new_watchlist(symbols=["AAPL", "LIMIT"]))

    assert response.status_code == 503
    error = error_of(response)
    assert error["code"] == "market_data_unavailable" and "symbols" in error["message"]
    assert await Watchlist.objects.acount() == 0


async def test_an_unreachable_market_data_server_is_a_503(api, market_data_down):  # noqa: F811
    response = await api.post("/api/watchlists", json=new_watchlist())

    assert response.status_code == 503 and error_of(response)["code"] == "market_data_unavailable"
    assert await Watchlist.objects.acount() == 0


async def test_unknown_watchlist_ids_are_404(api):
    for response in [
        await api.get(f"/api/watchlists/{uuid.uuid4()}"),
        await api.delete(f"/api/watchlists/{uuid.uuid4()}"),
        await api.get("/api/watchlists/not-a-uuid"),
    ]:
        assert response.status_code == 404 and error_of(response)["code"] == "not_found"


async def test_the_watchlist_endpoints_are_in_the_openapi_document(api):
    paths = (await api.get("/api/openapi.json")).json()["paths"]

    assert set(paths["/api/watchlists"]) == {"get", "post"}
    assert set(paths["/api/watchlists/{watchlist_id}"]) == {"get", "patch", "delete"}


async def test_a_browser_session_sends_the_csrf_token_to_create_a_watchlist(browser, market_data):  # noqa: F811
    refused = await browser.post("/api/watchlists", json=new_watchlist())
    accepted = await browser.post("/api/watchlists", json=new_watchlist(), headers=token(browser))

    assert refused.status_code == 403 and error_of(refused)["code"] == "csrf_failed"
    assert accepted.status_code == 201
    assert [w["id"] for w in (await browser.get("/api/watchlists")).json()] == [accepted.json()["id"]]
