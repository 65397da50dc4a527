"""The chat page: one HTML document; everything after loading goes through the JSON API and SSE."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from chat.schemas import MAX_QUESTION_CHARS

# Defence in depth behind DOMPurify: even markup that slipped through could not run a script, load one
# from elsewhere, or send data anywhere but this server. Images from answers are not loaded at all.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


@require_GET
@ensure_csrf_cookie
def index(request: HttpRequest) -> HttpResponse:
    """The page sends the `csrftoken` cookie's value as `X-CSRFToken`, so the cookie must be set here.

    No session starts here: a visit stores nothing. The page's first write (a new conversation, one at a
    time) starts it (chat.callers), within the address's limit of new sessions.
    """
    response = render(request, "chat/index.html", {"max_question_chars": MAX_QUESTION_CHARS})
    response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response["Referrer-Policy"] = "same-origin"
    return response
