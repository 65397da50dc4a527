"""What each OpenAI model accepts: one table, so no request option is guessed from a model's name at a call site.

The API answers 400 to an option a model does not take (`temperature` on a reasoning model, `reasoning` on a
`*-chat-latest` model, an effort value the model does not know, web search with `minimal` effort), and
404 to a model it no longer serves. Each family's row was checked against the provider's documentation for
the models this product defaults to; a model the table does not know gets the conservative row: neither
`reasoning` nor `temperature` is sent, so the provider's own defaults apply and no option can be refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from datascraper.providers.base import ReasoningEffort

EFFORT_ORDER: tuple[ReasoningEffort, ...] = ("none", "minimal", "low", "medium", "high", "xhigh")


@dataclass(frozen=True)
class ModelCapabilities:
    """The request options one model family accepts.

    `efforts` is empty for a model that takes no `reasoning` option. `web_search` says whether the hosted
    `web_search` tool is available; `temperature` whether the model accepts a sampling temperature.
    """

    family: str
    efforts: tuple[ReasoningEffort, ...] = ()
    web_search: bool = True
    temperature: bool = False

    @property
    def is_reasoning(self) -> bool:
        return bool(self.efforts)


_CURRENT: tuple[ReasoningEffort, ...] = ("none", "low", "medium", "high", "xhigh")
# First match wins: a model id is matched without its "provider/" prefix and any date suffix.
_TABLE: tuple[tuple[re.Pattern[str], ModelCapabilities], ...] = tuple(
    (re.compile(pattern), capabilities)
    for pattern, capabilities in (
        (r"gpt-[\d.]+-chat(-latest)?$", ModelCapabilities("gpt chat")),
        (r"gpt-5\.4-(mini|nano)$", ModelCapabilities("gpt-5.4 small", efforts=("low", "medium", "high", "xhigh"))),
        (r"gpt-(5\.[4-9]|6)(\.\d+)?(-[a-z]+)?$", ModelCapabilities("gpt-5.4 and later", efforts=_CURRENT)),
        (r"gpt-5\.[23](-[a-z]+)?$", ModelCapabilities("gpt-5.2", efforts=("low", "medium", "high", "xhigh"))),
        (r"gpt-5\.1(-[a-z]+)?$", ModelCapabilities("gpt-5.1", efforts=("none", "low", "medium", "high"))),
        (r"gpt-5(-mini|-nano)?$", ModelCapabilities("gpt-5", efforts=("minimal", "low", "medium", "high"))),
        (r"o(3|4-mini)(-[a-z]+)?$", ModelCapabilities("o-series", efforts=("low", "medium", "high"))),
        (r"o1(-[a-z]+)?$", ModelCapabilities("o1", efforts=("low", "medium", "high"), web_search=False)),
        (r"gpt-4\.1-nano$", ModelCapabilities("gpt-4.1 nano", web_search=False, temperature=True)),
        (r"gpt-4(\.1|o)(-mini)?$", ModelCapabilities("gpt-4.1 / gpt-4o", temperature=True)),
    )
)
UNKNOWN = ModelCapabilities("unknown")
_DATE_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def capabilities_for(model: str) -> ModelCapabilities:
    name = _DATE_SUFFIX.sub("", model.strip().lower().rsplit("/", 1)[-1])
    for pattern, capabilities in _TABLE:
        if pattern.fullmatch(name):
            return capabilities
    return UNKNOWN


def supported_effort(capabilities: ModelCapabilities, wanted: ReasoningEffort, *, web_search: bool) -> ReasoningEffort:
    """The effort to send: `wanted` if the model takes it, else the nearest one above it, else the highest.

    Web search refuses `minimal`, and we never ask it to search without reasoning (`none`).
    """
    allowed = [e for e in capabilities.efforts if not (web_search and e in ("none", "minimal"))] or list(
        capabilities.efforts
    )
    rank = EFFORT_ORDER.index(wanted)
    above = [e for e in allowed if EFFORT_ORDER.index(e) >= rank]
    return above[0] if above else allowed[-1]


def request_options(
    model: str,
    *,
    effort: ReasoningEffort = "low",
    web_search: bool = False,
    temperature: float | None = None,
) -> dict[str, Any]:
    """The model-dependent keyword arguments of a `responses.create` call, from the table."""
    capabilities = capabilities_for(model)
    options: dict[str, Any] = {}
    if capabilities.is_reasoning:
        options["reasoning"] = {"effort": supported_effort(capabilities, effort, web_search=web_search)}
    if temperature is not None and capabilities.temperature:
        options["temperature"] = temperature
    return options
