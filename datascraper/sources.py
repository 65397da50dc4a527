"""The address a source is known by: one page, one source, whichever search or step cited it.

Web searches cite pages with tracking parameters (`utm_source=openai`); market data and filings cite
their pages as fetched. Every place that numbers, matches or checks sources (the web search's citations,
the synthesizer's source list, the charts, the evidence the checks read) compares them by `clean_url`.
Who publishes a source, and when, is read from the same address by `research_engine.source_types`.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit


def clean_url(url: str) -> str:
    """The URL without tracking parameters (`utm_source=openai` and kin): one page, one source."""
    parts = urlsplit(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(key, value) for key, value in params if not key.lower().startswith("utm_")]
    if len(kept) == len(params):
        return url
    return urlunsplit(parts._replace(query=urlencode(kept)))
