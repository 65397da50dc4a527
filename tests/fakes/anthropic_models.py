"""The fake Anthropic API's side: its models and the rules a `POST /v1/messages` must follow, as the real API's.

The request's top-level fields are those of the installed SDK's `MessageCreateParams` (plus `stream`), so a
field the API does not take is refused as it would be: a 400 `invalid_request_error`. A model is served by
its dated id or its alias; a retired one, or one never heard of, is a 404 `not_found_error`. The
structured-outputs format takes closed objects only (`additionalProperties: false`) and refuses the
keywords the API does not support (numeric and length bounds).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Literal

from anthropic.types.message_create_params import MessageCreateParamsBase

# Sent as headers by the SDK (`anthropic-user-profile-id`, `anthropic-workspace-id`), never in the body.
_HEADER_PARAMS = {"user_profile_id", "workspace_id"}
BODY_FIELDS = frozenset(MessageCreateParamsBase.__annotations__) - _HEADER_PARAMS | {"stream"}
WEB_SEARCH_TOOLS = frozenset({"web_search_20250305", "web_search_20260209", "web_search_20260318"})
_REFUSED_SCHEMA_KEYWORDS = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "maxItems"}
)
API_VERSIONS = frozenset({"2023-06-01", "2026-10-21"})


class Refused(Exception):
    """A request the API refuses: its status, error type and message."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message


@dataclass(frozen=True)
class FakeClaude:
    id: str
    alias: str
    display_name: str
    created_at: date
    max_tokens: int
    lifecycle: Literal["active", "deprecated", "retired"] = "active"
    retires_at: date | None = None
    structured_outputs: bool = True

    def info(self) -> dict[str, Any]:
        """The model as `GET /v1/models` lists it (the SDK's `ModelInfo`)."""
        return {
            "type": "model",
            "id": self.id,
            "display_name": self.display_name,
            "created_at": _moment(self.created_at),
            "lifecycle": self.lifecycle,
            "deprecated_at": _moment(self.created_at) if self.lifecycle != "active" else None,
            "retires_at": _moment(self.retires_at) if self.retires_at else None,
            "max_input_tokens": 200_000,
            "max_tokens": self.max_tokens,
        }


def _moment(day: date) -> str:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).isoformat().replace("+00:00", "Z")


# The models the installed SDK names (`anthropic.types.Model`) and the end-of-life dates it announces
# (`DEPRECATED_MODELS` in `resources/messages/messages.py`): newer models have no dated id, older ones
# answer to an alias; the release days are the fake's.
CATALOGUE: tuple[FakeClaude, ...] = (
    FakeClaude("claude-sonnet-5-5", "claude-sonnet-5-5", "Claude Sonnet 5.5", date(2026, 10, 1), 64_000),
    FakeClaude("claude-haiku-5-5", "claude-haiku-5-5", "Claude Haiku 5.5", date(2026, 10, 1), 64_000),
    FakeClaude("claude-sonnet-4-6", "claude-sonnet-4-6", "Claude Sonnet 4.6", date(2026, 2, 17), 64_000),
    FakeClaude("claude-haiku-4-5-20251001", "claude-haiku-4-5", "Claude Haiku 4.5", date(2025, 10, 1), 64_000),
    FakeClaude(
        "claude-sonnet-4-5-20250929",
        "claude-sonnet-4-5",
        "Claude Sonnet 4.5",
        date(2025, 9, 29),
        64_000,
        lifecycle="deprecated",
        retires_at=date(2026, 11, 30),
    ),
    FakeClaude(
        "claude-3-5-haiku-20241022",
        "claude-3-5-haiku-latest",
        "Claude Haiku 3.5",
        date(2024, 10, 22),
        8_192,
        lifecycle="retired",
        retires_at=date(2026, 2, 19),
        structured_outputs=False,
    ),
)


def find_model(catalogue: Mapping[str, FakeClaude], name: object) -> FakeClaude:
    """The model a request names, by id or alias; a 404 for one retired or unknown."""
    for model in catalogue.values():
        if name in (model.id, model.alias) and model.lifecycle != "retired":
            return model
    raise Refused(404, "not_found_error", f"model: {name}")


