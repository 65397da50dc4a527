"""What the fake OpenAI server knows of models and requests: the provider's rules, written down apart from
the product's own table (`datascraper.providers.openai.capabilities`) so that a mistake there is refused here, as the
real API refuses it.

Facts: shutdown dates as the openai SDK's `types/shared/chat_model.py` announces them (openai 3.54) and
OpenAI's deprecations page; reasoning efforts per family from the reasoning guide (gpt-5 takes `minimal`,
gpt-5.1 and later refuse it and take `none`; gpt-5.2 and later add `xhigh`); web search refuses `minimal`.
A model past its shutdown date is gone: absent from `GET /v1/models`, a 404 `model_not_found` on
`GET /v1/models/{id}`, and a 400 `model_not_found` on `POST /v1/responses` (as recorded from the real API;
Chat Completions says 404 for the same model). A response names the model's dated snapshot, whatever alias
was asked: the snapshots below were seen in recordings where marked, the others are the fake's own dates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from openai.types.responses.response_create_params import ResponseCreateParamsBase
from typing_extensions import get_type_hints

# Every top-level parameter `POST /v1/responses` takes (the SDK's own list), `stream` included.
RESPONSES_PARAMETERS = frozenset(get_type_hints(ResponseCreateParamsBase)) | {"stream"}


@dataclass(frozen=True)
class FakeModel:
    id: str
    shutdown: date | None = None
    efforts: tuple[str, ...] = ()  # empty: not a reasoning model, `reasoning` refused
    web_search: bool = True
    temperature: bool = False
    created: int = 1_700_000_000
    snapshot_date: str = "2026-01-01"

    @property
    def snapshot(self) -> str:
        """The dated id a response names, e.g. `gpt-5.4-mini-2026-03-17` for `gpt-5.4-mini`."""
        return f"{self.id}-{self.snapshot_date}"

    def listing(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "model",
            "created": self.created,
            "owned_by": "system",
            "shutdown_date": self.shutdown.isoformat() if self.shutdown else None,
        }


_GPT5 = ("minimal", "low", "medium", "high")
_GPT51 = ("none", "low", "medium", "high")
_GPT54 = ("none", "low", "medium", "high", "xhigh")
_GPT54_SMALL = ("low", "medium", "high", "xhigh")
_O = ("low", "medium", "high")

CATALOGUE: dict[str, FakeModel] = {
    m.id: m
    for m in (
        FakeModel("gpt-5.5", efforts=_GPT54),
        FakeModel("gpt-5.4", efforts=_GPT54),
        FakeModel("gpt-5.4-mini", efforts=_GPT54_SMALL, snapshot_date="2026-03-17"),  # recorded
        FakeModel("gpt-5.4-nano", shutdown=date(2027, 4, 1), efforts=_GPT54_SMALL),
        FakeModel("gpt-5.1", shutdown=date(2027, 4, 1), efforts=_GPT51, snapshot_date="2025-11-13"),  # recorded
        FakeModel("gpt-5", shutdown=date(2026, 12, 11), efforts=_GPT5, snapshot_date="2025-08-07"),  # recorded
        FakeModel("gpt-5-mini", shutdown=date(2026, 12, 11), efforts=_GPT5, snapshot_date="2025-08-07"),  # recorded
        FakeModel("gpt-5-nano", shutdown=date(2026, 12, 11), efforts=_GPT5, snapshot_date="2025-08-07"),  # recorded
        FakeModel("o3", shutdown=date(2026, 12, 11), efforts=_O),
        FakeModel("gpt-5.3-chat-latest", shutdown=date(2026, 8, 10)),
        FakeModel("gpt-5.2-chat-latest", shutdown=date(2026, 8, 10)),
        FakeModel("gpt-4.1", shutdown=date(2027, 1, 14), temperature=True),
        FakeModel("gpt-4.1-mini", shutdown=date(2027, 1, 14), temperature=True),
        FakeModel("gpt-4o", shutdown=date(2027, 1, 14), temperature=True, snapshot_date="2024-08-06"),  # recorded
    )
}


class Refused(Exception):
    """The API's answer to a request it does not serve: status and OpenAI's error fields."""

    def __init__(self, status: int, message: str, *, code: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param

    def body(self) -> dict[str, Any]:
        kind = "invalid_request_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}


def live_model(catalogue: dict[str, FakeModel], model_id: str, today: date) -> FakeModel:
    """The model `GET /v1/models/{id}` describes: one shut down or unknown is a 404 there."""
    model = catalogue.get(model_id)
    if model is None or (model.shutdown is not None and model.shutdown <= today):
        raise Refused(
            404,
            f"The model `{model_id}` does not exist or you do not have access to it.",
            code="model_not_found",
            param="model",
        )
    return model


def served_model(catalogue: dict[str, FakeModel], model_id: str, today: date) -> FakeModel:
    """The model `POST /v1/responses` answers with: one shut down or unknown is a 400 there, streamed or
    not, with the recorded wording."""
    try:
        return live_model(catalogue, model_id, today)
    except Refused:
        raise Refused(
            400, f"The requested model '{model_id}' does not exist.", code="model_not_found", param="model"
        ) from None


def check_responses_request(body: dict[str, Any], catalogue: dict[str, FakeModel], today: date) -> None:
    """Raise `Refused` for what `POST /v1/responses` answers 400."""
    for name in body:
        if name not in RESPONSES_PARAMETERS:
            raise Refused(400, f"Unknown parameter: '{name}'.", code="unknown_parameter", param=name)
    if not isinstance(body.get("model"), str):
        raise Refused(400, "Missing required parameter: 'model'.", code="missing_required_parameter", param="model")
    model = served_model(catalogue, body["model"], today)
    effort = (body.get("reasoning") or {}).get("effort")
    if effort is not None:
        if not model.efforts:
            raise Refused(
                400,
                "Unsupported parameter: 'reasoning.effort' is not supported with this model.",
                code="unsupported_parameter",
                param="reasoning.effort",
            )
        if effort not in model.efforts:
            supported = ", ".join(f"'{e}'" for e in model.efforts)
            raise Refused(
                400,
                f"Unsupported value: '{effort}' is not supported with the '{model.id}' model. "
                f"Supported values are: {supported}.",
                code="unsupported_value",
                param="reasoning.effort",
            )
    if "temperature" in body and not model.temperature:
        raise Refused(
            400,
            "Unsupported parameter: 'temperature' is not supported with this model.",
            code="unsupported_parameter",
            param="temperature",
        )
    for tool in body.get("tools") or []:
        if str(tool.get("type", "")).startswith("web_search"):
            if not model.web_search:
                raise Refused(
                    400, f"Tool 'web_search' is not supported with {model.id}.", code="unsupported_value", param="tools"
                )
            if effort == "minimal":
                raise Refused(
                    400,
                    "The following tools cannot be used with reasoning.effort 'minimal': web_search.",
                    code="unsupported_value",
                    param="tools",
                )
    text_format = (body.get("text") or {}).get("format") or {}
    if text_format.get("type") == "json_schema" and text_format.get("strict"):
        problem = strict_schema_problem(text_format.get("schema") or {})
        if problem:
            raise Refused(
                400,
                f"Invalid schema for response_format '{text_format.get('name')}': {problem}",
                code="invalid_json_schema",
                param="text.format.schema",
            )


def strict_schema_problem(schema: Any, path: str = "()") -> str | None:
    """What strict structured output refuses: an object without `additionalProperties: false`, or one whose
    `required` does not list every property."""
    if isinstance(schema, list):
        return next((p for item in schema if (p := strict_schema_problem(item, path))), None)
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return f"In context={path}, 'additionalProperties' is required to be supplied and to be false."
        missing = [name for name in properties if name not in (schema.get("required") or [])]
        if missing:
            return (
                f"In context={path}, 'required' is required to be supplied and to be an array including every "
                f"key in properties. Missing '{missing[0]}'."
            )
    for key, value in schema.items():
        if isinstance(value, dict | list):
            problem = strict_schema_problem(value, f"{path}.{key}" if path != "()" else f"('{key}',)")
            if problem:
                return problem
    return None
