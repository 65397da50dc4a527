"""Research configuration: one typed object, read once from the environment.

Nothing here imports Django: the research code runs from a test, a CLI or the web app alike.
"""

from __future__ import annotations

import os
from functools import lru_cache

from pydantic import BaseModel, Field, SecretStr


class ResearchConfig(BaseModel):
    """Every knob of the research router, with the contract's defaults."""

    model_config = {"frozen": True}

    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    planner_model: str = "gpt-5-mini"
    research_model: str = "gpt-5.2-chat-latest"
    max_iterations: int = Field(default=3, ge=1, le=10)
    max_sub_questions: int = Field(default=5, ge=1, le=20)
    concurrency: int = Field(default=5, ge=1, le=50)
    # Per-call budgets. The SDK retries connection errors, 408, 409, 429 and 5xx.
    request_timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=5)
    sub_question_timeout_s: float = Field(default=90.0, gt=0)
    market_data_timeout_s: float = Field(default=20.0, gt=0)
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
    # Mode auto: start the single web search while the analyzer decides; kept when it decides "no
    # decomposition", cancelled otherwise (research_engine.bypass.SpeculativeSearch).
    speculative_search: bool = True

    @property
    def is_configured(self) -> bool:
        return self.openai_api_key is not None and bool(self.openai_api_key.get_secret_value())

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ResearchConfig:
        env = os.environ if environ is None else environ

        def pick(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        fields: dict[str, object] = {
            "openai_api_key": pick("OPENAI_API_KEY"),
            "openai_base_url": pick("OPENAI_BASE_URL"),
            "planner_model": pick("RESEARCH_PLANNER_MODEL"),
            "research_model": pick("RESEARCH_MODEL"),
            "max_iterations": pick("RESEARCH_MAX_ITERATIONS"),
            "max_sub_questions": pick("RESEARCH_MAX_SUB_QUESTIONS"),
            "concurrency": pick("RESEARCH_CONCURRENCY"),
            "request_timeout_s": pick("RESEARCH_REQUEST_TIMEOUT"),
            "max_retries": pick("RESEARCH_MAX_RETRIES"),
            "sub_question_timeout_s": pick("RESEARCH_SUB_QUESTION_TIMEOUT"),
            "market_data_timeout_s": pick("RESEARCH_MARKET_DATA_TIMEOUT"),
            "market_data_warm_start": pick("MARKET_DATA_WARM_START"),
            "market_data_warm_timeout_s": pick("MARKET_DATA_WARM_TIMEOUT"),
            "market_data_health_interval_s": pick("MARKET_DATA_HEALTH_INTERVAL"),
            "market_data_health_timeout_s": pick("MARKET_DATA_HEALTH_TIMEOUT"),
            "completeness_threshold": pick("RESEARCH_COMPLETENESS_THRESHOLD"),
            "run_timeout_s": pick("RESEARCH_RUN_TIMEOUT"),
            "planner_timeout_s": pick("RESEARCH_PLANNER_TIMEOUT"),
            "max_tokens_per_run": pick("RESEARCH_MAX_TOKENS_PER_RUN"),
            "speculative_search": pick("RESEARCH_SPECULATIVE_SEARCH"),
        }
        return cls(**{k: v for k, v in fields.items() if v is not None})


@lru_cache(maxsize=1)
def get_research_config() -> ResearchConfig:
    """The process-wide configuration; tests call `get_research_config.cache_clear()` after changing env."""
    return ResearchConfig.from_env()


def is_reasoning_model(model: str) -> bool:
    """Reasoning models (o-series, gpt-5 family except `*-chat-*`) take `reasoning` and reject `temperature`."""
    name = model.lower().rsplit("/", 1)[-1]
    if "-chat" in name:
        return False
    return name.startswith(("o1", "o3", "o4", "gpt-5"))
