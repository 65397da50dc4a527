"""What a `/v1/chat/completions` request may cost: its body (at most 256 KB, at most 10,000 JSON arrays and
objects, parsed off the event loop) and the history its run reads (what a page question takes with it, the
oldest turns dropped first and the drop in the run's signals). Through the live app and the fake OpenAI
server, with the official SDK where it can send the request."""

from __future__ import annotations

import asyncio
import json

import pytest

from chat.models import Conversation, Message, ResearchRun
from tests.clients.test_openai_compat import QUESTION, error_body, script_answer

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 256 * 1024


def turns(count: int, characters: int) -> list[dict[str, str]]:
    """`count` earlier turns, users' and assistants' in turn, each `characters` long and starting with its
    number (`turn 00 `), then the question."""
    history = [
        {"role": ("user", "assistant")[n % 2], "content": f"turn {n:02d} ".ljust(characters, "x")} for n in range(count)
    ]
    return [*history, *QUESTION]


def model_inputs(fake_openai) -> str:
    return "\n".join(request.input_text for request in fake_openai.requests)


# --- the body -----------------------------------------------------------------------------------------


async def test_a_body_over_the_limit_is_a_413_in_openais_shape_naming_it_and_stores_nothing(api, fake_openai):
    messages = [{"role": "user", "content": "x" * 30_000}] * 9 + QUESTION  # within every other limit

    response = await api.post("/v1/chat/completions", json={"model": "finance-research", "messages": messages})

    assert response.status_code == 413
    error = error_body(response)
    assert (error["type"], error["code"]) == ("invalid_request_error", "request_too_large")
    assert "over the limit of 262144 bytes (256 KB)" in error["message"]
    assert not await Conversation.objects.aexists() and fake_openai.requests == []


async def test_a_body_with_more_than_10000_arrays_and_objects_is_a_400_even_where_it_is_ignored(api, fake_openai):
    nested = "[" * 10_001 + "]" * 10_001
    body = f'{{"model": "finance-research", "messages": {json.dumps(QUESTION)}, "metadata": {nested}}}'

    response = await api.post("/v1/chat/completions", content=body, headers={"Content-Type": "application/json"})

    assert response.status_code == 400
    error = error_body(response)
    assert error["message"] == "The request body holds more than 10000 JSON arrays and objects."
    assert not await Conversation.objects.aexists() and fake_openai.requests == []


async def test_brackets_in_the_text_of_the_turns_are_not_arrays(sdk, fake_openai):
    script_answer(fake_openai)
    messages = [{"role": "assistant", "content": "[1][2]" * 3000}, {"role": "user", "content": "{[" * 3000}, *QUESTION]

    completion = await sdk.chat.completions.create(model="finance-research", messages=messages)

    assert completion.choices[0].message.content
    assert await Message.objects.filter(content="[1][2]" * 3000).aexists()


async def test_a_request_is_parsed_and_validated_off_the_event_loop(sdk, fake_openai, monkeypatch):
    from chat import openai_compat

    script_answer(fake_openai)
    parsed_on_a_loop: list[bool] = []
    parse_request = openai_compat.parse_request

    def spying(raw: bytes):
        try:
            asyncio.get_running_loop()
            parsed_on_a_loop.append(True)
        except RuntimeError:
            parsed_on_a_loop.append(False)
        return parse_request(raw)

    monkeypatch.setattr(openai_compat, "parse_request", spying)

    await sdk.chat.completions.create(model="finance-research", messages=QUESTION)

    assert parsed_on_a_loop == [False]


# --- the history a run reads --------------------------------------------------------------------------


async def test_the_oldest_turns_past_160000_characters_are_dropped_and_the_drop_is_in_the_signals(
    sdk, api, fake_openai
):
    script_answer(fake_openai)

    completion = await sdk.chat.completions.create(model="finance-research", messages=turns(8, 30_000))

    inputs = model_inputs(fake_openai)
    assert [n for n in range(8) if f"turn {n:02d} " in inputs] == [3, 4, 5, 6, 7]  # 150,000 characters
    run = await ResearchRun.objects.aget()
    assert completion.id == f"chatcmpl-{run.id.hex}" and run.status == "done"
    assert run.signals["history_dropped"] == {"turns": 3, "characters": 90_000}
    assert "model_calls" in run.signals  # the router's own signals beside it
    stored = [m.content[:8] async for m in Message.objects.filter(role="user").order_by("created_at")]
    assert stored == ["turn 04 ", "turn 06 ", QUESTION[0]["content"][:8]]
    assert (await api.get(f"/api/runs/{run.id}")).json()["signals"]["history_dropped"]["turns"] == 3


async def test_a_run_reads_the_20_most_recent_turns_as_a_page_question_does(sdk, fake_openai):
    script_answer(fake_openai)

    await sdk.chat.completions.create(model="finance-research", messages=turns(25, 100))

    inputs = model_inputs(fake_openai)
    assert [n for n in range(25) if f"turn {n:02d} " in inputs] == list(range(5, 25))
    run = await ResearchRun.objects.aget()
    assert run.signals["history_dropped"] == {"turns": 5, "characters": 500}


async def test_a_history_within_the_bounds_is_read_whole_and_no_drop_is_recorded(sdk, fake_openai):
    script_answer(fake_openai)

    await sdk.chat.completions.create(model="finance-research", messages=turns(4, 8_000))

    inputs = model_inputs(fake_openai)
    assert all(f"turn {n:02d} " in inputs for n in range(4))
    assert "history_dropped" not in (await ResearchRun.objects.aget()).signals
