"""The provider layer: the OpenAI client, what each model accepts, usage, failures, structured calls, the
models' lifecycle and the breaker. Every model call of the research router goes through here."""

from datascraper.llm.capabilities import capabilities_for, request_options
from datascraper.llm.client import get_openai_client, reset_openai_client
from datascraper.llm.failures import stream_failure, translate_error
from datascraper.llm.structured import StructuredOutputInvalid, parse_structured, text_format
from datascraper.llm.usage import usage_from_response
from datascraper.llm.warm_up import warm_up_models

__all__ = [
    "StructuredOutputInvalid",
    "capabilities_for",
    "get_openai_client",
    "parse_structured",
    "request_options",
    "reset_openai_client",
    "stream_failure",
    "text_format",
    "translate_error",
    "usage_from_response",
    "warm_up_models",
]
