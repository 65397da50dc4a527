"""Request and response bodies of the OpenAI-compatible endpoints, as OpenAI's Chat Completions API spells
them, and a request read into what a research run takes: the earlier turns and the question.

The request side accepts what OpenAI's API accepts and refuses what it refuses (`InvalidRequest`, which the
views answer as OpenAI's 400); the response side is what the official SDKs parse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer, model_validator

from chat.schemas import MAX_QUESTION_CHARS
from datascraper.schemas import ChatTurn, Mode, UsageLedger

MODEL_ID = "finance-research"
MODEL_OWNER = "finance-research-chat"
MODEL_CREATED = 1767225600  # 2026-01-01: a fixed date, so the model list is stable between calls
MAX_MESSAGES = 200
MAX_HISTORY_TURN_CHARS = 32_000


class InvalidRequest(Exception):
    """A request OpenAI's API would refuse with a 400; `param` is the path of the field at fault, if one is."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


# --- request --------------------------------------------------------------------------------------------


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class ImageUrl(BaseModel):
    url: str


class ImagePart(BaseModel):
    type: Literal["image_url"]
    image_url: ImageUrl


class InputAudio(BaseModel):
    data: str
    format: str


class AudioPart(BaseModel):
    type: Literal["input_audio"]
    input_audio: InputAudio


class FileRef(BaseModel):
    file_id: str | None = None
    file_data: str | None = None
    filename: str | None = None


class FilePart(BaseModel):
    type: Literal["file"]
    file: FileRef


class RefusalPart(BaseModel):
    type: Literal["refusal"]
    refusal: str


UserPart = Annotated[TextPart | ImagePart | AudioPart | FilePart, Field(discriminator="type")]
AssistantPart = Annotated[TextPart | RefusalPart, Field(discriminator="type")]


def _text_of(content: str | Sequence[BaseModel] | None) -> str:
    """The text a research run can use: text parts joined; images, audio, files and refusals dropped."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content if isinstance(part, TextPart))


class _TextMessage(BaseModel):
    content: str | Sequence[BaseModel] | None

    @property
    def text(self) -> str:
        return _text_of(self.content)


class InstructionMessage(_TextMessage):
    """`system` or `developer`: accepted and dropped, since the research router writes its own instructions."""

    role: Literal["system", "developer"]
    content: str | list[TextPart]


class UserMessage(_TextMessage):
    role: Literal["user"]
    content: str | list[UserPart]


class AssistantTurnMessage(_TextMessage):
    """An earlier answer. As in OpenAI's API, `content` may be null when the turn called tools instead."""

    role: Literal["assistant"]
    content: str | list[AssistantPart] | None = None
    tool_calls: list[dict[str, object]] | None = None
    function_call: dict[str, object] | None = None

    @model_validator(mode="after")
    def _content_or_a_call(self) -> AssistantTurnMessage:
        if self.content is None and not self.tool_calls and not self.function_call:
            raise ValueError("an assistant message needs 'content' unless it has 'tool_calls' or 'function_call'")
        return self


class ToolResultMessage(BaseModel):
    """What the client's own tool returned (`tool`, or the older `function`): kept as context of the
    assistant's side, since the answer it fed may be what the next question is about."""

    role: Literal["tool", "function"]
    content: str | list[TextPart] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _names_its_call(self) -> ToolResultMessage:
        if self.role == "tool" and (not self.tool_call_id or self.content is None):
            raise ValueError("a tool message needs 'content' and 'tool_call_id'")
        if self.role == "function" and not self.name:
            raise ValueError("a function message needs 'name'")
        return self

    @property
    def text(self) -> str:
        result = _text_of(self.content).strip()
        return f"Result of the client's tool {self.name or self.tool_call_id}: {result}" if result else ""


ChatMessage = Annotated[
    InstructionMessage | UserMessage | AssistantTurnMessage | ToolResultMessage, Field(discriminator="role")
]
"""One message of the request, as OpenAI's API accepts it; fields a research run has no use for (`name`,
`audio`, ...) are ignored. An unknown role, an unknown content part, or a part missing its fields is a 400,
as there."""


class StreamOptions(BaseModel):
    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """The request body. Sampling options (`temperature`, `max_tokens`, ...) are accepted and ignored:
    the research router chooses its own models and settings."""

    model_config = ConfigDict(extra="ignore")

    model: str
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    stream_options: StreamOptions | None = None
    mode: Mode = Field(default="auto", description="Extension: 'quick' or 'research' forces a path.")

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage


