"""The fake Chat Completions server is as strict as the servers it stands for, and the real openai SDK reads
what it sends: its JSON, its SSE stream (ending `data: [DONE]`, usage in a last chunk without choices) and
its errors (OpenAI's shape)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx2
import openai
import pytest

from tests.fakes.chat_completions_server import FakeChatCompletionsServer
from tests.fakes.openai_replies import TextReply, Usage

USER = [{"role": "user", "content": "Hello?"}]


@pytest.fixture
def fake() -> Iterator[FakeChatCompletionsServer]:
    with FakeChatCompletionsServer() as server:
        yield server
    assert not server.errors


def sdk(fake: FakeChatCompletionsServer, key: str = "no-key-needed") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key=key, base_url=fake.base_url, max_retries=0, timeout=10)


async def test_a_streamed_completion_is_chunks_then_usage_then_done(fake):
    fake.script(TextReply(["Hello there."], usage=Usage(12, 3)))
    async with httpx2.AsyncClient(timeout=10) as client:
        body = {"model": "qwen2.5:14b", "messages": USER, "stream": True, "stream_options": {"include_usage": True}}
        response = await client.post(f"{fake.base_url}/chat/completions", json=body)

    frames = [line.removeprefix("data: ") for line in response.text.split("\n\n") if line]
    assert response.headers["content-type"].startswith("text/event-stream")
    assert frames[-1] == "[DONE]"
    chunks = [json.loads(frame) for frame in frames[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == "Hello there."
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] == 12


async def test_the_sdk_reads_its_completion_and_its_stream(fake):
    client = sdk(fake)
    fake.script(TextReply(["One answer."]))
    completion = await client.chat.completions.create(model="qwen2.5:14b", messages=USER)
    assert completion.choices[0].message.content == "One answer." and completion.usage is not None

    fake.script(TextReply(["A streamed answer."]))
    stream = await client.chat.completions.create(model="qwen2.5:14b", messages=USER, stream=True)
    texts = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
    assert "".join(texts) == "A streamed answer."


async def test_no_responses_api_and_an_unknown_model_is_a_404_in_openais_shape(fake):
    client = sdk(fake)

    with pytest.raises(openai.NotFoundError):
        await client.responses.create(model="qwen2.5:14b", input="Hello?")
    with pytest.raises(openai.NotFoundError) as raised:
        await client.chat.completions.create(model="qwen9:70b", messages=USER)

    assert raised.value.body == {
        "message": 'model "qwen9:70b" not found, try pulling it first',
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }


@pytest.mark.parametrize(
    "extra",
    [{"temperature_x": 1}, {"stream_options": {"include_usage": True}}, {"response_format": {"type": "json_schema"}}],
    ids=["unknown-parameter", "stream-options-without-stream", "json-schema-without-schema"],
)
async def test_what_the_api_refuses_is_a_400(fake, extra):
    async with httpx2.AsyncClient(timeout=10) as client:
        response = await client.post(
            f"{fake.base_url}/chat/completions", json={"model": "qwen2.5:14b", "messages": USER, **extra}
        )

    assert response.status_code == 400 and set(response.json()["error"]) == {"message", "type", "param", "code"}


async def test_a_server_requiring_a_key_refuses_any_other(fake):
    fake.api_key = "placeholder-key-compatible"

    with pytest.raises(openai.AuthenticationError):
        await sdk(fake).models.list()
    listed = [model.id async for model in sdk(fake, "placeholder-key-compatible").models.list()]

    assert listed == ["llama3.1:8b", "qwen2.5:14b"]
