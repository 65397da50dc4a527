"""`/v1/chat/completions` and `/v1/models` speak OpenAI's wire format: the official SDK is the client."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import date

import httpx2
import openai
import pytest

from chat.models import Conversation, Message, ResearchRun
from tests.datascraper.citations.test_run_verification import script_cited_answer
from tests.fakes.openai_server import (
    NO_CREDIT,
    ErrorReply,
    JsonReply,
    RecordedRequest,
    Sentence,
    TextReply,
    Usage,
    has_web_search,
    wants_structured_output,
)

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = TextReply(
    [
        Sentence("Apple's revenue rose 6%.", cites=[("https://www.reuters.com/apple-q4", "Apple results - Reuters")]),
        Sentence("Services grew fastest.", cites=[("https://www.example.com/services", "Services - Example")]),
    ],
    usage=Usage(input_tokens=100, output_tokens=40, reasoning_tokens=5),
)
EXPECTED_TEXT = "Apple's revenue rose 6%. [1] Services grew fastest. [2]"
EXPECTED_SOURCES = (
    "\n\nSources:\n"
    "[1] Apple results - Reuters — https://www.reuters.com/apple-q4\n"
    "[2] Services - Example — https://www.example.com/services"
)
QUESTION = [{"role": "user", "content": "How did Apple do last quarter?"}]


def script_answer(fake_openai, answer: TextReply = ANSWER) -> None:
    """The answer for web-searched calls; every structured (planning) call has a fixed cost too."""
    fake_openai.script(answer, when=has_web_search)
    fake_openai.script(JsonReply(usage=Usage(input_tokens=30, output_tokens=10, reasoning_tokens=8)),
                       when=wants_structured_output, times=None)


def answered(fake_openai) -> list[RecordedRequest]:
    return [request for request in fake_openai.requests if isinstance(request.reply, TextReply | JsonReply)]


def spent(fake_openai) -> dict[str, int]:
    """What the fake billed for every call it answered: the usage the completion must report."""
    usages = [request.reply.usage for request in answered(fake_openai)]
    prompt = sum(u.input_tokens for u in usages)
    completion = sum(u.output_tokens for u in usages)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def error_body(response: httpx2.Response) -> dict:
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["message"]
    return body["error"]


# --- models -------------------------------------------------------------------------------------------


async def test_models_lists_finance_research(sdk):
    models = await sdk.models.list()

    assert [model.id for model in models.data] == ["finance-research"]
    assert (await sdk.models.retrieve("finance-research")).owned_by


async def test_retrieving_an_unknown_model_is_a_404(sdk):
    with pytest.raises(openai.NotFoundError) as raised:
        await sdk.models.retrieve("gpt-4o")

    assert raised.value.code == "model_not_found"


# --- stream: false ------------------------------------------------------------------------------------


async def test_completion_is_the_cited_answer_followed_by_its_numbered_sources(sdk, fake_openai):
    script_answer(fake_openai)

    completion = await sdk.chat.completions.create(model="finance-research", messages=QUESTION)

    assert completion.object == "chat.completion"
    assert completion.model == "finance-research"
    [choice] = completion.choices
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert choice.message.content == EXPECTED_TEXT + EXPECTED_SOURCES


async def test_completion_usage_sums_every_model_call_of_the_run(sdk, fake_openai):
    script_answer(fake_openai)

    completion = await sdk.chat.completions.create(model="finance-research", messages=QUESTION)

    assert completion.usage.model_dump(include={"prompt_tokens", "completion_tokens", "total_tokens"}) == spent(
        fake_openai
    )
    reasoning = sum(r.reply.usage.reasoning_tokens for r in answered(fake_openai))
    assert completion.usage.completion_tokens_details.reasoning_tokens == reasoning
    run = await ResearchRun.objects.aget()
    assert sum(u["input_tokens"] for u in run.usage["by_model"].values()) == completion.usage.prompt_tokens


async def test_completion_is_stored_as_a_conversation_of_the_key_owner_with_its_history(sdk, api, fake_openai):
    script_answer(fake_openai)
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What did Apple report?"},
        {"role": "assistant", "content": "Revenue of $94.9B."},
        {"role": "user", "content": [{"type": "text", "text": "And how did services do?"}]},
    ]

    completion = await sdk.chat.completions.create(model="finance-research", messages=messages)

    conversation = await Conversation.objects.aget()
    stored = [(m.role, m.content) async for m in Message.objects.filter(conversation=conversation).order_by("created_at")]
    assert stored == [
        ("user", "What did Apple report?"),
        ("assistant", "Revenue of $94.9B."),
        ("user", "And how did services do?"),
        ("assistant", EXPECTED_TEXT),
    ]
    run = await ResearchRun.objects.aget()
    assert run.status == "done" and completion.id == f"chatcmpl-{run.id.hex}"
    answering_call = [r for r in fake_openai.requests if r.has_web_search][-1]
    assert "What did Apple report?" in answering_call.input_text
    assert "Revenue of $94.9B." in answering_call.input_text
    assert "You are terse." not in answering_call.input_text + answering_call.instructions
    listed = (await api.get("/api/conversations")).json()
    assert [c["id"] for c in listed] == [str(conversation.id)]


IMAGE_PART = {"type": "image_url", "image_url": {"url": "https://example.com/chart.png", "detail": "low"}}
AUDIO_PART = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
TOOL_CALL = {"id": "call_1", "type": "function", "function": {"name": "portfolio", "arguments": "{}"}}


async def test_requests_real_clients_send_are_answered_keeping_the_text_of_every_turn(sdk, fake_openai):
    """Tool results, assistant turns that only called tools, and images or audio beside the text: what
    agent frameworks and chat UIs send. The text is kept; what a research run cannot read is dropped."""
    script_answer(fake_openai)
    messages = [
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "What do I hold?"}, IMAGE_PART]},
        {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "AAPL 100 shares"},
        {"role": "function", "name": "quote", "content": "AAPL 190.00"},
        {"role": "assistant", "content": [{"type": "text", "text": "You hold 100 AAPL."}], "refusal": None},
        {"role": "user", "content": [AUDIO_PART, {"type": "text", "text": "How did that stock do last quarter?"}], "name": "bob"},
    ]

    completion = await sdk.chat.completions.create(model="finance-research", messages=messages)

    assert completion.choices[0].message.content == EXPECTED_TEXT + EXPECTED_SOURCES
    stored = [(m.role, m.content) async for m in Message.objects.order_by("created_at")]
    assert stored == [
        ("user", "What do I hold?"),
        ("assistant", "Result of the client's tool call_1: AAPL 100 shares"),
        ("assistant", "Result of the client's tool quote: AAPL 190.00"),
        ("assistant", "You hold 100 AAPL."),
        ("user", "How did that stock do last quarter?"),
        ("assistant", EXPECTED_TEXT),
    ]
    answering_call = [r for r in fake_openai.requests if r.has_web_search][-1]
    assert "AAPL 100 shares" in answering_call.input_text
    assert "Be brief." not in answering_call.input_text + answering_call.instructions


async def test_mode_extension_field_reaches_the_run(sdk, fake_openai):
    script_answer(fake_openai)

    await sdk.chat.completions.create(model="finance-research", messages=QUESTION, extra_body={"mode": "quick"})

    assert (await ResearchRun.objects.aget()).requested_mode == "quick"


# --- stream: true -------------------------------------------------------------------------------------


async def test_stream_sends_role_then_answer_then_sources_then_stop_then_usage(sdk, fake_openai):
    script_answer(fake_openai)

    stream = await sdk.chat.completions.create(
        model="finance-research", messages=QUESTION, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]

    assert all(chunk.object == "chat.completion.chunk" and chunk.model == "finance-research" for chunk in chunks)
    assert len({chunk.id for chunk in chunks}) == 1
    first, *middle, stop, usage = chunks
    assert first.choices[0].delta.role == "assistant"
    contents = [chunk.choices[0].delta.content for chunk in middle]
    assert len(contents) >= 2, "the answer arrives in pieces, as it is written"
    assert "".join(contents) == EXPECTED_TEXT + EXPECTED_SOURCES
    assert contents[-1] == EXPECTED_SOURCES
    assert all(chunk.choices[0].finish_reason is None for chunk in [first, *middle])
    assert stop.choices[0].finish_reason == "stop"
    assert usage.choices == []
    assert usage.usage.model_dump(include={"prompt_tokens", "completion_tokens", "total_tokens"}) == spent(fake_openai)


async def test_stream_without_include_usage_has_no_usage_chunk(sdk, fake_openai):
    script_answer(fake_openai)

    stream = await sdk.chat.completions.create(model="finance-research", messages=QUESTION, stream=True)
    chunks = [chunk async for chunk in stream]

    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(chunk.usage is None for chunk in chunks)


async def test_stream_wire_format_is_data_frames_ending_with_done(api, fake_openai):
    script_answer(fake_openai)

    async with api.stream(
        "POST", "/v1/chat/completions", json={"model": "finance-research", "messages": QUESTION, "stream": True}
    ) as response:
        body = (await response.aread()).decode()

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    frames = [frame for frame in body.split("\n\n") if frame and not frame.startswith(":")]
    assert all(frame.startswith("data: ") for frame in frames)
    assert frames[-1] == "data: [DONE]"
    payloads = [json.loads(frame.removeprefix("data: ")) for frame in frames[:-1]]
    assert payloads[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert payloads[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop", "logprobs": None}


async def test_failure_mid_stream_is_an_error_frame_the_sdk_raises(sdk, fake_openai):
    fake_openai.script(TextReply(ANSWER.sentences, interrupt="error", after_deltas=2), when=has_web_search, times=None)

    stream = await sdk.chat.completions.create(model="finance-research", messages=QUESTION, stream=True)
    received = ""
    with pytest.raises(openai.APIError) as raised:
        async for chunk in stream:
            received += chunk.choices[0].delta.content or ""

    run = await ResearchRun.objects.aget()
    assert run.status == "error"
    assert raised.value.code == run.error["code"]
    assert raised.value.message == run.error["message"]
    assert received and EXPECTED_TEXT.startswith(received), "the partial answer streamed before the error"


# --- failures before an answer ------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_unconfigured_provider_is_a_503_that_the_sdk_does_not_retry(sdk, no_provider, stream):
    with pytest.raises(openai.InternalServerError) as raised:
        await sdk.chat.completions.create(model="finance-research", messages=QUESTION, stream=stream)

    assert raised.value.status_code == 503
    assert raised.value.code == "provider_not_configured"
    assert await ResearchRun.objects.acount() == 1, "a retry would have started a second run"


async def test_a_retired_research_model_is_a_503_naming_the_model_and_its_setting(sdk, fake_openai, research_env):
    research_env(RESEARCH_MODEL="gpt-5.2-chat-latest", RESEARCH_SPECULATIVE_SEARCH="0")
    fake_openai.today = date(2026, 11, 26)

    with pytest.raises(openai.InternalServerError) as raised:
        await sdk.chat.completions.create(model="finance-research", messages=QUESTION)

    assert raised.value.status_code == 503 and raised.value.code == "model_unavailable"
    assert "'gpt-5.2-chat-latest'" in raised.value.message and "RESEARCH_MODEL" in raised.value.message


async def test_an_account_without_credit_is_a_503_saying_so_though_the_provider_streamed_a_200(sdk, fake_openai):
    fake_openai.set_default(NO_CREDIT)  # the web search's stream: HTTP 200, then `error` insufficient_quota

    with pytest.raises(openai.InternalServerError) as raised:
        await sdk.chat.completions.create(model="finance-research", messages=QUESTION, extra_body={"mode": "quick"})

    assert raised.value.status_code == 503 and raised.value.code == "provider_quota_exceeded"
    assert "billing" in raised.value.message
    assert [request.status for request in fake_openai.requests] == [200]


async def test_an_account_without_credit_ends_a_streamed_completion_with_its_code(sdk, fake_openai):
    fake_openai.set_default(NO_CREDIT)

    stream = await sdk.chat.completions.create(
        model="finance-research", messages=QUESTION, stream=True, extra_body={"mode": "quick"}
    )
    with pytest.raises(openai.APIError) as raised:
        async for _ in stream:
            pass

    assert raised.value.code == "provider_quota_exceeded"


async def test_upstream_failure_is_a_502_without_the_providers_message(sdk, fake_openai):
    fake_openai.script(ErrorReply(500, message="secret upstream detail"), times=None)

    with pytest.raises(openai.InternalServerError) as raised:
        await sdk.chat.completions.create(model="finance-research", messages=QUESTION)

    assert raised.value.status_code == 502
    assert raised.value.type == "server_error"
    assert raised.value.code == (await ResearchRun.objects.aget()).error["code"]
    assert "secret upstream detail" not in raised.value.message


# --- bad requests -------------------------------------------------------------------------------------


async def test_missing_api_key_is_a_401(live_server_url):
    async with httpx2.AsyncClient(base_url=live_server_url) as anonymous:
        response = await anonymous.post("/v1/chat/completions", json={"model": "finance-research", "messages": QUESTION})

    assert response.status_code == 401
    assert error_body(response)["code"] == "invalid_api_key"
    assert await Conversation.objects.acount() == 0


async def test_wrong_api_key_is_a_401(live_server_url, api_key):
    async with openai.AsyncOpenAI(api_key=api_key + "x", base_url=f"{live_server_url}/v1") as client:
        with pytest.raises(openai.AuthenticationError) as raised:
            await client.chat.completions.create(model="finance-research", messages=QUESTION)
        with pytest.raises(openai.AuthenticationError):
            await client.models.list()

    assert raised.value.code == "invalid_api_key"


async def test_unknown_model_is_a_404_in_openais_shape(api):
    response = await api.post("/v1/chat/completions", json={"model": "gpt-4o", "messages": QUESTION})

    assert response.status_code == 404
    error = error_body(response)
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", "model", "model_not_found")
    assert await Conversation.objects.acount() == 0


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        {"model": "finance-research"},
        {"model": "finance-research", "messages": []},
        {"model": "finance-research", "messages": "hello"},
        {"model": "finance-research", "messages": [{"role": "robot", "content": "42"}, *QUESTION]},
        {"model": "finance-research", "messages": [{"role": "user", "content": 42}]},
        {"model": "finance-research", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
        {"model": "finance-research", "messages": [{"role": "user", "content": [{"type": "video", "video": {}}]}]},
        {"model": "finance-research", "messages": [{"role": "assistant", "content": None}, *QUESTION]},
        {"model": "finance-research", "messages": [{"role": "tool", "content": "42"}, *QUESTION]},
        {"model": "finance-research", "messages": [{"role": "user", "content": [IMAGE_PART]}]},
        {"model": "finance-research", "messages": [*QUESTION, {"role": "assistant", "content": "Hi"}]},
        {"model": "finance-research", "messages": [{"role": "user", "content": "  \n "}]},
        {"model": "finance-research", "messages": [{"role": "user", "content": "x" * 8001}]},
    ],
    ids=[
        "not-json",
        "no-messages",
        "empty-messages",
        "messages-not-a-list",
        "unknown-role",
        "content-not-text",
        "image-part-without-its-image",
        "unknown-part-type",
        "assistant-null-content-without-tool-calls",
        "tool-result-without-tool-call-id",
        "question-without-text",
        "last-not-user",
        "empty-question",
        "question-too-long",
    ],
)
async def test_malformed_request_is_a_400_and_stores_nothing(api, body):
    if isinstance(body, bytes):
        response = await api.post("/v1/chat/completions", content=body, headers={"Content-Type": "application/json"})
    else:
        response = await api.post("/v1/chat/completions", json=body)

    assert response.status_code == 400
    assert error_body(response)["type"] == "invalid_request_error"
    assert await Conversation.objects.acount() == 0


@pytest.mark.parametrize(
    ("body", "param", "message"),
    [
        (b"{not json", None, "We could not parse the JSON body of your request."),
        (
            {"model": "finance-research", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
            "messages.0.content.0.image_url",
            "messages.0.content.0.image_url: Field required",
        ),
        (
            {"model": "finance-research", "messages": [{"role": "tool", "content": "42"}, *QUESTION]},
            "messages.0",
            "messages.0: a tool message needs 'content' and 'tool_call_id'",
        ),
        (
            {"model": "finance-research", "messages": [*QUESTION, {"role": "assistant", "content": "Hi"}]},
            "messages.1.role",
            "The last message must be a user message.",
        ),
        (
            {"model": "finance-research", "messages": [{"role": "user", "content": "x" * 8001}]},
            "messages.0.content",
            "The question must be at most 8000 characters.",
        ),
        (
            {"model": "finance-research", "messages": [{"role": "user", "content": "x" * 32_001}, *QUESTION]},
            "messages.0.content",
            "Earlier messages must be at most 32000 characters.",
        ),
    ],
    ids=["not-json", "part-missing-its-field", "tool-result-without-its-call", "last-not-user", "question-too-long",
         "earlier-turn-too-long"],
)
async def test_a_400_names_the_field_at_fault_and_what_is_wrong_with_it(api, body, param, message):
    if isinstance(body, bytes):
        response = await api.post("/v1/chat/completions", content=body, headers={"Content-Type": "application/json"})
    else:
        response = await api.post("/v1/chat/completions", json=body)

    assert response.status_code == 400
    error = error_body(response)
    assert (error["type"], error["code"], error["param"], error["message"]) == (
        "invalid_request_error", None, param, message
    )


async def test_an_oversized_body_is_a_413_in_openais_shape_and_stores_nothing(api):
    question = [{"role": "user", "content": "x" * 3_000_000}]

    response = await api.post("/v1/chat/completions", json={"model": "finance-research", "messages": question})

    assert response.status_code == 413
    error = error_body(response)
    assert (error["type"], error["code"]) == ("invalid_request_error", "request_too_large")
    assert await Conversation.objects.acount() == 0


async def test_a_question_that_cannot_be_queued_is_a_503_that_stores_nothing(api, fake_openai, settings, monkeypatch):
    def refuse(run_id):
        raise RuntimeError("the database refused the job")

    settings.RUNS_BACKEND = "queue"
    monkeypatch.setattr("chat.services.queue.defer_run", refuse)

    response = await api.post("/v1/chat/completions", json={"model": "finance-research", "messages": QUESTION})

    assert response.status_code == 503
    error = error_body(response)
    assert (error["type"], error["code"]) == ("server_error", "queue_unavailable")
    assert response.headers["x-should-retry"] == "false"
    assert not await Conversation.objects.aexists() and not await ResearchRun.objects.aexists()
    assert fake_openai.requests == []


async def test_a_client_that_times_out_cancels_its_run(api, fake_openai):
    fake_openai.script(TextReply(ANSWER.sentences, chunk_chars=2, delta_delay=0.1), when=has_web_search)
    body = {"model": "finance-research", "messages": QUESTION, "mode": "quick"}

    async with httpx2.AsyncClient(base_url=str(api.base_url), headers=api.headers) as client:
        with pytest.raises(httpx2.ReadTimeout):
            await client.post("/v1/chat/completions", json=body, timeout=1.0)

    assert (await finished_run()).status == "cancelled"
    [search] = await ended_upstream_requests(fake_openai)  # nobody retried into a second run
    assert search.client_closed


async def finished_run() -> ResearchRun:
    """The one run, once it has finished (within a few seconds)."""
    async with asyncio.timeout(5):
        while (run := await ResearchRun.objects.afirst()) is None or not run.is_finished:
            await asyncio.sleep(0.05)
    return run


async def ended_upstream_requests(fake_openai) -> list[RecordedRequest]:
    """The fake's requests once each has ended (it notices a closed connection at its next pause)."""
    async with asyncio.timeout(5):
        while any(request.ended_at is None for request in fake_openai.requests):
            await asyncio.sleep(0.05)
    return fake_openai.requests


