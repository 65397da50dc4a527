"""Answering an OpenAI-style chat completion with an ordinary research run.

A completion is not a separate code path: the earlier turns become the messages of a new conversation,
the last user message is posted with the same service the JSON API uses, and the answer is read back
from the run's stored events. So every completion is visible in the caller's conversation list, is
cancellable, and costs exactly what a chat-page question costs. A client that goes away ends its run.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from functools import partial

from django.db import transaction

from chat.callers import Caller
from chat.db_calls import db_call, request_db_call
from chat.events import KEEPALIVE, iter_run_events
from chat.models import Message, ResearchRun
from chat.services.conversations import create_conversation, post_user_message
from chat.services.run_backends import start_run
from chat.services.runs import cancel_run, reap_if_orphaned
from datascraper.schemas import ChatTurn, Mode, Source, SourcesEvent, UsageLedger


class CompletionFailed(Exception):
    """The run ended with an `error` event; `code` and `message` are the event's, safe to show."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class AnswerDelta:
    """A piece of the answer text, in order."""

    text: str


@dataclass(frozen=True)
class AnswerFinished:
    """The run is done: the numbered source list that follows the answer, and what the run cost."""

    sources_text: str
    usage: UsageLedger


AnswerPiece = AnswerDelta | AnswerFinished | None
"""What `follow_answer` yields. None: the run is alive but the answer is unchanged (a progress event, or a
quiet period; see `iter_run_events`), so a streaming response can show life before the first word."""


@transaction.atomic
def start_completion(caller: Caller, *, history: Sequence[ChatTurn], question: str, mode: Mode) -> ResearchRun:
    """Store the conversation the client sent and the run that answers its last question.

    The history is stored in order before the question, so the run reads it as context exactly as it
    would for a conversation held on the chat page.
    """
    conversation = create_conversation(caller)
    for turn in history:
        Message.objects.create(conversation=conversation, role=turn.role, content=turn.content)
    return post_user_message(conversation, content=question, mode=mode)


async def store_and_start(caller: Caller, *, history: list[ChatTurn], question: str, mode: Mode) -> ResearchRun:
    """Store the conversation and its run, then start the run.

    A client that hangs up meanwhile cancels this task, but the database thread still commits: the run
    it stored is then ended at once, instead of being left queued (or answered by a worker) for nobody.
    """
    storing = asyncio.ensure_future(
        request_db_call(start_completion, caller, history=history, question=question, mode=mode)
    )
    try:
        run = await asyncio.shield(storing)
    except asyncio.CancelledError:
        await asyncio.wait({storing})
        if storing.exception() is None:
            await abandon_completion(storing.result())
        raise
    start_run(run.id)
    return run


async def abandon_completion(run: ResearchRun) -> None:
    """The client went away (a timeout, a closed tab): stop paying for an answer nobody will read.
    What was written so far stays in the conversation, marked incomplete."""
    await asyncio.shield(cancel_run(run.id))


ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def filing_details(source: Source) -> list[str]:
    """What a filing source says of itself, as the chat page shows it: ["10-Q", "Q1 FY2025", "filed 2025-01-31"].

    A form that is a number alone reads "Form 4"; a period that is a day (an 8-K's event, a Form 4's
    trade) says which.
    """
    form = source.form or ""
    parts = [f"Form {form}" if re.fullmatch(r"\d+(/A)?", form) else form] if form else []
    if source.period:
        if not ISO_DAY.fullmatch(source.period):
            what = ""
        elif form.startswith("8-K"):
            what = "event "
        elif re.fullmatch(r"4(/A)?", form):
            what = "trade "
        else:
            what = "period "
        parts.append(f"{what}{source.period}")
    if source.filed:
        parts.append(f"filed {source.filed.isoformat()}")
    return parts


def _source_details(source: Source) -> str:
    """What follows a source's address: "(as of 2025-06-13)" for market data, "(10-K, FY2024, filed 2024-11-01)"
    for a filing, nothing for the web."""
    if source.kind == "filing":
        details = filing_details(source)
        return f" ({', '.join(details)})" if details else ""
    return f" (as of {source.as_of})" if source.as_of else ""


def format_sources(sources: Sequence[Source]) -> str:
    """The numbered list that follows an answer, so `[n]` markers resolve in any plain-text client."""
    if not sources:
        return ""
    lines = [f"[{source.n}] {source.title} — {source.url}{_source_details(source)}" for source in sources]
    return "\n\nSources:\n" + "\n".join(lines)


async def _stored_usage(run_id: uuid.UUID) -> UsageLedger:
    usage = await db_call(lambda: ResearchRun.objects.values_list("usage", flat=True).get(pk=run_id))
    return UsageLedger.model_validate(usage or {})


async def follow_answer(run: ResearchRun) -> AsyncGenerator[AnswerPiece, None]:
    """The run's answer as it is written, from its first stored event to its terminal one.

    Raises `CompletionFailed` on the run's `error` event (a partial answer already yielded stays with
    the caller to discard or keep).
    """
    sources: list[Source] = []
    async for record in iter_run_events(run.pk, 0, on_idle=partial(reap_if_orphaned, run.pk)):
        if record is KEEPALIVE:
            yield None
        elif record.type == "delta":
            yield AnswerDelta(record.data["text"])
        elif record.type == "sources":
            sources = SourcesEvent.model_validate(record.data).sources
        elif record.type == "error":
            raise CompletionFailed(record.data["code"], record.data["message"])
        elif record.type == "done":
            yield AnswerFinished(sources_text=format_sources(sources), usage=await _stored_usage(run.pk))
            return
        else:
            yield None
