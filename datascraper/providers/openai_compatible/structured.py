"""A structured answer from a Chat Completions server.

First as the API defines it: the schema as a strict `response_format` `json_schema` (vLLM's guided
decoding, Ollama's `format`, LM Studio, OpenRouter's models that take it). A server that refuses that format
(a 400 or 422 naming `response_format` or `json_schema`) is asked instead for JSON in the prompt, the schema
given there; the answer is validated against the schema, and an invalid one gets ONE repair request that sends
the validation errors back. Which way a server takes a model's structured calls is remembered for the
process, so the refused request is sent once, not before every call.
"""

from __future__ import annotations

import json
import logging
import re
from functools import cache
from typing import Any

import openai
from openai import AsyncOpenAI
from openai.lib._parsing._completions import type_to_response_format_param
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from pydantic import BaseModel, ValidationError

from datascraper import prompts
from datascraper.models_config import get_research_config
from datascraper.providers.base import StructuredReply, StructuredRequest
from datascraper.providers.openai_compatible.failures import translate_compatible_error
from datascraper.providers.openai_compatible.usage import usage_from_chat
from datascraper.schemas import ModelUsage

logger = logging.getLogger(__name__)

# (base URL, model) of the servers that refused the json_schema response format: asked in the prompt since.
_PROMPTED: set[tuple[str, str]] = set()
_REFUSAL_NAMES = ("response_format", "json_schema")
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_MAX_ERRORS_SENT = 10


@cache
def response_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The strict `json_schema` response format of `schema`, built once (the SDK's own helper, as
    `chat.completions.parse` would send it)."""
    built = type_to_response_format_param(schema)
    assert isinstance(built, dict)  # a pydantic model's format is always a json_schema dict
    return dict(built)


class JsonSchemaRefused(Exception):
    """The server refused the `json_schema` response format (400 or 422 naming it)."""


async def structured_answer(request: StructuredRequest, client: AsyncOpenAI, base_url: str) -> StructuredReply:
    key = (base_url, request.model.name)
    if key not in _PROMPTED:
        try:
            return await _with_json_schema(request, client)
        except JsonSchemaRefused:
            _PROMPTED.add(key)
            logger.info(
                "The server at OPENAI_COMPATIBLE_BASE_URL refused the json_schema response format for %s: its "
                "structured answers are asked for in the prompt and validated from now on.",
                request.model.label,
            )
    return await _with_prompted_json(request, client)


async def _with_json_schema(request: StructuredRequest, client: AsyncOpenAI) -> StructuredReply:
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": request.instructions},
        {"role": "user", "content": request.input},
    ]
    completion = await _complete(request, client, messages, response_format(request.schema))
    return _reply(completion, usage_from_chat(completion.usage))


async def _with_prompted_json(request: StructuredRequest, client: AsyncOpenAI) -> StructuredReply:
    """JSON asked for in the prompt, validated; one repair with the validation errors when it is invalid."""
    schema = json.dumps(response_format(request.schema)["json_schema"]["schema"])
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": f"{request.instructions}\n\n{prompts.json_answer_rules(schema)}"},
        {"role": "user", "content": request.input},
    ]
    completion = await _complete(request, client, messages, None)
    usage = usage_from_chat(completion.usage)
    reply = _reply(completion, usage)
    problems = _validation_errors(request.schema, reply)
    if problems is None:
        return reply
    messages += [
        {"role": "assistant", "content": reply.text},
        {"role": "user", "content": prompts.json_repair_request(problems)},
    ]
    repaired = await _complete(request, client, messages, None)
    usage.add(usage_from_chat(repaired.usage))
    # Returned as written: the caller validates it and names the failure (`StructuredOutputInvalid`).
    return _reply(repaired, usage)


async def _complete(
    request: StructuredRequest,
    client: AsyncOpenAI,
    messages: list[ChatCompletionMessageParam],
    schema_format: dict[str, Any] | None,
) -> ChatCompletion:
    # Each try is bounded by the whole call's bound, given with the request; the schema goes as plain JSON.
    timeout = min(get_research_config().request_timeout_s, request.timeout_s)
    extra_body = {"response_format": schema_format} if schema_format is not None else None
    try:
        return await client.chat.completions.create(
            model=request.model.name, messages=messages, extra_body=extra_body, timeout=timeout
        )
    except openai.OpenAIError as exc:
        if schema_format is not None and _refuses_json_schema(exc):
            raise JsonSchemaRefused() from exc
        raise translate_compatible_error(exc, model=request.model.label, name=request.model.name) from exc


def _refuses_json_schema(exc: openai.OpenAIError) -> bool:
    if not isinstance(exc, openai.BadRequestError | openai.UnprocessableEntityError):
        return False
    said = f"{exc.param or ''} {exc.body if exc.body is not None else exc.message}".lower()
    return any(name in said for name in _REFUSAL_NAMES)


def _reply(completion: ChatCompletion, usage: ModelUsage) -> StructuredReply:
    choice = completion.choices[0] if completion.choices else None
    message = choice.message if choice is not None else None
    text = (message.content if message is not None else None) or ""
    return StructuredReply(
        text=_unfenced(text),
        usage=usage,
        refusal=message.refusal if message is not None else None,
        complete=choice is not None and choice.finish_reason != "length",
    )


def _unfenced(text: str) -> str:
    """The JSON of an answer a model wrapped in a Markdown code fence, as local models often do."""
    fenced = _FENCE.fullmatch(text.strip())
    return fenced.group(1) if fenced else text


def _validation_errors(schema: type[BaseModel], reply: StructuredReply) -> str | None:
    """What is wrong with the answer against the schema, one line each; None when it is valid (or there is
    no answer to repair: a refusal, or one cut short)."""
    if reply.refusal is not None or not reply.complete:
        return None
    try:
        schema.model_validate_json(reply.text)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)[:_MAX_ERRORS_SENT]
        return "\n".join(f"- {'.'.join(map(str, e['loc'])) or '(the answer)'}: {e['msg']}" for e in errors)
    return None
