"""The `openai-compatible` provider against a fake Chat Completions server at its wire, through the real openai
SDK: structured answers (the json_schema response format, else JSON asked for in the prompt, validated, with
one repair), streamed answers and their usage, the model list, and each failure as its named error."""

from __future__ import annotations

import json

import pytest

from datascraper.errors import (
    HostedSearchUnavailable,
    ModelRefused,
    ModelsNotListed,
    ModelUnavailable,
    ProviderAuthFailed,
    ProviderNotConfigured,
    ProviderQuotaExceeded,
    StreamInterrupted,
    StructuredOutputInvalid,
    UpstreamError,
    UpstreamRateLimited,
    UpstreamTimeout,
)
from datascraper.models_config import ResearchConfig
from datascraper.plan_schemas import QueryAnalysis
from datascraper.providers.lifecycle import check_models
from datascraper.providers.registry import provider_for
from datascraper.providers.structured import parse_structured
from datascraper.providers.warm_up import warm_up_models
from datascraper.schemas import ModelUsage, UsageLedger
from datascraper.search.registry import require_available
from datascraper.web_search import WebSearchStream
from tests.fakes.chat_completions_fixtures import LOCAL_MODEL
from tests.fakes.chat_completions_server import ChatRequest, FakeChatCompletionsServer
from tests.fakes.openai_replies import ErrorReply, JsonReply, RawReply, RefusalReply, TextReply, Usage

PLAN = {"needs_decomposition": False, "sub_questions": []}
LABEL = LOCAL_MODEL


async def plan(ledger: UsageLedger | None = None, model: str = LOCAL_MODEL) -> QueryAnalysis:
    return await parse_structured(
        model, "Plan the research.", "What is Apple's revenue?", QueryAnalysis, ledger or UsageLedger()
    )


async def answer(ledger: UsageLedger | None = None, *, web_search: bool = False) -> WebSearchStream:
    stream = WebSearchStream("Write the answer.", model=LOCAL_MODEL, ledger=ledger, web_search=web_search)
    async for _ in stream:
        pass
    return stream


def chat_requests(fake: FakeChatCompletionsServer) -> list[ChatRequest]:
    return [r for r in fake.requests if isinstance(r, ChatRequest) and r.path == "/v1/chat/completions"]


# --- structured answers -----------------------------------------------------------------------------------


async def test_a_structured_answer_asks_for_the_strict_json_schema_over_chat_completions(fake_compatible):
    fake_compatible.script(JsonReply(PLAN, usage=Usage(input_tokens=40, output_tokens=12)))
    ledger = UsageLedger()

    assert await plan(ledger) == QueryAnalysis(**PLAN)

    [request] = fake_compatible.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.model == "qwen2.5:14b"  # the model's own name, colons kept, the prefix gone
    response_format = request.body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "QueryAnalysis" and response_format["json_schema"]["strict"]
    assert response_format["json_schema"]["schema"]["additionalProperties"] is False
    assert [m["role"] for m in request.body["messages"]] == ["system", "user"]
    assert ledger.by_model == {LABEL: ModelUsage(calls=1, input_tokens=40, output_tokens=12)}


async def test_a_server_refusing_json_schema_is_asked_in_the_prompt_and_one_invalid_answer_is_repaired(
    fake_compatible,
):
    fake_compatible.json_schema = False
    fake_compatible.script(JsonReply(raw='{"needs_decomposition": "perhaps"}', usage=Usage(30, 10)))
    fake_compatible.script(JsonReply(raw="```json\n" + json.dumps(PLAN) + "\n```", usage=Usage(50, 10)))
    ledger = UsageLedger()

    assert await plan(ledger) == QueryAnalysis(**PLAN)

    refused, prompted, repair = chat_requests(fake_compatible)
    assert refused.status == 400 and "response_format" in refused.body
    assert "response_format" not in prompted.body and "response_format" not in repair.body
    assert '"needs_decomposition"' in prompted.instructions and "JSON schema" in prompted.instructions
    assert [m["role"] for m in repair.body["messages"]] == ["system", "user", "assistant", "user"]
    assert repair.body["messages"][2]["content"] == '{"needs_decomposition": "perhaps"}'
    assert "needs_decomposition: Input should be a valid boolean" in repair.body["messages"][3]["content"]
    assert ledger.by_model[LABEL] == ModelUsage(calls=2, input_tokens=80, output_tokens=20)  # the answer and its repair

    # Remembered for the process: the next structured call goes straight to the prompt.
    fake_compatible.script(JsonReply(raw=json.dumps(PLAN)))
    await plan()
    assert [r.status for r in chat_requests(fake_compatible)][3:] == [200]
    assert "response_format" not in chat_requests(fake_compatible)[3].body


async def test_a_prompted_answer_still_invalid_after_its_one_repair_is_named(fake_compatible):
    fake_compatible.json_schema = False
    fake_compatible.script(JsonReply(raw="I think Apple did well."), times=2)

    with pytest.raises(StructuredOutputInvalid) as raised:
        await plan()

    assert raised.value.code == "invalid_model_output"
    assert len(chat_requests(fake_compatible)) == 3  # refused json_schema, the prompted answer, ONE repair


