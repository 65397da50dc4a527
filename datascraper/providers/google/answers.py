"""What a Gemini response says, read the same way for a structured answer and a streamed one: its text (the
answer's parts, not the model's thoughts), how it finished, and whether it was blocked instead of answered."""

from __future__ import annotations

from google.genai import types

# Finish reasons that mean the model (or its filters) declined to answer, rather than stopped early.
REFUSED = frozenset(
    {
        types.FinishReason.SAFETY,
        types.FinishReason.RECITATION,
        types.FinishReason.BLOCKLIST,
        types.FinishReason.PROHIBITED_CONTENT,
        types.FinishReason.SPII,
        types.FinishReason.MODEL_ARMOR,
    }
)


def first_candidate(response: types.GenerateContentResponse) -> types.Candidate | None:
    """The answer (one is asked for: more would be alternatives, not parts of it)."""
    return response.candidates[0] if response.candidates else None


def answer_text(candidate: types.Candidate | None) -> str:
    """The candidate's text parts, without the thought summaries a thinking model may send."""
    if candidate is None or candidate.content is None:
        return ""
    return "".join(part.text for part in candidate.content.parts or () if part.text and not part.thought)


def refusal_of(response: types.GenerateContentResponse, finish: types.FinishReason | None) -> str | None:
    """Why the answer was withheld, when the prompt was blocked (an HTTP 200 without candidates) or the
    candidate stopped for a safety reason; None when it was answered."""
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        return feedback.block_reason_message or f"The request was blocked ({_name(feedback.block_reason)})."
    if finish in REFUSED:
        candidate = first_candidate(response)
        message = candidate.finish_message if candidate is not None else None
        return message or f"The model stopped for {_name(finish)}."
    return None


def _name(reason: object) -> str:
    return str(getattr(reason, "value", reason))
