"""Writes for conversations and messages."""

from __future__ import annotations

from django.db import transaction

from chat.callers import Caller
from chat.models import Conversation, Message, ResearchRun
from chat.services.run_backends import enqueue_in_transaction

TITLE_LENGTH = 80


def create_conversation(caller: Caller, *, title: str = "") -> Conversation:
    return Conversation.objects.create(title=title.strip(), **caller.owner_fields())


def title_from_question(question: str) -> str:
    line = " ".join(question.split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1].rstrip() + "…"


@transaction.atomic
def post_user_message(
    conversation: Conversation, *, content: str, mode: str, timezone: str = "", signals: dict | None = None
) -> ResearchRun:
    """Store the question and the run that will answer it, together or not at all. `signals`: what is
    known of the run before it starts (kept beside the router's own when it ends)."""
    message = Message.objects.create(conversation=conversation, role=Message.Role.USER, content=content)
    if not conversation.title:
        conversation.title = title_from_question(content)
    conversation.save(update_fields=["title", "updated_at"])
    run = ResearchRun.objects.create(
        conversation=conversation, user_message=message, requested_mode=mode, timezone=timezone, signals=signals or {}
    )
    enqueue_in_transaction(run.id)
    return run
