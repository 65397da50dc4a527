"""A brief by e-mail through Django's e-mail backend (the EMAIL_* settings): plain text, the answer then its
sources as links, the subject naming the watchlist and the brief's date in the watchlist's time zone.

Sending is blocking (smtplib): callers run it on a thread. Every socket operation has EMAIL_TIMEOUT
seconds. An SMTP reply in the 5xx range is permanent (the server will say the same again); a 4xx reply, a
refused or dropped connection and a time-out are temporary.
"""

from __future__ import annotations

import smtplib
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.mail import EmailMessage, get_connection

from chat.models import Brief
from chat.services.delivery_attempt import AttemptResult, delivered, excerpt, permanent, temporary


def subject_of(brief: Brief) -> str:
    watchlist = brief.watchlist
    day = brief.until.astimezone(ZoneInfo(watchlist.timezone)).date()
    return f"{watchlist.name}: brief of {day:%Y-%m-%d}"


def text_of(brief: Brief) -> str:
    """The answer, then each source as `[n] title` and its link on the next line."""
    lines = [brief.answer.strip(), ""]
    if brief.sources:
        lines.append("Sources")
        for number, source in enumerate(brief.sources, start=1):
            title = source.get("title") or source.get("url") or "source"
            lines.append(f"[{source.get('n', number)}] {title}")
            if source.get("url"):
                lines.append(f"    {source['url']}")
        lines.append("")
    lines.append(f"Covers {brief.since:%Y-%m-%d %H:%M} to {brief.until:%Y-%m-%d %H:%M} UTC. Brief {brief.id}.")
    return "\n".join(lines) + "\n"


def send_brief(brief: Brief, to: str) -> AttemptResult:
    """Send `brief` (its watchlist loaded) to `to`. Never raises."""
    message = EmailMessage(
        subject=subject_of(brief),
        body=text_of(brief),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[to],
        headers={"X-Brief-Id": str(brief.id)},
        connection=get_connection(fail_silently=False),
    )
    hide = settings.EMAIL_HOST_PASSWORD
    try:
        message.send()
    except smtplib.SMTPRecipientsRefused as exc:
        code, said = next(iter(exc.recipients.values()))
        return _replied(code, said, hide)
    except smtplib.SMTPResponseException as exc:
        return _replied(exc.smtp_code, exc.smtp_error, hide)
    except (smtplib.SMTPException, OSError) as exc:
        # Refused connection, time-out, dropped connection, TLS failure: the server may be back later.
        detail = excerpt(str(exc), hide=hide)
        return temporary(f"smtp_unavailable: {type(exc).__name__}" + (f": {detail}" if detail else ""))
    return delivered()


def _replied(code: int, said: bytes | str, hide: str) -> AttemptResult:
    text = said.decode("utf-8", errors="replace") if isinstance(said, bytes) else str(said)
    error = f"smtp_{code}: {excerpt(text, hide=hide)}"
    return permanent(error, code) if code >= 500 else temporary(error, code)
