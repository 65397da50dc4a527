"""A finished brief sent by e-mail through Django's real SMTP backend to an SMTP server on 127.0.0.1
(aiosmtpd, tests/fakes/smtp_sink.py): plain text with the answer then its sources as links, the subject
naming the watchlist and the day; a server's temporary refusal, or no server at all, tried again; a
permanent refusal not; every attempt recorded.
"""

from __future__ import annotations

import socket

import pytest

from chat.models import Delivery
from chat.services.delivery import deliver_brief
from tests.chat.brief_rows import ANSWER, SOURCES, finished_brief
from tests.fakes.smtp_sink import SmtpSink
from tests.fakes.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.django_db(transaction=True)

TO = "analyst@example.com"


@pytest.fixture(autouse=True)
def smtp_settings(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_TIMEOUT = 5
    settings.DEFAULT_FROM_EMAIL = "briefs@research.example"
    settings.BRIEFS_DELIVERY_BACKOFF = 0
    return settings


@pytest.fixture
def sink_refusing(smtp_settings):
    started: list[SmtpSink] = []

    def start(*refusals: str) -> SmtpSink:
        started.append(SmtpSink(list(refusals)).start())
        smtp_settings.EMAIL_PORT = started[-1].port
        return started[-1]

    yield start
    for sink in started:
        sink.stop()


async def email_brief():
    return await finished_brief([{"type": "email", "to": TO}], name="Morning tech")


async def delivery_of(brief) -> Delivery:
    return await Delivery.objects.aget(brief=brief, channel=0)


async def test_the_brief_arrives_as_plain_text_with_its_sources_as_links(sink_refusing):
    sink = sink_refusing()
    brief = await email_brief()

    await deliver_brief(brief.id)

    [message] = sink.messages
    assert sink.envelopes == [("briefs@research.example", [TO])]
    assert message["Subject"] == "Morning tech: brief of 2026-11-27"  # 07:30 in Paris
    assert message["To"] == TO and message["X-Brief-Id"] == str(brief.id)
    assert message.get_content_type() == "text/plain"
    text = message.get_content().replace("\r\n", "\n")  # lines end in CRLF on the wire
    assert text.startswith(ANSWER)
    for source in SOURCES:
        assert f"[{source['n']}] {source['title']}\n    {source['url']}\n" in text
    assert text.index(ANSWER) < text.index(SOURCES[0]["url"])
    delivery = await delivery_of(brief)
    assert delivery.kind == "email" and delivery.status == "delivered"
    assert [attempt["outcome"] for attempt in delivery.attempts] == ["delivered"]


async def test_a_temporary_refusal_is_tried_again(sink_refusing):
    sink = sink_refusing("451 4.3.0 Try again later")
    brief = await email_brief()

    await deliver_brief(brief.id)

    assert len(sink.messages) == 1
    delivery = await delivery_of(brief)
    assert delivery.status == "delivered"
    first, second = delivery.attempts
    assert (first["outcome"], first["status_code"]) == ("temporary_failure", 451)
    assert first["error"] == "smtp_451: 4.3.0 Try again later"
    assert second["outcome"] == "delivered"


async def test_a_permanent_refusal_fails_the_delivery_at_once(sink_refusing):
    sink = sink_refusing("550 5.1.1 No such user")
    brief = await email_brief()

    await deliver_brief(brief.id)

    assert sink.messages == []
    delivery = await delivery_of(brief)
    assert delivery.status == "failed"
    assert [(a["outcome"], a["status_code"]) for a in delivery.attempts] == [("permanent_failure", 550)]


async def test_no_server_listening_is_tried_five_times_then_failed(smtp_settings):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        smtp_settings.EMAIL_PORT = probe.getsockname()[1]
    brief = await email_brief()

    await deliver_brief(brief.id)

    delivery = await delivery_of(brief)
    assert delivery.status == "failed"
    assert len(delivery.attempts) == 5
    assert all(a["error"].startswith("smtp_unavailable: ConnectionRefusedError") for a in delivery.attempts)


async def test_a_brief_goes_to_its_webhook_and_its_mailbox_each_once(sink_refusing, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True
    sink = sink_refusing()
    receiver = WebhookReceiver().start()
    try:
        brief = await finished_brief(
            [
                {"type": "webhook", "url": receiver.url, "secret": "placeholder-webhook-secret"},
                {"type": "email", "to": TO},
            ]
        )
        await deliver_brief(brief.id)
        await deliver_brief(brief.id)
    finally:
        receiver.stop()

    assert (len(receiver.requests), len(sink.messages)) == (1, 1)
    statuses = [(d.channel, d.kind, d.status) async for d in Delivery.objects.filter(brief=brief)]
    assert statuses == [(0, "webhook", "delivered"), (1, "email", "delivered")]
