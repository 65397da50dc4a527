"""Named failures of the filing tools. Each carries the `code` a tool error result reports.

Messages are one sentence for the end user (and the model): no traceback, no upstream payload.
"""

from __future__ import annotations

from datascraper.errors import ResearchError


class FilingError(ResearchError):
    code = "filing_error"
    default_message = "The SEC filing data could not be retrieved."


class FilingsNotConfigured(FilingError):
    """No `SEC_USER_AGENT`: the SEC refuses anonymous clients, so we do not ask without one."""

    code = "not_configured"
    default_message = "SEC filings are not configured: set SEC_USER_AGENT to the operator's name and contact e-mail."


class FilingInvalidArgument(FilingError):
    code = "invalid_argument"
    default_message = "An argument of the request is not valid."


class FilingNotFound(FilingError):
    code = "not_found"
    default_message = "The SEC has no such company, filing or document."


class NoFilingData(FilingError):
    """The company exists but the SEC holds no data of the kind asked (no XBRL facts, no such section)."""

    code = "no_data"
    default_message = "The SEC's data has nothing for this request."


class FilingTooLarge(FilingError):
    """A reply past `FilingsConfig.max_document_bytes`: refused while reading, before it can exhaust memory."""

    code = "too_large"
    default_message = "The SEC document is too large to read."


class FilingsRateLimited(FilingError):
    code = "rate_limited"
    default_message = "The SEC is limiting our requests; try again in a few minutes."


class FilingsUpstreamError(FilingError):
    code = "upstream_error"
    default_message = "The SEC returned an error."


class FilingsTimeout(FilingError):
    code = "timeout"
    default_message = "The SEC did not answer in time."