def parse_request(raw: bytes) -> ChatCompletionRequest:
    """The body, validated as OpenAI's API validates it: `InvalidRequest` says what is wrong, and where."""
    try:
        return ChatCompletionRequest.model_validate_json(raw)
    except ValidationError as exc:
        errors = exc.errors()
        if errors[0]["type"] == "json_invalid":
            raise InvalidRequest("We could not parse the JSON body of your request.") from exc
        # A union reports one error per branch; the deepest one says what is wrong ("messages.0.content.0:
        # unknown part type", not "content: not a string").
        first = max(errors, key=lambda error: len(error["loc"]))
        param = _param(first["loc"]) or None
        message = first["msg"].removeprefix("Value error, ")
        raise InvalidRequest(f"{param}: {message}" if param else message, param=param) from exc


_TAGS = frozenset(
    {"system", "developer", "user", "assistant", "tool", "function"}
    | {"text", "image_url", "input_audio", "file", "refusal"}
)


def _param(location: tuple[str | int, ...]) -> str:
    """The request's path of a validation error: without the union branches pydantic names in it
    ("messages.0.user.content.list[...].0.image_url.image_url" is "messages.0.content.0.image_url")."""
    parts: list[str] = []
    previous: str | int | None = None
    for part in location:
        tagged = isinstance(previous, int) and part in _TAGS
        branch = isinstance(part, str) and ("[" in part or part == "str" or tagged)
        if not branch:
            parts.append(str(part))
        previous = part
    return ".".join(parts)


def split_conversation(messages: list[ChatMessage]) -> tuple[list[ChatTurn], str]:
    """The earlier turns and the question: the last message, which must be the user's.

    System and developer messages are dropped: the research router writes its own instructions. Tool and
    function results become assistant-side context; turns with no text left (an image alone, an assistant
    turn that only called tools) are skipped.
    """
    last = len(messages) - 1
    if messages[last].role != "user":
        raise InvalidRequest("The last message must be a user message.", param=f"messages.{last}.role")
    question = messages[last].text.strip()
    if not question:
        raise InvalidRequest(
            "The question must have text (images, audio and files are not read).", param=f"messages.{last}.content"
        )
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidRequest(
            f"The question must be at most {MAX_QUESTION_CHARS} characters.", param=f"messages.{last}.content"
        )
    history: list[ChatTurn] = []
    for index, message in enumerate(messages[:last]):
        text = message.text.strip()
        if isinstance(message, InstructionMessage) or not text:
            continue
        if len(text) > MAX_HISTORY_TURN_CHARS:
            raise InvalidRequest(
                f"Earlier messages must be at most {MAX_HISTORY_TURN_CHARS} characters.",
                param=f"messages.{index}.content",
            )
        history.append(ChatTurn(role="user" if isinstance(message, UserMessage) else "assistant", content=text))
    return history, question


# --- response -------------------------------------------------------------------------------------------


class CompletionTokensDetails(BaseModel):
    reasoning_tokens: int


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    completion_tokens_details: CompletionTokensDetails

    @classmethod
    def from_ledger(cls, ledger: UsageLedger) -> CompletionUsage:
        """Summed over every model the run called; reasoning tokens are part of the completion tokens."""
        prompt = sum(usage.input_tokens for usage in ledger.by_model.values())
        completion = sum(usage.output_tokens for usage in ledger.by_model.values())
        reasoning = sum(usage.reasoning_tokens for usage in ledger.by_model.values())
        return cls(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=prompt + completion,
            completion_tokens_details=CompletionTokensDetails(reasoning_tokens=reasoning),
        )


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str
    refusal: None = None


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"
    logprobs: None = None


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str = MODEL_ID
    choices: list[Choice]
    usage: CompletionUsage
    system_fingerprint: None = None


class ChoiceDelta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: ChoiceDelta
    finish_reason: Literal["stop"] | None = None
    logprobs: None = None

    @field_serializer("delta")
    def _only_present_fields(self, delta: ChoiceDelta) -> dict[str, str]:
        # OpenAI sends `{"role": ...}` first and `{"content": ...}` after, never explicit nulls.
        return delta.model_dump(exclude_none=True)


class ChatCompletionChunk(BaseModel):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str = MODEL_ID
    choices: list[ChunkChoice]
    usage: CompletionUsage | None = None
    system_fingerprint: None = None


class Model(BaseModel):
    id: str = MODEL_ID
    object: Literal["model"] = "model"
    created: int = MODEL_CREATED
    owned_by: str = MODEL_OWNER


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]
