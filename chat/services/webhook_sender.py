"""One signed POST of a brief to a webhook: its address judged again, no redirect followed, bounded in time.

The body is signed as GitHub signs its webhooks: `X-Signature-256: sha256=<hex HMAC-SHA256 of the exact
body bytes, keyed with the channel's secret>`. The host was judged when the watchlist was saved; a name may
resolve elsewhere since, so it is resolved again here, every address judged by the citation fetcher's rule
(public only, unless WEBHOOK_ALLOW_PRIVATE=1), and the request goes to the very address judged (the Host
header and the TLS server name keep the name), as the fetcher does. A redirect is not followed: it is a
permanent failure, like a 4xx. The whole attempt (DNS, connection, answer) has `timeout_s`.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac

import httpx2
from django.conf import settings

from chat.services.delivery_attempt import AttemptResult, delivered, excerpt, permanent, temporary
from datascraper.citations.fetcher import PageUnreachable, any_address, is_public, resolve

SIGNATURE_HEADER = "X-Signature-256"
USER_AGENT = "finance-research-briefs/1.0"
# Of a refusal's answer, only this much is read (and a short excerpt of it kept).
MAX_ANSWER_BYTES = 1024
_DEFAULT_PORTS = {"http": 80, "https": 443}


def signature(secret: str, body: bytes) -> str:
    """The X-Signature-256 value of `body`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


async def post_brief(url: str, secret: str, body: bytes, *, delivery_id: str, timeout_s: float) -> AttemptResult:
    """POST `body` (the brief's JSON) to `url`, signed with `secret`. Never raises."""
    try:
        target = httpx2.URL(url)
    except (httpx2.InvalidURL, ValueError, TypeError):
        return permanent("bad_url")
    if target.scheme not in _DEFAULT_PORTS or not target.host:
        return permanent("bad_url")
    headers = {
        "Host": target.netloc.decode("ascii"),
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Delivery-Id": delivery_id,
        SIGNATURE_HEADER: signature(secret, body),
    }
    try:
        async with asyncio.timeout(timeout_s):
            return await _post(target, body, headers, timeout_s=timeout_s, secret=secret)
    except TimeoutError:
        return temporary("timeout")


async def _post(
    target: httpx2.URL, body: bytes, headers: dict[str, str], *, timeout_s: float, secret: str
) -> AttemptResult:
    host = target.raw_host.decode("ascii")
    rule = any_address if settings.WEBHOOK_ALLOW_PRIVATE else is_public
    try:
        address = await resolve(host, target.port or _DEFAULT_PORTS[target.scheme], is_allowed=rule)
    except PageUnreachable as exc:
        if exc.reason == "refused_address":
            return permanent("webhook_not_public: the host resolves to a non-public address")
        return temporary("dns_failed")
    extensions = {"sni_hostname": host} if target.scheme == "https" else {}
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(timeout_s), follow_redirects=False, trust_env=False) as client:
        try:
            async with client.stream(
                "POST", target.copy_with(host=address), content=body, headers=headers, extensions=extensions
            ) as response:
                return await _judged(response, secret)
        except httpx2.TimeoutException:
            return temporary("timeout")
        except httpx2.ConnectError:
            return temporary("connect_failed")
        except httpx2.HTTPError as exc:
            return temporary(f"read_failed: {type(exc).__name__}")


async def _judged(response: httpx2.Response, secret: str) -> AttemptResult:
    """2xx delivered; 5xx tried again; anything else (4xx, 3xx, 1xx) not."""
    status = response.status_code
    if 200 <= status < 300:
        return delivered(status)
    answer = bytearray()
    async for chunk in response.aiter_bytes():
        answer += chunk
        if len(answer) >= MAX_ANSWER_BYTES:
            break
    said = excerpt(answer[:MAX_ANSWER_BYTES].decode("utf-8", errors="replace"), hide=secret)
    error = f"http_{status}" + (f": {said}" if said else "")
    if status >= 500:
        return temporary(error, status)
    if 300 <= status < 400:
        error = f"http_{status}: redirects are not followed"
    return permanent(error, status)
