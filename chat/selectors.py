"""Reads, always scoped to the caller: another owner's rows simply do not exist for them."""

from __future__ import annotations

import uuid

from django.db.models import F, QuerySet

from chat.callers import Caller
from chat.models import Brief, Conversation, Message, ResearchRun, Watchlist

# What a question takes with it as context: its conversation's most recent messages, this many.
MAX_HISTORY_MESSAGES = 20


def conversations_for(caller: Caller) -> QuerySet[Conversation]:
    return Conversation.objects.filter(**caller.owner_filter()).order_by("-updated_at")


def conversation_for(caller: Caller, conversation_id: uuid.UUID) -> Conversation | None:
    return conversations_for(caller).filter(pk=conversation_id).first()


def messages_of(conversation: Conversation) -> list[Message]:
    """Oldest first; each carries `run_id`, the run whose answer it is (None for questions), joined in
    the same query so a long conversation costs one read."""
    return list(conversation.messages.annotate(run_id=F("produced_by__id")).order_by("created_at"))


def run_for(caller: Caller, run_id: uuid.UUID) -> ResearchRun | None:
    return ResearchRun.objects.filter(pk=run_id, **caller.owner_filter("conversation__")).first()


def history_before(message: Message, *, limit: int = MAX_HISTORY_MESSAGES) -> list[Message]:
    """The completed turns that precede `message` in its conversation, oldest first."""
    earlier = (
        Message.objects.filter(conversation_id=message.conversation_id, created_at__lt=message.created_at)
        .exclude(content="")
        .order_by("-created_at")[:limit]
    )
    return list(reversed(earlier))


def watchlists_for(caller: Caller) -> QuerySet[Watchlist]:
    return Watchlist.objects.filter(**caller.owner_filter()).order_by("-created_at")


def watchlist_for(caller: Caller, watchlist_id: uuid.UUID) -> Watchlist | None:
    return watchlists_for(caller).filter(pk=watchlist_id).first()


def briefs_of(watchlist: Watchlist, *, limit: int) -> list[Brief]:
    """Newest first, with their deliveries."""
    return list(watchlist.briefs.order_by("-created_at").prefetch_related("deliveries")[:limit])


def brief_for(caller: Caller, brief_id: uuid.UUID) -> Brief | None:
    return (
        Brief.objects.filter(pk=brief_id, **caller.owner_filter("watchlist__")).prefetch_related("deliveries").first()
    )
