"""Configurations to compare: each env file over this environment, the judge left as it is here, its settings
checked before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from datascraper.evaluation.configurations import ConfigurationInvalid, judge_endpoint, read_configurations

HERE = {"OPENAI_API_KEY": "test-key-here", "OPENAI_BASE_URL": "https://api.openai.com/v1", "RESEARCH_MODEL": "gpt-5.4"}


def files(tmp_path: Path, **texts: str) -> list[str]:
    options = []
    for name, text in texts.items():
        (tmp_path / f"{name}.env").write_text(text, encoding="utf-8")
        options.append(f"{name}={tmp_path / name}.env")
    return options


def test_each_configuration_has_this_environment_overlaid_by_its_file_and_this_judge(tmp_path: Path) -> None:
    options = files(
        tmp_path,
        full="RESEARCH_MAX_ITERATIONS=2\n",
        mini='export RESEARCH_MODEL="gpt-5.4-mini"\nEVAL_JUDGE_MODEL=gpt-5.4-mini\nRESEARCH_CONCURRENCY\n',
    )

    full, mini = read_configurations(options, HERE, "gpt-5.4")

    assert full.environment == {**HERE, "RESEARCH_MAX_ITERATIONS": "2", "EVAL_JUDGE_MODEL": "gpt-5.4"}
    assert full.research.max_iterations == 2 and full.research.research_model == "gpt-5.4"
    assert mini.settings == {"RESEARCH_MODEL": "gpt-5.4-mini", "EVAL_JUDGE_MODEL": "gpt-5.4-mini"}  # a bare name sets nothing
    assert mini.environment["EVAL_JUDGE_MODEL"] == "gpt-5.4" and mini.research.research_model == "gpt-5.4-mini"


def test_without_a_judge_a_file_may_set_any_setting_and_no_judge_is_added(tmp_path: Path) -> None:
    options = files(tmp_path, a="OPENAI_BASE_URL=http://127.0.0.1:11434/v1\n", b="")

    a, _ = read_configurations(options, HERE, None)

    assert a.environment["OPENAI_BASE_URL"] == "http://127.0.0.1:11434/v1" and "EVAL_JUDGE_MODEL" not in a.environment


def test_a_file_may_repeat_the_judges_settings_as_they_are_here_but_not_change_them(tmp_path: Path) -> None:
    same = files(tmp_path, a=f"OPENAI_API_KEY={HERE['OPENAI_API_KEY']}\n", b="")
    assert len(read_configurations(same, HERE, "gpt-5.4")) == 2

    other = files(tmp_path, a="", c="OPENAI_BASE_URL=http://127.0.0.1:11434/v1\n")
    with pytest.raises(ConfigurationInvalid, match=r"c\.env: it sets OPENAI_BASE_URL, which the judge \(gpt-5\.4\) reads too"):
        read_configurations(other, HERE, "gpt-5.4")


def test_the_judges_settings_are_its_providers() -> None:
    assert judge_endpoint("gpt-5.4") == ("OPENAI_API_KEY", "OPENAI_BASE_URL")
    assert judge_endpoint("ft:gpt-4.1:acme::abc123") == ("OPENAI_API_KEY", "OPENAI_BASE_URL")  # a fine-tuned id
    assert judge_endpoint("anthropic:claude-sonnet-4-5") == ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
    assert judge_endpoint("openai-compatible:llama3.3") == ("OPENAI_COMPATIBLE_API_KEY", "OPENAI_COMPATIBLE_BASE_URL")


def test_a_judge_of_another_provider_leaves_the_files_free_to_change_openais_settings(tmp_path: Path) -> None:
    options = files(tmp_path, a="OPENAI_BASE_URL=http://127.0.0.1:11434/v1\n", b="ANTHROPIC_BASE_URL=http://127.0.0.1:9\n")

    with pytest.raises(ConfigurationInvalid, match=r"b\.env: it sets ANTHROPIC_BASE_URL"):
        read_configurations(options, HERE, "anthropic:claude-sonnet-4-5")
