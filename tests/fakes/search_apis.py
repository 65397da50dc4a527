"""Tavily, Brave Search and Exa on 127.0.0.1, each at its wire and as strict as its documentation and SDK
(tavily-python, exa-py) say the real one is; where the real one may let an unknown parameter through, the
fake refuses it, so a request the real API might not understand fails here first.

- Tavily (`POST /search`, `Authorization: Bearer <key>`, or the older `api_key` in the body): a missing or
  wrong key is 401 `{"detail": {"error": "Unauthorized: missing or invalid API key."}}`; a query over 400
  characters, `max_results` outside 0-20, an unknown `search_depth` or field is 400 in the same shape; 429
  its rate limit, 432 the plan's limit (`quota_exhausted`). Results: `url`, `title`, `content`, `score`,
  `raw_content` (null), `published_date` (an HTTP date) for a `news` search only.
- Brave (`GET /res/v1/web/search`, `X-Subscription-Token`): a missing or wrong token is 422
  `SUBSCRIPTION_TOKEN_INVALID` in Brave's `ErrorResponse`; no `q`, a `q` over 400 characters or 50 words,
  `count` outside 1-20 or an unknown parameter is 422 `VALIDATION`; 429 `RATE_LIMITED`. The answer is a
  `search` with `query`, `mixed` and, when anything was found, `web.results` (`page_age` ISO 8601, `age`
  `"June 12, 2025"`).
- Exa (`POST /search`, `x-api-key` or a Bearer header): 401 without a valid key, 402 `NO_MORE_CREDITS`
  (`quota_exhausted`), 400 `INVALID_REQUEST_BODY` for no `query`, an unknown field, `numResults` outside
  1-100 or an unknown `type`; 429 its rate limit; errors are `{"requestId", "error", "tag"}`. Results: `id`,
  `url`, `title`, `publishedDate` (ISO 8601), `author`, `text` only when `contents.text` was asked for.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, date, datetime
from email.utils import format_datetime
from typing import Any
from urllib.parse import urlsplit

from tests.fakes.search_api_server import Answer, ApiRequest, FakeSearchAPI, SearchHit

TAVILY_FIELDS = {
    "query", "api_key", "search_depth", "topic", "time_range", "start_date", "end_date", "days", "max_results",
    "include_domains", "exclude_domains", "include_answer", "include_raw_content", "include_images",
    "include_image_descriptions", "include_favicon", "country", "auto_parameters", "chunks_per_source",
    "include_usage", "exact_match",
}  # fmt: skip
BRAVE_PARAMS = {
    "q", "country", "search_lang", "ui_lang", "count", "offset", "safesearch", "freshness", "text_decorations",
    "spellcheck", "result_filter", "goggles_id", "goggles", "units", "extra_snippets", "summary",
}  # fmt: skip
EXA_FIELDS = {
    "query", "numResults", "type", "category", "includeDomains", "excludeDomains", "startCrawlDate",
    "endCrawlDate", "startPublishedDate", "endPublishedDate", "includeText", "excludeText", "contents",
    "moderation", "userLocation", "additionalQueries",
}  # fmt: skip


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


class FakeTavily(FakeSearchAPI):
    name = "tavily"
    quota_exhausted = False

    @staticmethod
    def _error(status: int, message: str) -> Answer:
        return Answer(status, {"detail": {"error": message}})

    def _rate_limit_answer(self) -> Answer:
        return self._error(
            429, "Your request has been blocked due to excessive requests. Please reduce rate of requests."
        )

    def _answer(self, request: ApiRequest) -> Answer:
        if request.method != "POST" or request.path != "/search":
            return Answer(404, {"detail": "Not Found"})
        body = request.body if isinstance(request.body, dict) else {}
        bearer = request.headers.get("authorization", "")
        if bearer != f"Bearer {self.key}" and body.get("api_key") != self.key:
            return self._error(401, "Unauthorized: missing or invalid API key.")
        if self.quota_exhausted:
            return self._error(432, "This request exceeds your plan's set usage limit. Please upgrade your plan.")
        if refused := self._refused(body):
            return self._error(400, refused)
        limit = body.get("max_results", 5)
        news = body.get("topic") == "news"
        results = [
            {
                "url": hit.url,
                "title": hit.title,
                "content": hit.excerpt,
                "score": round(0.9 - 0.1 * i, 2),
                "raw_content": None,
                **(
                    {"published_date": format_datetime(_midnight(hit.published), usegmt=True)}
                    if news and hit.published
                    else {}
                ),
            }
            for i, hit in enumerate(self.hits[:limit])
        ]
        return Answer(200, {
            "query": body["query"], "follow_up_questions": None, "answer": None, "images": [], "results": results,
            "response_time": 0.87, "request_id": str(uuid.uuid4()),
        })  # fmt: skip

    @staticmethod
    def _refused(body: dict[str, Any]) -> str | None:
        if unknown := sorted(set(body) - TAVILY_FIELDS):
            return f"Invalid parameters: {', '.join(unknown)}."
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            return "Query is missing."
        if len(query) > 400:
            return "Query is too long. Max query length is 400 characters."
        limit = body.get("max_results", 5)
        if not isinstance(limit, int) or not 0 <= limit <= 20:
            return "max_results must be between 0 and 20."
        if body.get("search_depth", "basic") not in ("basic", "advanced", "fast", "ultra-fast"):
            return "Invalid search depth."
        return None


class FakeBrave(FakeSearchAPI):
    name = "brave"

    @staticmethod
    def _error(status: int, code: str, detail: str, component: str) -> Answer:
        error = {
            "id": str(uuid.uuid4()),
            "status": status,
            "code": code,
            "detail": detail,
            "meta": {"component": component},
        }
        return Answer(status, {"type": "ErrorResponse", "error": error, "time": int(time.time())})

    def _rate_limit_answer(self) -> Answer:
        answer = self._error(429, "RATE_LIMITED", "Request rate limit exceeded for plan.", "rate_limiter")
        answer.headers = {
            "X-RateLimit-Limit": "1, 2000",
            "X-RateLimit-Remaining": "0, 1990",
            "X-RateLimit-Reset": "1, 86400",
        }
        return answer

    def _answer(self, request: ApiRequest) -> Answer:
        if request.method != "GET" or request.path != "/res/v1/web/search":
            return self._error(404, "RESOURCE_NOT_FOUND", "Resource not found.", "api")
        if request.headers.get("x-subscription-token") != self.key:
            return self._error(
                422, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.", "authentication"
            )
        if refused := self._refused(request.params):
            return self._error(422, "VALIDATION", refused, "validation")
        query = request.params["q"][0]
        count = int(request.params.get("count", ["20"])[0])
        hits = self.hits[:count]
        answer: dict[str, Any] = {
            "type": "search",
            "query": {"original": query, "show_strict_warning": False, "is_navigational": False,
                      "is_news_breaking": False, "spellcheck_off": True, "country": "us", "bad_results": False,
                      "should_fallback": False, "postal_code": "", "city": "", "header_country": "",
                      "more_results_available": len(self.hits) > count, "state": ""},
            "mixed": {"type": "mixed", "main": [{"type": "web", "index": i, "all": False} for i in range(len(hits))],
                      "top": [], "side": []},
        }  # fmt: skip
        if hits:
            answer["web"] = {"type": "search", "results": [_brave_result(hit) for hit in hits], "family_friendly": True}
        return Answer(200, answer)

    @staticmethod
    def _refused(params: dict[str, list[str]]) -> str | None:
        if unknown := sorted(set(params) - BRAVE_PARAMS):
            return f"Unknown query parameter(s): {', '.join(unknown)}."
        query = params.get("q", [""])[0]
        if not query.strip():
            return "Field required: q."
        if len(query) > 400 or len(query.split()) > 50:
            return "The query is too long: at most 400 characters and 50 words."
        count = params.get("count", ["20"])[0]
        if not count.isdigit() or not 1 <= int(count) <= 20:
            return "count must be an integer between 1 and 20."
        return None


def _brave_result(hit: SearchHit) -> dict[str, Any]:
    parts = urlsplit(hit.url)
    result: dict[str, Any] = {
        "title": hit.title, "url": hit.url, "is_source_local": False, "is_source_both": False,
        "description": hit.excerpt, "language": "en", "family_friendly": True, "type": "search_result",
        "subtype": "generic", "is_live": False,
        "profile": {"name": parts.hostname, "url": hit.url, "long_name": parts.hostname, "img": ""},
        "meta_url": {"scheme": parts.scheme, "netloc": parts.netloc, "hostname": parts.hostname, "favicon": "",
                     "path": parts.path},
    }  # fmt: skip
    if hit.published:
        result["page_age"] = _midnight(hit.published).strftime("%Y-%m-%dT%H:%M:%S")
        result["age"] = f"{hit.published:%B} {hit.published.day}, {hit.published.year}"
    return result


class FakeExa(FakeSearchAPI):
    name = "exa"
    quota_exhausted = False

    @staticmethod
    def _error(status: int, message: str, tag: str) -> Answer:
        return Answer(status, {"requestId": uuid.uuid4().hex, "error": message, "tag": tag})

    def _rate_limit_answer(self) -> Answer:
        return self._error(429, "You have exceeded your rate limit.", "RATE_LIMIT_EXCEEDED")

    def _answer(self, request: ApiRequest) -> Answer:
        if request.method != "POST" or request.path != "/search":
            return self._error(404, "Not found.", "NOT_FOUND")
        keys = {request.headers.get("x-api-key"), request.headers.get("authorization", "").removeprefix("Bearer ")}
        if self.key not in keys:
            return self._error(401, "Invalid API key.", "INVALID_API_KEY")
        if self.quota_exhausted:
            return self._error(402, "You have run out of credits.", "NO_MORE_CREDITS")
        body = request.body if isinstance(request.body, dict) else {}
        if refused := self._refused(body):
            return self._error(400, refused, "INVALID_REQUEST_BODY")
        contents = body.get("contents") or {}
        results = [
            {
                "id": hit.url, "url": hit.url, "title": hit.title, "author": None,
                "publishedDate": f"{_midnight(hit.published):%Y-%m-%dT%H:%M:%S}.000Z" if hit.published else None,
                **({"text": hit.excerpt} if contents.get("text") else {}),
            }
            for hit in self.hits[: body.get("numResults", 10)]
        ]  # fmt: skip
        cost = {"total": 0.005, "search": {"neural": 0.005}}
        return Answer(
            200,
            {"requestId": uuid.uuid4().hex, "resolvedSearchType": "neural", "results": results, "costDollars": cost},
        )

    @staticmethod
    def _refused(body: dict[str, Any]) -> str | None:
        if unknown := sorted(set(body) - EXA_FIELDS):
            return f"Unrecognized key(s) in object: {', '.join(unknown)}"
        if not isinstance(body.get("query"), str) or not body["query"].strip():
            return "query: Required"
        count = body.get("numResults", 10)
        if not isinstance(count, int) or not 1 <= count <= 100:
            return "numResults must be between 1 and 100"
        if body.get("type", "auto") not in ("auto", "neural", "keyword", "fast", "deep", "instant"):
            return "type: Invalid enum value"
        return None