async def test_a_refusal_instead_of_the_json_is_the_models_refusal(fake_compatible):
    fake_compatible.script(RefusalReply("I can't help with that."))

    with pytest.raises(ModelRefused) as raised:
        await plan()

    assert raised.value.message == "I can't help with that."


async def test_warming_up_builds_the_formats_and_sends_nothing(fake_compatible, caplog):
    await warm_up_models()

    assert fake_compatible.requests == []
    assert "not warmed up" not in caplog.text


async def test_another_bad_request_is_not_taken_for_a_refused_json_schema(fake_compatible):
    fake_compatible.script(ErrorReply(400, message="Invalid value for 'messages'.", code=None))

    with pytest.raises(UpstreamError):
        await plan()

    assert len(chat_requests(fake_compatible)) == 1


# --- streamed answers -------------------------------------------------------------------------------------


async def test_a_streamed_answer_is_its_text_with_the_usage_of_the_last_chunk(fake_compatible):
    fake_compatible.script(
        TextReply(["Revenue was $391.04 billion [1]."], usage=Usage(90, 20, reasoning_tokens=5, cached_tokens=64))
    )
    ledger = UsageLedger()

    stream = await answer(ledger)

    result = stream.result
    assert (result.text, result.sources, result.complete) == ("Revenue was $391.04 billion [1].", [], True)
    expected = ModelUsage(calls=1, input_tokens=90, output_tokens=20, reasoning_tokens=5, cached_tokens=64)
    assert result.usage == expected and ledger.by_model == {LABEL: expected}
    [request] = fake_compatible.requests
    assert request.body["stream"] is True and request.body["stream_options"] == {"include_usage": True}
    assert request.input_text == "Write the answer."


async def test_a_server_refusing_stream_options_is_asked_without_them_from_then_on(fake_compatible):
    fake_compatible.stream_options = False
    fake_compatible.script(TextReply(["First."]))
    fake_compatible.script(TextReply(["Second."]))

    first = await answer()
    second = await answer()

    assert (first.result.text, second.result.text) == ("First.", "Second.")
    assert first.result.usage == ModelUsage(calls=1)  # the server gives no usage without being asked
    assert [("stream_options" in r.body, r.status) for r in fake_compatible.requests] == [
        (True, 400),
        (False, 200),
        (False, 200),
    ]


@pytest.mark.parametrize(
    ("reply", "error", "shown"),
    [
        (
            TextReply(["Revenue was high and rising."], interrupt="incomplete"),
            StreamInterrupted,
            "Revenue was high and rising.",
        ),
        (
            TextReply(["Revenue was high and rising."], interrupt="drop", after_deltas=2),
            StreamInterrupted,
            "Revenue was ",
        ),
        (
            TextReply(["Revenue was high."], interrupt="error", after_deltas=1, error_code="402"),
            ProviderQuotaExceeded,
            "Revenu",
        ),
    ],
    ids=["finish-length", "connection-dropped", "credit-error-in-stream"],
)
async def test_a_stream_that_fails_part_way_shows_what_came_then_names_the_failure(
    fake_compatible, reply, error, shown
):
    fake_compatible.script(reply)
    stream = WebSearchStream("Write the answer.", model=LOCAL_MODEL, web_search=False)
    texts: list[str] = []

    with pytest.raises(error):
        async for delta in stream:
            texts.append(delta.text)

    assert "".join(texts) == shown and stream.result.complete is False


async def test_a_hosted_web_search_is_refused_before_anything_is_sent(fake_compatible):
    with pytest.raises(HostedSearchUnavailable) as raised:
        await answer(web_search=True)

    assert raised.value.code == "provider_not_configured" and "SEARCH_PROVIDER" in raised.value.message
    assert fake_compatible.requests == []


# --- failures ---------------------------------------------------------------------------------------------


async def test_a_model_the_server_does_not_serve_names_the_setting_to_change(fake_compatible, research_env):
    research_env(RESEARCH_PLANNER_MODEL="openai-compatible:qwen9:70b")

    with pytest.raises(ModelUnavailable) as raised:
        await plan(model="openai-compatible:qwen9:70b")

    assert raised.value.code == "model_unavailable"
    assert "'openai-compatible:qwen9:70b'" in raised.value.message and "RESEARCH_PLANNER_MODEL" in raised.value.message
    assert len(fake_compatible.requests) == 1  # not retried


async def test_a_base_url_without_v1_is_named_not_taken_for_an_unknown_model(fake_compatible, research_env):
    research_env(OPENAI_COMPATIBLE_BASE_URL=fake_compatible.base_url.removesuffix("/v1"))

    with pytest.raises(UpstreamError) as raised:
        await plan()

    assert not isinstance(raised.value, ModelUnavailable) and "ends in /v1" in raised.value.message


