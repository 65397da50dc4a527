"""Insider transactions from Form 4 XML: who traded, in what role, when, how many shares, at what price.

Submissions list a Form 4's primary document as its XSL rendering (`xslF345X05/form4.xml`); the XML itself
is the same file name at the top of the filing's folder. Both tables are read: shares bought, sold, granted
or withheld (non-derivative), and options and units granted, exercised or converted (derivative, flagged).
"""

from __future__ import annotations

from datetime import date

from lxml import etree

from datascraper.filings.errors import FilingsUpstreamError
from datascraper.filings.schemas import InsiderTransaction

TRANSACTION_CODES: dict[str, str] = {
    "P": "open market or private purchase",
    "S": "open market or private sale",
    "A": "grant or award",
    "D": "disposition to the issuer",
    "F": "shares withheld for tax or exercise price",
    "G": "gift",
    "M": "exercise or conversion of a derivative",
    "C": "conversion of a derivative",
    "X": "exercise of an in-the-money derivative",
    "J": "other acquisition or disposition",
    "W": "acquisition or disposition by will or laws of descent",
}
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)


def raw_document(primary_document: str) -> str:
    """The XML's file name from the primary document's (dropping an `xslF345X..` rendering folder)."""
    folder, _, name = primary_document.rpartition("/")
    return name if folder.lower().startswith("xsl") else primary_document


def parse_form4(xml: bytes, *, filed: date, accession: str, url: str) -> list[InsiderTransaction]:
    try:
        root = etree.fromstring(xml, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise FilingsUpstreamError("A Form 4 from the SEC could not be read as XML.") from exc
    owners = root.findall("reportingOwner")
    owner = " and ".join(_text(o, "reportingOwnerId/rptOwnerName") or "unnamed" for o in owners) or "unnamed"
    role = _role(owners[0]) if owners else "other"
    rows = [(row, False) for row in root.findall("nonDerivativeTable/nonDerivativeTransaction")]
    rows += [(row, True) for row in root.findall("derivativeTable/derivativeTransaction")]
    transactions = []
    for row, derivative in rows:
        when = _text(row, "transactionDate/value")
        shares = _number(row, "transactionAmounts/transactionShares/value")
        direction = _text(row, "transactionAmounts/transactionAcquiredDisposedCode/value")
        if when is None or shares is None or direction not in ("A", "D"):
            continue  # a holding row without a transaction, or a malformed one
        code = _text(row, "transactionCoding/transactionCode") or "?"
        transactions.append(
            InsiderTransaction(
                owner=owner,
                role=role,
                transaction_date=date.fromisoformat(when[:10]),
                security=_text(row, "securityTitle/value") or ("Derivative security" if derivative else "Common Stock"),
                derivative=derivative,
                code=code,
                code_meaning=TRANSACTION_CODES.get(code, "other"),
                shares=shares,
                price=_number(row, "transactionAmounts/transactionPricePerShare/value"),
                acquired_disposed=direction,  # type: ignore[arg-type]
                owned_after=_number(row, "postTransactionAmounts/sharesOwnedFollowingTransaction/value"),
                ownership="indirect"
                if _text(row, "ownershipNature/directOrIndirectOwnership/value") == "I"
                else "direct",
                filed=filed,
                accession=accession,
                url=url,
            )
        )
    return transactions


def _role(owner: etree._Element) -> str:
    relationship = owner.find("reportingOwnerRelationship")
    if relationship is None:
        return "other"
    roles = []
    if _flag(relationship, "isDirector"):
        roles.append("director")
    if _flag(relationship, "isOfficer"):
        title = _text(relationship, "officerTitle")
        roles.append(f"officer ({title})" if title else "officer")
    if _flag(relationship, "isTenPercentOwner"):
        roles.append("10% owner")
    if _flag(relationship, "isOther"):
        roles.append(_text(relationship, "otherText") or "other")
    return ", ".join(roles) or "other"


def _flag(element: etree._Element, tag: str) -> bool:
    return (_text(element, tag) or "").lower() in ("1", "true")


def _text(element: etree._Element, path: str) -> str | None:
    found = element.find(path)
    if found is None or found.text is None:
        return None
    return found.text.strip() or None


def _number(element: etree._Element, path: str) -> float | None:
    text = _text(element, path)
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None
