"""The fake Gemini API refuses what the real one refuses, in Google's error shape, as the real SDK reads it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google import genai
from google.genai import errors, types

from tests.fakes.gemini_server import TEST_GEMINI_KEY, FakeGemini


@pytest.fixture
def gemini() -> Iterator[FakeGemini]:
    with FakeGemini() as server:
        yield server


def client(gemini: FakeGemini, key: str = TEST_GEMINI_KEY) -> genai.Client:
    options = types.HttpOptions(base_url=gemini.base_url, api_version="v1beta")
    return genai.Client(vertexai=False, api_key=key, http_options=options)


async def refused(call) -> errors.APIError:
    with pytest.raises(errors.APIError) as raised:
        await call
    return raised.value


async def test_an_unknown_field_is_a_400_invalid_argument_naming_it(gemini):
    extra = types.HttpOptions(extra_body={"generationConfig": {"responseFormat": "json"}})
    error = await refused(
        client(gemini).aio.models.generate_content(
            model="gemini-2.5-flash", contents="q", config=types.GenerateContentConfig(http_options=extra)
        )
    )

    assert (error.code, error.status) == (400, "INVALID_ARGUMENT")
    assert 'Unknown name "generation_config.responseFormat"' in (error.message or "")


async def test_a_json_schema_without_the_json_mime_type_is_refused(gemini):
    config = types.GenerateContentConfig(response_json_schema={"type": "object"})
    error = await refused(
        client(gemini).aio.models.generate_content(model="gemini-2.5-flash", contents="q", config=config)
    )

    assert (error.code, error.status) == (400, "INVALID_ARGUMENT")


async def test_a_wrong_key_is_a_400_and_an_unknown_model_a_404(gemini):
    wrong = await refused(
        client(gemini, "placeholder-key-wrong").aio.models.generate_content(model="gemini-2.5-flash", contents="q")
    )
    unknown = await refused(client(gemini).aio.models.generate_content(model="gemini-1.0-pro", contents="q"))

    assert (wrong.code, wrong.status, wrong.message) == (
        400,
        "INVALID_ARGUMENT",
        "API key not valid. Please pass a valid API key.",
    )
    assert (unknown.code, unknown.status) == (404, "NOT_FOUND")
    assert [request.model for request in gemini.requests] == ["gemini-1.0-pro"]  # a refused key is not recorded
