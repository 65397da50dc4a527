"""`/v1/chat/completions` shares the owner's question rate and run cap, and refuses in OpenAI's 429 shape."""

from __future__ import annotations

import uuid

import openai
import pytest

from chat.models import Conversation, Message
from tests.chat.test_runs import ask, wait_finished
from tests.clients.test_openai_compat import QUESTION, error_body, script_answer
from tests.fakes.openai_server import TextReply

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {"model": "finance-research", "messages": QUESTION, "mode": "quick"}


@pytest.fixture
def limits(settings):
    """Set admission limits for one test, counted under a fresh cache prefix (no cache to clear)."""
    settings.RATELIMIT_CACHE_PREFIX = f"rl:test-{uuid.uuid4().hex}:"

    def set_limits(**values: object) -> None:
        for name, value in values.items():
            setattr(settings, name, value)

    return set_limits


async def test_a_completion_over_the_rate_is_a_429_rate_limit_error_and_stores_nothing(api, fake_openai, limits):
    limits(CHAT_RATE_LIMIT="1/m")
    script_answer(fake_openai)
    assert (await api.post("/v1/chat/completions", json=BODY)).status_code == 200

    refused = await api.post("/v1/chat/completions", json=BODY)

    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    error = error_body(refused)
    assert (error["type"], error["code"]) == ("rate_limit_error", "rate_limited")
    assert await Conversation.objects.acount() == 1
    assert await Message.objects.filter(role="user").acount() == 1


async def test_questions_through_the_json_api_and_v1_share_one_rate(api, fake_openai, limits):
    limits(CHAT_RATE_LIMIT="1/m")
    conversation_id = (await api.post("/api/conversations", json={})).json()["id"]
    asked = await api.post(f"/api/conversations/{conversation_id}/messages", json={"content": "Hi", "mode": "quick"})
    assert asked.status_code == 202

    refused = await api.post("/v1/chat/completions", json=BODY)

    assert refused.status_code == 429 and error_body(refused)["code"] == "rate_limited"


async def test_the_sdk_raises_its_rate_limit_error(sdk, fake_openai, limits):
    limits(CHAT_RATE_LIMIT="1/m")
    script_answer(fake_openai)
    await sdk.chat.completions.create(model="finance-research", messages=QUESTION, extra_body={"mode": "quick"})

    with pytest.raises(openai.RateLimitError) as raised:
        await sdk.with_options(max_retries=0).chat.completions.create(model="finance-research", messages=QUESTION)

    assert raised.value.code == "rate_limited"
    assert int(raised.value.response.headers["Retry-After"]) >= 1


async def test_with_the_maximum_of_runs_in_flight_a_completion_is_a_429_too_many_runs(api, fake_openai, limits):
    limits(CHAT_MAX_CONCURRENT_RUNS=1)
    fake_openai.script(TextReply(first_byte_delay=5))
    in_flight = await ask(api, "A slow question")

    refused = await api.post("/v1/chat/completions", json=BODY)

    assert refused.status_code == 429 and refused.headers["Retry-After"] == "5"
    assert error_body(refused)["code"] == "too_many_runs"
    assert await Conversation.objects.acount() == 1
    assert (await api.post(f"/api/runs/{in_flight['run_id']}/cancel")).status_code == 202
    assert (await wait_finished(api, in_flight["run_id"]))["status"] == "cancelled"