async def test_a_server_that_requires_a_key_refuses_a_missing_or_wrong_one_and_takes_the_right_one(
    fake_compatible, research_env
):
    fake_compatible.api_key = "placeholder-key-compatible"

    with pytest.raises(ProviderAuthFailed) as raised:
        await plan()
    assert raised.value.code == "provider_auth_failed" and "OPENAI_COMPATIBLE_API_KEY" in raised.value.message
    assert len(fake_compatible.requests) == 1  # a 401 is not retried

    research_env(OPENAI_COMPATIBLE_API_KEY="placeholder-key-compatible")
    fake_compatible.script(JsonReply(PLAN))
    assert await plan() == QueryAnalysis(**PLAN)


async def test_an_account_without_credit_is_named_at_once(fake_compatible):
    # OpenRouter's shape: the status as the code.
    body = json.dumps({"error": {"message": "Insufficient credits.", "code": 402}}).encode()
    fake_compatible.script(RawReply(402, body, "application/json"))

    with pytest.raises(ProviderQuotaExceeded) as raised:
        await plan()

    assert "OPENAI_COMPATIBLE_API_KEY" in raised.value.message and len(fake_compatible.requests) == 1


async def test_a_rate_limit_is_retried_then_named(fake_compatible, research_env):
    research_env(RESEARCH_MAX_RETRIES="2")
    fake_compatible.script(ErrorReply(429), times=2)
    fake_compatible.script(JsonReply(PLAN))
    assert await plan() == QueryAnalysis(**PLAN)

    fake_compatible.script(ErrorReply(429), times=3)
    with pytest.raises(UpstreamRateLimited):
        await plan()
    assert [r.status for r in fake_compatible.requests] == [429, 429, 200, 429, 429, 429]


async def test_a_server_that_does_not_answer_in_time_is_named(fake_compatible, research_env):
    research_env(RESEARCH_REQUEST_TIMEOUT="0.2", RESEARCH_MAX_RETRIES="0")
    fake_compatible.script(JsonReply(PLAN, first_byte_delay=5))

    with pytest.raises(UpstreamTimeout) as raised:
        await plan()

    assert raised.value.code == "upstream_timeout"


async def test_a_server_that_is_down_is_named_with_its_setting(fake_compatible, research_env):
    research_env(RESEARCH_MAX_RETRIES="0")
    fake_compatible.stop()

    with pytest.raises(UpstreamError) as raised:
        await plan()

    assert raised.value.code == "upstream_error" and "OPENAI_COMPATIBLE_BASE_URL" in raised.value.message


@pytest.mark.parametrize("url", [None, "localhost:11434/v1"])
def test_a_missing_or_malformed_base_url_is_named_before_anything_is_sent(research_env, monkeypatch, url):
    monkeypatch.delenv("OPENAI_COMPATIBLE_BASE_URL", raising=False)
    research_env(**({"OPENAI_COMPATIBLE_BASE_URL": url} if url else {}))
    provider, _ = provider_for(LOCAL_MODEL)

    with pytest.raises(ProviderNotConfigured) as raised:
        provider.ensure_configured()

    assert "OPENAI_COMPATIBLE_BASE_URL" in raised.value.message


# --- the model list, and the start-up check -----------------------------------------------------------------


async def test_the_model_list_is_what_the_server_serves_and_judges_the_configured_models(fake_compatible, research_env):
    provider, _ = provider_for(LOCAL_MODEL)
    assert await provider.list_models(timeout_s=5) == {"llama3.1:8b": None, "qwen2.5:14b": None}

    research_env(RESEARCH_MODEL="openai-compatible:qwen9:70b")
    report = await check_models(timeout_s=5)
    assert [(c.setting, c.level) for c in report.checks] == [
        ("RESEARCH_PLANNER_MODEL", "ok"),
        ("RESEARCH_MODEL", "error"),
    ]


async def test_a_server_without_a_model_list_says_so(fake_compatible):
    fake_compatible.lists_models = False
    provider, _ = provider_for(LOCAL_MODEL)

    with pytest.raises(ModelsNotListed) as raised:
        await provider.list_models(timeout_s=5)
    report = await check_models(timeout_s=5)

    assert "GET /v1/models" in raised.value.message
    # a warning, its models unchecked: nothing else is wrong with the server
    [listing] = [p for p in report.providers if p.provider == "openai-compatible"]
    assert (listing.level, listing.message) == ("warning", raised.value.message)
    assert report.error_code is None and report.level == "warning"


def test_hosted_search_with_a_compatible_research_model_is_refused_naming_both_settings():
    with pytest.raises(HostedSearchUnavailable) as raised:
        require_available(ResearchConfig(research_model=LOCAL_MODEL))

    assert raised.value.message == (
        "SEARCH_PROVIDER=hosted needs a research model with its provider's own web search, and RESEARCH_MODEL "
        "names the provider 'openai-compatible', which has none: set SEARCH_PROVIDER to a search API (searxng)."
    )
    require_available(ResearchConfig(research_model=LOCAL_MODEL, search_provider="searxng"))
    require_available(ResearchConfig(planner_model=LOCAL_MODEL))  # a compatible planner needs no search
