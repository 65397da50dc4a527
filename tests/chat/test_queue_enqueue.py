"""With the queue backend, a question, its run and the run's job are stored together or not at all."""

from __future__ import annotations

import pytest
from django.conf import settings

from chat.models import Message, ResearchRun

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not settings.IS_POSTGRES or not settings.REDIS_URL, reason="the queue needs PostgreSQL and Redis"),
]


@pytest.fixture
def queue_backend(settings):
    settings.RUNS_BACKEND = "queue"


async def post_question(api):
    conversation_id = (await api.post("/api/conversations", json={})).json()["id"]
    return await api.post(f"/api/conversations/{conversation_id}/messages", json={"content": "How did Apple do?"})


async def test_a_question_is_stored_with_its_run_and_the_run_s_job(api, queue_backend):
    from procrastinate.contrib.django.models import ProcrastinateJob

    response = await post_question(api)

    assert response.status_code == 202
    run_id = response.json()["run_id"]
    job = await ProcrastinateJob.objects.filter(args__run_id=run_id).aget()
    assert (job.task_name, job.status, job.queue_name) == ("chat.answer_run", "todo", "runs")
    assert (await ResearchRun.objects.aget(pk=run_id)).status == "queued"


async def test_a_job_that_cannot_be_queued_stores_nothing_and_is_a_503(api, queue_backend, monkeypatch):
    def refuse(run_id):
        raise RuntimeError("the database refused the job")

    monkeypatch.setattr("chat.services.queue.defer_run", refuse)

    response = await post_question(api)

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "queue_unavailable"
    assert not await Message.objects.aexists() and not await ResearchRun.objects.aexists()


async def test_the_sweep_defers_a_job_for_a_run_left_queued_without_one(api, queue_backend):
    from procrastinate.contrib.django.models import ProcrastinateJob

    from chat.services import queue

    run_id = (await post_question(api)).json()["run_id"]
    await ProcrastinateJob.objects.filter(args__run_id=run_id).adelete()  # as if a hand-over was cut short
    await ResearchRun.objects.filter(pk=run_id).aupdate(attempt=1, checkpoint={"requeued_because": "handed_over"})

    await queue.sweep()
    await queue.sweep()  # deferring again is harmless

    jobs = [job async for job in ProcrastinateJob.objects.filter(args__run_id=run_id)]
    assert [(job.task_name, job.status) for job in jobs] == [("chat.answer_run", "todo")]
