"""A brief's end: its row gets its status, answer, sources and finishing time once, whichever way it ends
(nothing material, its run done or failed, an owner's limit) and whichever process concludes its run."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from chat.models import Brief, ResearchRun
from chat.services.delivery import record_deliveries


@transaction.atomic
def finish_brief(
    brief_id: uuid.UUID,
    status: str,
    *,
    answer: str = "",
    sources: Sequence[dict] = (),
    error: dict | None = None,
) -> bool:
    """End a running brief; False when it had ended already (nothing changes then). A `done` brief's
    deliveries are recorded with its end, in the same transaction: the caller's event loop then delivers them
    (`delivery.deliver_in_background`), and what no process finishes is taken by `delivery.deliver_due`."""
    ended = Brief.objects.filter(pk=brief_id, status=Brief.Status.RUNNING).update(
        status=status, answer=answer, sources=list(sources), error=error, finished_at=timezone.now()
    )
    if ended and status == Brief.Status.DONE:
        record_deliveries(Brief.objects.select_related("watchlist").get(pk=brief_id))
    return bool(ended)


def record_run_outcome(run: ResearchRun) -> None:
    """In the transaction that closes `run` (chat.services.attempts): the brief it writes ends with it."""
    brief_id = Brief.objects.filter(run_id=run.pk).values_list("pk", flat=True).first()
    if brief_id is None:
        return
    answer = run.answer.content if run.answer is not None else ""
    sources = run.answer.sources if run.answer is not None else []
    if run.status == ResearchRun.Status.DONE:
        finish_brief(brief_id, Brief.Status.DONE, answer=answer, sources=sources)
    else:
        finish_brief(brief_id, Brief.Status.FAILED, answer=answer, sources=sources, error=run.error)