def check_messages_request(body: Mapping[str, Any], catalogue: Mapping[str, FakeClaude]) -> FakeClaude:
    """The model a valid request asks for; raises `Refused` as the API answers an invalid one."""
    for field in body:
        if field not in BODY_FIELDS:
            raise Refused(400, "invalid_request_error", f"{field}: Extra inputs are not permitted")
    for field in ("model", "max_tokens", "messages"):
        if field not in body:
            raise Refused(400, "invalid_request_error", f"{field}: Field required")
    model = find_model(catalogue, body["model"])
    max_tokens = body["max_tokens"]
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise Refused(400, "invalid_request_error", "max_tokens: Input should be a valid integer greater than 0")
    if max_tokens > model.max_tokens:
        raise Refused(
            400,
            "invalid_request_error",
            f"max_tokens: {max_tokens} > {model.max_tokens}, which is the maximum allowed number of output tokens "
            f"for {model.id}",
        )
    _check_messages(body["messages"])
    for tool in body.get("tools") or ():
        _check_tool(tool)
    output_format = (body.get("output_config") or {}).get("format")
    if output_format is not None:
        if not model.structured_outputs:
            raise Refused(400, "invalid_request_error", f"'{model.id}' does not support output_config.format.")
        if output_format.get("type") != "json_schema" or not isinstance(output_format.get("schema"), dict):
            raise Refused(400, "invalid_request_error", "output_config.format: a json_schema format needs a schema")
        for problem in schema_problems(output_format["schema"]):
            raise Refused(400, "invalid_request_error", f"output_config.format.schema: {problem}")
    return model


def _check_messages(messages: object) -> None:
    if not isinstance(messages, list) or not messages:
        raise Refused(400, "invalid_request_error", "messages: at least one message is required")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise Refused(400, "invalid_request_error", f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if not message.get("content"):
            raise Refused(400, "invalid_request_error", f"messages.{i}: all messages must have non-empty content")
    if messages[-1]["role"] != "user":
        raise Refused(400, "invalid_request_error", "messages: the last message must be the user's")


def _check_tool(tool: object) -> None:
    kind = tool.get("type") if isinstance(tool, dict) else None
    if kind not in WEB_SEARCH_TOOLS:
        raise Refused(400, "invalid_request_error", f"tools.0.type: unknown tool type {kind!r} (fake)")
    assert isinstance(tool, dict)
    if tool.get("name") != "web_search":
        raise Refused(400, "invalid_request_error", "tools.0.name: Input should be 'web_search'")
    unknown = set(tool) - {"type", "name", "max_uses", "allowed_domains", "blocked_domains", "user_location"}
    if unknown:
        raise Refused(400, "invalid_request_error", f"tools.0.{sorted(unknown)[0]}: Extra inputs are not permitted")


def schema_problems(schema: Mapping[str, Any], path: str = "") -> Iterator[str]:
    """What the structured-outputs format refuses in `schema`."""
    for keyword in _REFUSED_SCHEMA_KEYWORDS & set(schema):
        yield f"{path or '<root>'}: '{keyword}' is not supported"
    if schema.get("type") == "object" and schema.get("additionalProperties") is not False:
        yield f"{path or '<root>'}: objects must set 'additionalProperties' to false"
    if schema.get("type") == "array" and schema.get("minItems", 0) > 1:
        yield f"{path or '<root>'}: 'minItems' above 1 is not supported"
    for name, child in (schema.get("properties") or {}).items():
        yield from schema_problems(child, f"{path}.{name}")
    for name, child in (schema.get("$defs") or {}).items():
        yield from schema_problems(child, f"$defs.{name}")
    for keyword in ("anyOf", "allOf"):
        for i, child in enumerate(schema.get(keyword) or ()):
            yield from schema_problems(child, f"{path}.{keyword}[{i}]")
    if isinstance(schema.get("items"), dict):
        yield from schema_problems(schema["items"], f"{path}[]")
