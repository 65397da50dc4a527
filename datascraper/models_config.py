"""Research configuration: one typed object, read once from the environment.

Nothing here imports Django: the research code runs from a test, a CLI or the web app alike.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, ValidationInfo, field_validator, model_validator

from datascraper.model_ref import ModelRef, ProviderName, parse_model

# The settings that choose a model, by field: each takes `provider:model` (`datascraper.model_ref`).
MODEL_SETTINGS: dict[str, str] = {
    "planner_model": "RESEARCH_PLANNER_MODEL",
    "research_model": "RESEARCH_MODEL",
    "eval_judge_model": "EVAL_JUDGE_MODEL",
}

# What each model provider cannot answer without: the field and the variable that sets it.
PROVIDER_REQUIREMENT: dict[ProviderName, tuple[str, str]] = {
    "openai": ("openai_api_key", "OPENAI_API_KEY"),
    "anthropic": ("anthropic_api_key", "ANTHROPIC_API_KEY"),
    "google": ("gemini_api_key", "GEMINI_API_KEY"),
    "openai-compatible": ("openai_compatible_base_url", "OPENAI_COMPATIBLE_BASE_URL"),
}

# Every variable a model provider's calls read, as the user writes them: its key and its base URL. A fix names
# the key of a rejected key and the base URL of an unreachable provider; an evaluation's judge keeps both.
PROVIDER_SETTINGS: dict[ProviderName, tuple[str, str]] = {
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    "google": ("GEMINI_API_KEY", "GEMINI_BASE_URL"),
    "openai-compatible": ("OPENAI_COMPATIBLE_API_KEY", "OPENAI_COMPATIBLE_BASE_URL"),
}

# `hosted`: the research model's own search tool; the others are search APIs (`datascraper.search`).
SearchProviderName = Literal["hosted", "searxng", "tavily", "brave", "exa"]
# What each search API cannot search without: the field and the variable that sets it.
SEARCH_REQUIREMENT: dict[SearchProviderName, tuple[str, str]] = {
    "searxng": ("searxng_url", "SEARXNG_URL"),
    "tavily": ("tavily_api_key", "TAVILY_API_KEY"),
    "brave": ("brave_api_key", "BRAVE_API_KEY"),
    "exa": ("exa_api_key", "EXA_API_KEY"),
}


class ConfidenceWeights(BaseModel):
    """How much each component counts in the evidence confidence; they sum to 1, so the score is 0-1."""

    model_config = {"frozen": True, "extra": "forbid"}

    coverage: float = Field(default=0.25, ge=0, le=1)
    credibility: float = Field(default=0.25, ge=0, le=1)
    diversity: float = Field(default=0.15, ge=0, le=1)
    evidence: float = Field(default=0.20, ge=0, le=1)
    consistency: float = Field(default=0.15, ge=0, le=1)

    @model_validator(mode="after")
    def _sum_to_one(self) -> ConfidenceWeights:
        total = self.coverage + self.credibility + self.diversity + self.evidence + self.consistency
        if abs(total - 1) > 1e-6:
            raise ValueError(f"the confidence weights must sum to 1, not {total:g}")
        return self

    @classmethod
    def parse(cls, text: str) -> ConfidenceWeights:
        """`coverage=0.3,credibility=0.2,...`: the components named; the others keep their defaults."""
        pairs = (item.split("=", 1) for item in text.split(",") if item.strip())
        try:
            return cls(**{name.strip(): float(value) for name, value in pairs})
        except ValueError as exc:  # a missing "=" or a value that is not a number
            raise ValueError(f"unreadable confidence weights {text!r}: {exc}") from exc


class ResearchConfig(BaseModel):
    """Every knob of the research router, with the contract's defaults."""

    model_config = {"frozen": True}

    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    # The other model providers (`datascraper.providers`): each key and base URL as its SDK takes them
    # (CONTRACT: the Anthropic and Gemini hosts alone; a compatible server's URL ends in /v1).
    anthropic_api_key: SecretStr | None = None
    anthropic_base_url: str | None = None
    gemini_api_key: SecretStr | None = None
    gemini_base_url: str | None = None
    openai_compatible_base_url: str | None = None
    openai_compatible_api_key: SecretStr | None = None
    # Live models with no shutdown announced (docs/providers.md says how they were chosen and are checked):
    # a small, fast reasoning model plans; a current model with the hosted web search researches and writes.
    # Each is kept as its label (`ModelRef.label`): `openai:gpt-5.4` and `gpt-5.4` are both `gpt-5.4`.
    planner_model: str = "gpt-5.4-mini"
    research_model: str = "gpt-5.4"
    # The model that grades answers in `manage.py evaluate`; None: the research model.
    eval_judge_model: str | None = None
    max_iterations: int = Field(default=3, ge=1, le=10)
    max_sub_questions: int = Field(default=5, ge=1, le=20)
    concurrency: int = Field(default=5, ge=1, le=50)
    # Per-call budgets. The SDK retries connection errors, 408, 409, 429 and 5xx.
    request_timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=5)
    sub_question_timeout_s: float = Field(default=90.0, gt=0)
    market_data_timeout_s: float = Field(default=20.0, gt=0)
    # After a web search times out, new ones fail at once for this long (`providers.breaker`), then one is tried.
    breaker_cooldown_s: float = Field(default=60.0, ge=0, allow_inf_nan=False)
    # The market data MCP server: started as the process starts serving (else on the first call), and
    # probed every interval; one that does not answer a probe within the timeout is killed and restarted.
    market_data_warm_start: bool = True
    # How long a starting process waits for that server before it serves anyway (the first call then waits).
    market_data_warm_timeout_s: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    market_data_health_interval_s: float = Field(default=15.0, gt=0, allow_inf_nan=False)
    market_data_health_timeout_s: float = Field(default=5.0, gt=0, allow_inf_nan=False)
    # The gap detector's "good enough" score (0-10).
    completeness_threshold: float = Field(default=8.0, ge=0, le=10)
    # Research stops when a round raises the gap detector's score by less than this.
    min_score_improvement: float = Field(default=0.5, ge=0, le=10)
    # Run budgets. The whole run, answer included (see `research_engine.state.Deadline` for the share
    # kept for the answer); each planner call (analyzer, gap detector), retries included; and the tokens
    # (input + output, every call) after which research stops and the answer is written. None: no budget.
    run_timeout_s: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    planner_timeout_s: float = Field(default=20.0, gt=0, allow_inf_nan=False)
    max_tokens_per_run: int | None = Field(default=None, ge=1)
    # Evidence confidence (0-1) below which research goes on while rounds remain, and the answer carries
    # a low-confidence note; and the weights of its components (RESEARCH_CONFIDENCE_WEIGHTS).
    confidence_threshold: float = Field(default=0.75, ge=0, le=1)
    confidence_weights: ConfidenceWeights = Field(default_factory=ConfidenceWeights)
    # With the gap detector's score, research stops when a round raises the confidence by less than this.
    min_confidence_gain: float = Field(default=0.05, ge=0, le=1)
    # Mode auto: start the single web search while the analyzer decides; kept when it decides "no
    # decomposition", cancelled otherwise (research_engine.bypass.SpeculativeSearch).
    speculative_search: bool = True
    # Citation verification (`datascraper.citations`), after the answer's last delta: on or off; its whole
    # time (what is not checked by then is `unreachable`); per cited page, the connect and read timeout and
    # the bound on all its hops, the bytes read (the rest is not read), and pages fetched at once. Pages on
    # loopback, private, link-local, reserved or multicast addresses are refused unless allowed (tests).
    citation_verify: bool = True
    citation_verify_timeout_s: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    citation_fetch_timeout_s: float = Field(default=5.0, gt=0, allow_inf_nan=False)
    citation_page_max_bytes: int = Field(default=1_048_576, ge=1_024)
    citation_fetch_concurrency: int = Field(default=5, ge=1, le=50)
    citation_fetch_allow_private: bool = False
    # Where a web sub-question searches (`datascraper.search`): the research model's hosted tool, or a search
    # API whose pages the citation fetcher reads; SEARXNG_URL is the instance's root.
    search_provider: SearchProviderName = "hosted"
    searxng_url: str | None = None
    tavily_api_key: SecretStr | None = None
    tavily_base_url: str | None = None
    brave_api_key: SecretStr | None = None
    brave_base_url: str | None = None
    exa_api_key: SecretStr | None = None
    exa_base_url: str | None = None

    @field_validator(*MODEL_SETTINGS, mode="after")
    @classmethod
    def _model_label(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        assert info.field_name is not None
        return parse_model(value, MODEL_SETTINGS[info.field_name]).label

    @field_validator("confidence_weights", mode="before")
    @classmethod
    def _weights_from_text(cls, value: object) -> object:
        return ConfidenceWeights.parse(value) if isinstance(value, str) else value

    def model_settings(self) -> list[tuple[str, ModelRef]]:
        """(setting, model) for each model the configuration names; the judge only when it is set."""
        named = [("RESEARCH_PLANNER_MODEL", self.planner_model), ("RESEARCH_MODEL", self.research_model)]
        if self.eval_judge_model is not None:
            named.append(("EVAL_JUDGE_MODEL", self.eval_judge_model))
        return [(setting, parse_model(model, setting)) for setting, model in named]

    def setting_of(self, model: str) -> str | None:
        """The setting that chose `model` (a label), so an error can say what to change."""
        if model == self.research_model:
            return "RESEARCH_MODEL"
        if model == self.planner_model:
            return "RESEARCH_PLANNER_MODEL"
        if model == self.eval_judge_model:
            return "EVAL_JUDGE_MODEL"
        return None

    def provider_configured(self, provider: ProviderName) -> bool:
        """Whether `provider`'s key (its address, for a compatible server) is set."""
        value = getattr(self, PROVIDER_REQUIREMENT[provider][0])
        return bool(value.get_secret_value() if isinstance(value, SecretStr) else value)

    def configured_providers(self) -> list[ProviderName]:
        """The providers the configured models name whose key (or address) is set, each once, in order."""
        named = dict.fromkeys(ref.provider for _, ref in self.model_settings())
        return [provider for provider in named if self.provider_configured(provider)]

    @property
    def missing_setting(self) -> str | None:
        """The first variable the planner's and the research model's providers need that is not set."""
        for _, ref in self.model_settings()[:2]:
            if not self.provider_configured(ref.provider):
                return PROVIDER_REQUIREMENT[ref.provider][1]
        return None

    @property
    def is_configured(self) -> bool:
        """Whether a question can be answered: the planner's and the research model's providers are set."""
        return self.missing_setting is None

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ResearchConfig:
        env = os.environ if environ is None else environ

        def pick(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        fields: dict[str, object] = {
            "openai_api_key": pick("OPENAI_API_KEY"),
            "openai_base_url": pick("OPENAI_BASE_URL"),
            "anthropic_api_key": pick("ANTHROPIC_API_KEY"),
            "anthropic_base_url": pick("ANTHROPIC_BASE_URL"),
            "gemini_api_key": pick("GEMINI_API_KEY"),
            "gemini_base_url": pick("GEMINI_BASE_URL"),
            "openai_compatible_base_url": pick("OPENAI_COMPATIBLE_BASE_URL"),
            "openai_compatible_api_key": pick("OPENAI_COMPATIBLE_API_KEY"),
            "planner_model": pick("RESEARCH_PLANNER_MODEL"),
            "research_model": pick("RESEARCH_MODEL"),
            "eval_judge_model": pick("EVAL_JUDGE_MODEL"),
            "max_iterations": pick("RESEARCH_MAX_ITERATIONS"),
            "max_sub_questions": pick("RESEARCH_MAX_SUB_QUESTIONS"),
            "concurrency": pick("RESEARCH_CONCURRENCY"),
            "request_timeout_s": pick("RESEARCH_REQUEST_TIMEOUT"),
            "max_retries": pick("RESEARCH_MAX_RETRIES"),
            "sub_question_timeout_s": pick("RESEARCH_SUB_QUESTION_TIMEOUT"),
            "market_data_timeout_s": pick("RESEARCH_MARKET_DATA_TIMEOUT"),
            "breaker_cooldown_s": pick("RESEARCH_BREAKER_COOLDOWN"),
            "market_data_warm_start": pick("MARKET_DATA_WARM_START"),
            "market_data_warm_timeout_s": pick("MARKET_DATA_WARM_TIMEOUT"),
            "market_data_health_interval_s": pick("MARKET_DATA_HEALTH_INTERVAL"),
            "market_data_health_timeout_s": pick("MARKET_DATA_HEALTH_TIMEOUT"),
            "completeness_threshold": pick("RESEARCH_COMPLETENESS_THRESHOLD"),
            "run_timeout_s": pick("RESEARCH_RUN_TIMEOUT"),
            "planner_timeout_s": pick("RESEARCH_PLANNER_TIMEOUT"),
            "max_tokens_per_run": pick("RESEARCH_MAX_TOKENS_PER_RUN"),
            "speculative_search": pick("RESEARCH_SPECULATIVE_SEARCH"),
            "citation_verify": pick("CITATION_VERIFY"),
            "citation_verify_timeout_s": pick("CITATION_VERIFY_TIMEOUT"),
            "citation_fetch_timeout_s": pick("CITATION_FETCH_TIMEOUT"),
            "citation_page_max_bytes": pick("CITATION_PAGE_MAX_BYTES"),
            "citation_fetch_concurrency": pick("CITATION_FETCH_CONCURRENCY"),
            "citation_fetch_allow_private": pick("CITATION_FETCH_ALLOW_PRIVATE"),
            "search_provider": pick("SEARCH_PROVIDER"),
            "searxng_url": pick("SEARXNG_URL"),
            "tavily_api_key": pick("TAVILY_API_KEY"),
            "tavily_base_url": pick("TAVILY_BASE_URL"),
            "brave_api_key": pick("BRAVE_API_KEY"),
            "brave_base_url": pick("BRAVE_BASE_URL"),
            "exa_api_key": pick("EXA_API_KEY"),
            "exa_base_url": pick("EXA_BASE_URL"),
            "confidence_threshold": pick("RESEARCH_CONFIDENCE_THRESHOLD"),
            "confidence_weights": pick("RESEARCH_CONFIDENCE_WEIGHTS"),
        }
        return cls.model_validate({k: v for k, v in fields.items() if v is not None})


@lru_cache(maxsize=1)
def get_research_config() -> ResearchConfig:
    """The process-wide configuration; tests call `get_research_config.cache_clear()` after changing env."""
    return ResearchConfig.from_env()