@pytest.mark.parametrize(
    ("reply", "hang_up_after"),
    [
        (TextReply(ANSWER.sentences, first_byte_delay=30), '"role":"assistant"'),
        (TextReply(ANSWER.sentences, chunk_chars=2, delta_delay=0.1), '"content":"Ap"'),
    ],
    ids=["while-researching", "while-answering"],
)
async def test_a_streaming_client_that_hangs_up_cancels_its_run(api, fake_openai, reply, hang_up_after):
    fake_openai.script(reply, when=has_web_search)
    body = {"model": "finance-research", "messages": QUESTION, "mode": "quick", "stream": True}

    async with api.stream("POST", "/v1/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if hang_up_after in line:
                break  # leaving the block closes the connection with the stream unread

    run = await finished_run()
    assert run.status == "cancelled" and run.error["code"] == "cancelled"
    [search] = await ended_upstream_requests(fake_openai)
    assert search.client_closed, "the upstream stream should be closed early, so no more tokens are paid for"
    assert not await Message.objects.filter(role="assistant", status="complete").aexists()


async def test_a_client_that_leaves_while_its_question_is_stored_leaves_no_run_waiting(api, fake_openai, monkeypatch):
    from chat.services import completions

    store = completions.start_completion

    def slow_store(*args, **kwargs):  # runs on a database thread, which finishes after the client left
        time.sleep(1.0)
        return store(*args, **kwargs)

    monkeypatch.setattr(completions, "start_completion", slow_store)
    body = {"model": "finance-research", "messages": QUESTION, "mode": "quick"}

    with pytest.raises(httpx2.ReadTimeout):
        await api.post("/v1/chat/completions", json=body, timeout=0.3)

    run = await finished_run()
    assert run.status == "cancelled"
    assert fake_openai.requests == [], "the run was never started, so nothing was paid for"


# --- with citation verification -----------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_a_verified_run_answers_as_before_the_check_adding_nothing_to_the_text(
    sdk, fake_openai, verifying, page_server, stream
):
    script_cited_answer(fake_openai, page_server)
    question = [{"role": "user", "content": "How did Apple do last year?"}]

    answer = await sdk.chat.completions.create(
        model="finance-research", messages=question, stream=stream, extra_body={"mode": "quick"}
    )
    if stream:
        chunks = [chunk async for chunk in answer]
        content = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
        assert chunks[-1].choices[0].finish_reason == "stop"
    else:
        content = answer.choices[0].message.content

    run = await ResearchRun.objects.aget()
    stored = await Message.objects.aget(role="assistant")
    assert content.startswith(stored.content) and content.count("Sources:") == 1
    assert "supported" not in content
    assert [c["status"] for c in run.verification] == ["supported", "unsupported", "unreachable"]
