"""Verified citations: after the answer, whether each `[n]` marker's source says what its sentence says.

Modules, one concept each: `claims` (the claim each marker cites), `fetcher` (reading a cited page:
public addresses only, bounded), `support` (the decision rule: figures and key terms), `verifier` (the
whole check, concurrent and within a deadline). The pipeline calls `verify_citations` after the answer's
last delta and sends its result as the `verification` event.
"""

from datascraper.citations.support import MarketEvidence, SourceText
from datascraper.citations.verifier import Verification, verify_citations

__all__ = ["MarketEvidence", "SourceText", "Verification", "verify_citations"]
