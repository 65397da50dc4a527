"""Model settings take `provider:model`: no prefix is OpenAI, so every configuration written before providers
existed means what it did; a prefix names the provider, and one the contract does not name is refused, never
sent anywhere."""

from __future__ import annotations

from datetime import date

import pytest
from pydantic import BaseModel, ValidationError

from datascraper.errors import ModelUnavailable
from datascraper.model_ref import ModelRef, ModelSettingInvalid, parse_model
from datascraper.models_config import ResearchConfig
from datascraper.providers.lifecycle import check_models
from datascraper.providers.registry import model_provider
from datascraper.providers.structured import parse_structured
from datascraper.schemas import UsageLedger
from datascraper.web_search import WebSearchStream
from tests.fakes.openai_server import JsonReply


class Plan(BaseModel):
    needs_decomposition: bool


# --- reading a setting ------------------------------------------------------------------------------------


def test_a_model_without_a_prefix_is_openais_and_keeps_its_name():
    ref = parse_model("gpt-5.4")

    assert ref == ModelRef("openai", "gpt-5.4")
    assert (ref.label, str(ref)) == ("gpt-5.4", "openai:gpt-5.4")


def test_the_openai_prefix_names_the_same_model_as_no_prefix():
    assert parse_model("openai:gpt-5.4-mini") == parse_model("gpt-5.4-mini")
    assert parse_model(" openai:gpt-5.4-mini ").label == "gpt-5.4-mini"


def test_another_provider_is_named_in_the_label_and_a_models_own_colons_are_kept():
    claude = parse_model("anthropic:claude-sonnet-4-5")
    qwen = parse_model("openai-compatible:qwen2.5:14b")

    assert (claude.provider, claude.name, claude.label) == (
        "anthropic",
        "claude-sonnet-4-5",
        "anthropic:claude-sonnet-4-5",
    )
    assert (qwen.provider, qwen.name) == ("openai-compatible", "qwen2.5:14b")


def test_an_openai_fine_tuned_model_id_is_no_provider_prefix():
    ref = parse_model("ft:gpt-4.1-mini-2025-04-14:acme::abc123")

    assert ref == ModelRef("openai", "ft:gpt-4.1-mini-2025-04-14:acme::abc123")


def test_an_unknown_provider_is_refused_naming_the_setting_and_the_providers():
    with pytest.raises(ModelSettingInvalid) as raised:
        parse_model("antropic:claude-sonnet-4-5", "RESEARCH_MODEL")

    message = str(raised.value)
    assert message.startswith("RESEARCH_MODEL='antropic:claude-sonnet-4-5' names an unknown provider 'antropic'")
    assert "openai, anthropic, google, openai-compatible" in message and "\n" not in message


@pytest.mark.parametrize("value", ["", "   ", "openai:", "anthropic: "])
def test_a_setting_that_names_no_model_is_refused(value):
    with pytest.raises(ModelSettingInvalid, match="names no model"):
        parse_model(value, "RESEARCH_PLANNER_MODEL")


def test_the_configuration_keeps_each_model_by_its_label_and_knows_its_setting():
    config = ResearchConfig.from_env(
        {
            "RESEARCH_MODEL": "openai:gpt-5.4",
            "RESEARCH_PLANNER_MODEL": "gpt-5.4-mini",
            "EVAL_JUDGE_MODEL": "openai:gpt-5",
        }
    )

    assert (config.research_model, config.planner_model, config.eval_judge_model) == (
        "gpt-5.4",
        "gpt-5.4-mini",
        "gpt-5",
    )
    assert config.setting_of("gpt-5") == "EVAL_JUDGE_MODEL"
    assert [(setting, str(ref)) for setting, ref in config.model_settings()] == [
        ("RESEARCH_PLANNER_MODEL", "openai:gpt-5.4-mini"),
        ("RESEARCH_MODEL", "openai:gpt-5.4"),
        ("EVAL_JUDGE_MODEL", "openai:gpt-5"),
    ]


def test_the_configuration_refuses_an_unknown_provider_or_an_empty_model():
    with pytest.raises(ValidationError, match="names an unknown provider 'gemini'"):
        ResearchConfig.from_env({"RESEARCH_MODEL": "gemini:gemini-2.5-pro"})
    with pytest.raises(ValidationError, match="names no model"):
        ResearchConfig(planner_model="openai:")


# --- every provider the contract names is served ------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic", "google", "openai-compatible"])
def test_every_provider_of_the_contract_is_served_once_per_process(provider):
    assert model_provider(parse_model(f"{provider}:some-model")).name == provider
    assert model_provider(parse_model(f"{provider}:some-model")) is model_provider(parse_model(f"{provider}:other"))


# --- OpenAI, written with its prefix ----------------------------------------------------------------------


async def test_a_prefixed_openai_model_is_asked_by_its_own_name_and_counted_by_its_label(fake_openai):
    fake_openai.script(JsonReply({"needs_decomposition": False}))
    ledger = UsageLedger()

    await parse_structured("openai:gpt-5.4-mini", "Plan the research.", "q", Plan, ledger)
    search = WebSearchStream("q", model="openai:gpt-5.4", ledger=ledger)
    async for _ in search:
        pass

    assert [request.model for request in fake_openai.requests] == ["gpt-5.4-mini", "gpt-5.4"]
    assert list(ledger.by_model) == ["gpt-5.4-mini", "gpt-5.4"] and search.result.model == "gpt-5.4"


async def test_a_retired_model_written_with_its_prefix_is_model_unavailable_naming_it_and_its_setting(
    fake_openai, research_env
):
    research_env(RESEARCH_MODEL="openai:gpt-5.2-chat-latest")
    fake_openai.today = date(2026, 11, 26)  # after its shutdown

    with pytest.raises(ModelUnavailable) as raised:
        async for _ in WebSearchStream("q"):
            pass

    assert raised.value.message == (
        "The model 'gpt-5.2-chat-latest' is not available from the model provider (it may have been shut down): "
        "set RESEARCH_MODEL to a current model."
    )


async def test_prefixed_models_are_checked_against_the_providers_list_by_their_own_name(fake_openai, research_env):
    research_env(RESEARCH_MODEL="openai:gpt-5.4", RESEARCH_PLANNER_MODEL="openai:gpt-5-mini")

    report = await check_models(today=date(2026, 11, 26))

    assert [(c.setting, c.model, c.provider, c.level) for c in report.checks] == [
        ("RESEARCH_PLANNER_MODEL", "gpt-5-mini", "openai", "warning"),
        ("RESEARCH_MODEL", "gpt-5.4", "openai", "ok"),
    ]
