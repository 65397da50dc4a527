"""What a reopened conversation needs to draw an answer as it was drawn live: the run keeps its `chart`
events, and each stored answer names its run. Through the ASGI app, the real pipeline against the fake
OpenAI server and the market data server over the fake yfinance."""

from __future__ import annotations

import pytest

from chat import selectors
from chat.models import Conversation, Message, ResearchRun
from tests.chat.test_market_data_runs import APPLE_MONTH
from tests.chat.test_runs import ask, wait_finished
from tests.datascraper.conftest import market_data  # noqa: F401 (the fixture)
from tests.datascraper.research_support import script_analysis, script_synthesis
from tests.sse import read_events

QUESTION = "How has Apple's stock done over the last month?"


@pytest.mark.django_db(transaction=True)
async def test_the_run_serves_its_charts_as_they_were_sent_and_the_answer_names_its_run(
    api, fake_openai, market_data, research_env  # noqa: F811
):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, APPLE_MONTH)
    script_synthesis(fake_openai, "Apple closed at 196.45 USD on 2025-06-13 [1].")
    accepted = await ask(api, QUESTION, mode="research")
    run = await wait_finished(api, accepted["run_id"])

    events = await read_events(api, accepted["events_url"])

    sent = [e.data for e in events if e.type == "chart"]
    assert len(sent) == 1 and len(sent[0]["series"][0]["points"]) == 21
    assert run["charts"] == sent
    conversation = (await api.get(f"/api/conversations/{accepted['conversation_id']}")).json()
    question, answer = conversation["messages"]
    assert (question["role"], question["run_id"]) == ("user", None)
    assert (answer["role"], answer["run_id"], answer["id"]) == ("assistant", accepted["run_id"], run["message_id"])


@pytest.mark.django_db(transaction=True)
async def test_a_run_stored_before_charts_carried_their_ends_still_serves_its_charts(
    api, fake_openai, market_data, research_env  # noqa: F811
):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, APPLE_MONTH)
    script_synthesis(fake_openai, "Apple closed at 196.45 USD on 2025-06-13 [1].")
    accepted = await ask(api, QUESTION, mode="research")
    sent = (await wait_finished(api, accepted["run_id"]))["charts"]
    assert sent[0]["series"][0]["ends"], "charts are stored with their points' ends"
    stored = [{**chart, "series": [{k: v for k, v in s.items() if k != "ends"} for s in chart["series"]]} for chart in sent]
    await ResearchRun.objects.filter(id=accepted["run_id"]).aupdate(charts=stored)

    run = (await api.get(f"/api/runs/{accepted['run_id']}")).json()

    assert run["charts"] == stored, "served as stored, without ends (the page then keeps the series' order)"


@pytest.mark.django_db(transaction=True)
async def test_a_quote_answer_has_no_charts_but_still_names_its_run(api, fake_openai, market_data):  # noqa: F811
    accepted = await ask(api, "What is AAPL trading at?", mode="auto")
    run = await wait_finished(api, accepted["run_id"])

    conversation = (await api.get(f"/api/conversations/{accepted['conversation_id']}")).json()

    assert run["status"] == "done" and run["charts"] == []
    assert conversation["messages"][-1]["run_id"] == accepted["run_id"]


@pytest.mark.django_db
def test_a_conversations_messages_and_their_runs_are_read_in_one_query(django_assert_num_queries):
    conversation = Conversation.objects.create(session_key="s")
    runs = []
    for turn in range(3):
        question = Message.objects.create(conversation=conversation, role="user", content=f"q{turn}")
        answer = Message.objects.create(conversation=conversation, role="assistant", content=f"a{turn}")
        runs.append(ResearchRun.objects.create(conversation=conversation, user_message=question, answer=answer))
    Message.objects.create(conversation=conversation, role="user", content="still unanswered")

    with django_assert_num_queries(1):
        messages = selectors.messages_of(conversation)

    assert [m.run_id for m in messages] == [None, runs[0].id, None, runs[1].id, None, runs[2].id, None]
