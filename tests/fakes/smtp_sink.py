"""An SMTP server on 127.0.0.1 (aiosmtpd, in a thread) that keeps every message it accepts, and can refuse
the first ones with the replies it is told (`"451 4.3.0 Try again later"`, `"550 5.1.1 No such user"`),
given at the end of DATA as a real server gives them.

    sink = SmtpSink(refusals=["451 4.3.0 Try again later"]).start()
    ... EMAIL_HOST="127.0.0.1", EMAIL_PORT=sink.port ...
    sink.messages[0]  # an email.message.EmailMessage
"""

from __future__ import annotations

import email
import email.policy
import logging
import socket
import threading
from email.message import EmailMessage

from aiosmtpd.controller import Controller

# aiosmtpd logs every command at INFO: noise around a failing test's own lines.
logging.getLogger("mail.log").setLevel(logging.WARNING)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class SmtpSink:
    def __init__(self, refusals: list[str] | None = None) -> None:
        self._refusals = list(refusals or [])
        self._lock = threading.Lock()
        self.messages: list[EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []  # (MAIL FROM, RCPT TO) of each accepted message
        self.port = _free_port()
        self._controller = Controller(self, hostname="127.0.0.1", port=self.port)

    def start(self) -> SmtpSink:
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()

    async def handle_DATA(self, server: object, session: object, envelope) -> str:  # noqa: N802 (aiosmtpd's hook)
        with self._lock:
            if self._refusals:
                return self._refusals.pop(0)
            message = email.message_from_bytes(envelope.content, policy=email.policy.default)
            self.messages.append(message)  # type: ignore[arg-type]
            self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        return "250 Message accepted for delivery"
