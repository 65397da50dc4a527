"""Who a ticker is to the SEC: its CIK and name (the ticker map), and its filings (the submissions file).

The SEC spells share classes with a dash (BRK-B), as Yahoo does; a dot (BRK.B) is read the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from datascraper.filings.client import SecClient
from datascraper.filings.errors import FilingInvalidArgument, FilingNotFound, FilingsUpstreamError

TICKERS_PATH = "/files/company_tickers.json"
_MAX_TICKER_LENGTH = 12


@dataclass(frozen=True)
class Company:
    ticker: str
    cik: int
    name: str

    @property
    def cik10(self) -> str:
        return f"{self.cik:010d}"


async def find_company(client: SecClient, ticker: str) -> Company:
    """The company a ticker names, from the SEC's ticker map (cached for a day).

    Raises:
        FilingInvalidArgument: not a ticker's spelling.
        FilingNotFound: the SEC's map has no such ticker (not an SEC registrant, or delisted).
    """
    wanted = ticker.strip().upper().replace(".", "-")
    if not wanted or len(wanted) > _MAX_TICKER_LENGTH or not wanted.replace("-", "").isalnum():
        raise FilingInvalidArgument("That is not a ticker symbol the SEC lists, e.g. AAPL or BRK-B.")
    table = await client.www_json(TICKERS_PATH, ttl_s=client.config.tickers_ttl_s)
    try:
        rows = table.values() if isinstance(table, dict) else table
        for row in rows:
            if str(row["ticker"]).upper() == wanted:
                return Company(ticker=wanted, cik=int(row["cik_str"]), name=str(row["title"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise FilingsUpstreamError("The SEC's ticker map is not in the expected shape.") from exc
    raise FilingNotFound(f"The SEC lists no company with the ticker {wanted}.")


async def submissions(client: SecClient, company: Company) -> dict[str, Any]:
    """The company's submissions file: its name, fiscal year end and its recent filings (cached an hour)."""
    payload = await client.data_json(f"/submissions/CIK{company.cik10}.json", ttl_s=client.config.submissions_ttl_s)
    if not isinstance(payload, dict):
        raise FilingsUpstreamError("The SEC's submissions file is not in the expected shape.")
    return payload


def archive_url(client: SecClient, company: Company, accession: str, document: str | None = None) -> str:
    """A filing's index page, or one of its documents, under the EDGAR archive."""
    folder = f"/Archives/edgar/data/{company.cik}/{accession.replace('-', '')}"
    return client.www_url(f"{folder}/{document}" if document else f"{folder}/{accession}-index.htm")
