"""Who publishes a web source, and when: read from its address (and title), never asked of a model.

The confidence of a run's evidence weighs each source by its publisher (`DomainType`): a regulator's
filing counts for more than a blog post. The search tool's citations carry only a URL and a title, so
everything here is read from them with curated lists and a few address patterns:

- regulator, exchange, major news: curated domains (below);
- government and academic: their public suffixes (`.gov`, `.gov.uk`, `.gouv.fr`, `.edu`, `.ac.uk`, ...)
  and a few intergovernmental or research bodies;
- company investor relations: `investor.` / `investors.` / `ir.` hosts, investor and press paths,
  the press-release wires, and the domains of the companies the run asks about;
- blog: blogging platforms, `blog.` hosts and `/blog/` paths, contributor sections;
- anything else is `other`.

`published` is a date in the address (`/2025/10/30/`, `-2025-10-30`), which many news sites put there;
without one the date stays unknown rather than guessed. Domains are compared by their registered part
(`www.reuters.com` and `reuters.com` are one), found with a short list of two-level public suffixes
(`co.uk`, `com.au`, ...) instead of the full Public Suffix List: enough for the publishers that matter
here, and no dependency.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from urllib.parse import urlsplit

from datascraper.schemas import DomainType

REGULATORS = frozenset(
    """
    sec.gov finra.org cftc.gov federalreserve.gov fdic.gov occ.gov occ.treas.gov consumerfinance.gov
    pcaobus.org fasb.org ifrs.org fca.org.uk bankofengland.co.uk esma.europa.eu eba.europa.eu ecb.europa.eu
    eiopa.europa.eu bafin.de amf-france.org consob.it cnmv.es afm.nl finma.ch fsa.go.jp boj.or.jp
    sfc.hk hkma.gov.hk mas.gov.sg asic.gov.au apra.gov.au rba.gov.au osc.ca osc.gov.on.ca osfi-bsif.gc.ca
    bankofcanada.ca sebi.gov.in rbi.org.in csrc.gov.cn pbc.gov.cn iosco.org bis.org fsb.org
    """.split()
)
EXCHANGES = frozenset(
    """
    nyse.com nasdaq.com nasdaqtrader.com cboe.com cmegroup.com theice.com ice.com otcmarkets.com
    londonstockexchange.com lseg.com deutsche-boerse.com euronext.com six-group.com jpx.co.jp hkex.com.hk
    sgx.com asx.com.au tmx.com tsx.com nseindia.com bseindia.com sse.com.cn szse.cn krx.co.kr b3.com.br
    """.split()
)
MAJOR_NEWS = frozenset(
    """
    reuters.com bloomberg.com wsj.com ft.com cnbc.com apnews.com nytimes.com washingtonpost.com economist.com
    barrons.com marketwatch.com bbc.com bbc.co.uk theguardian.com cnn.com axios.com fortune.com forbes.com
    businessinsider.com morningstar.com investors.com thestreet.com nikkei.com scmp.com handelsblatt.com
    lesechos.fr faz.net spiegel.de latimes.com usatoday.com npr.org politico.com techcrunch.com theverge.com
    wired.com arstechnica.com theinformation.com semafor.com cbsnews.com nbcnews.com abcnews.go.com
    foxbusiness.com yahoo.com caixinglobal.com asia.nikkei.com globeandmail.com theglobeandmail.com
    afr.com smh.com.au straitstimes.com economictimes.indiatimes.com livemint.com
    """.split()
)
INTERGOVERNMENTAL = frozenset("imf.org worldbank.org oecd.org un.org wto.org europa.eu".split())
ACADEMIC = frozenset("nber.org ssrn.com arxiv.org jstor.org repec.org".split())
PRESS_WIRES = frozenset("businesswire.com prnewswire.com globenewswire.com accesswire.com newswire.ca".split())
BLOG_PLATFORMS = frozenset(
    """
    medium.com substack.com wordpress.com blogspot.com tumblr.com seekingalpha.com fool.com reddit.com
    quora.com x.com twitter.com linkedin.com hubpages.com stocktwits.com
    """.split()
)
# Sites whose articles are mostly contributors' opinions, whatever their path says.
OPINION_SITES = frozenset({"seekingalpha.com", "fool.com"})
# News sites' sections written by outside contributors: blogs, whatever the site.
CONTRIBUTOR_SECTIONS = {"forbes.com": "/sites/"}

# Second-level labels under which names are registered in many country domains (example.co.uk).
_SECOND_LEVEL = frozenset("co com net org gov ac edu or ne go gob gouv govt nic mil".split())
_GOVERNMENT_SUFFIXES = (".gov", ".mil", ".gouv.fr", ".gc.ca", ".europa.eu")
_GOVERNMENT_LABELS = frozenset({"gov", "gob", "gouv", "govt", "go"})
_ACADEMIC_SUFFIXES = (".edu",)
_ACADEMIC_LABELS = frozenset({"ac", "edu"})
_IR_HOST = re.compile(r"^(?:investors?|ir)\.")
_IR_PATH = re.compile(r"/(?:investors?|investor-relations|ir|newsroom|press-releases?|news-releases?|pressroom)(?:/|$)")
_BLOG_PATH = re.compile(r"/blogs?/")
_OPINION_PATH = re.compile(r"/(?:opinions?|commentary|op-?eds?|editorials?|columns?|columnists?|breakingviews)(?:/|$)")
_OPINION_TITLE = re.compile(r"^\s*(?:opinion|op-ed|commentary|column|editorial|breakingviews)\b", re.IGNORECASE)
# A date in a URL's path: /2025/10/30/ or -2025-10-30/, years from 1995 (the web's news archives). Not
# 20251030: filings are named by their period's end (aapl-20250329.htm), not by when they were published.
_PATH_DATE = re.compile(r"(?<!\d)((?:199[5-9]|20\d\d))([/-])(0[1-9]|1[0-2])\2(0[1-9]|[12]\d|3[01])(?!\d)")


@lru_cache(maxsize=4096)
def registered_domain(url: str) -> str:
    """`https://www.reuters.com/x` -> `reuters.com`; `https://news.bbc.co.uk/` -> `bbc.co.uk`."""
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    labels = host.split(".")
    if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def published_from_url(url: str, today: date) -> date | None:
    """The publication day a URL's path names, if it names a real day no later than `today`."""
    for match in _PATH_DATE.finditer(urlsplit(url).path):
        try:
            day = date(int(match[1]), int(match[3]), int(match[4]))
        except ValueError:
            continue
        if day <= today:
            return day
    return None


def is_opinion(url: str, title: str) -> bool:
    """An opinion piece: an opinion or commentary section, a title saying so, or a contributors' site."""
    path = urlsplit(url).path.lower()
    return (
        registered_domain(url) in OPINION_SITES
        or _OPINION_PATH.search(path) is not None
        or _OPINION_TITLE.match(title) is not None
    )


@dataclass(frozen=True)
class SourceClassifier:
    """Classifies web sources for one run; `company_domains` are the registered domains (or their first
    label, e.g. `apple`) of the companies the run asks about, whose own sites count as investor relations."""

    company_domains: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def for_companies(cls, names: Iterable[str], websites: Iterable[str] = ()) -> SourceClassifier:
        """From company names or tickers (`Apple`, `AAPL`) and the websites market data gave for them."""
        labels = {re.sub(r"[^a-z0-9-]", "", name.lower()) for name in names}
        domains = {registered_domain(site if "//" in site else f"https://{site}") for site in websites if site}
        return cls(company_domains=frozenset(label for label in labels | domains if label))

    def domain_type(self, url: str) -> DomainType:
        host = (urlsplit(url).hostname or "").lower()
        domain = registered_domain(url)
        path = urlsplit(url).path.lower()
        labels = domain.split(".")
        if domain in REGULATORS or host in REGULATORS:
            return "regulator"
        if domain in EXCHANGES:
            return "exchange"
        if (
            host.endswith(_GOVERNMENT_SUFFIXES)
            or domain in INTERGOVERNMENTAL
            or (len(labels) == 3 and labels[1] in _GOVERNMENT_LABELS)
        ):
            return "government"
        if (
            host.endswith(_ACADEMIC_SUFFIXES)
            or domain in ACADEMIC
            or (len(labels) == 3 and labels[1] in _ACADEMIC_LABELS)
        ):
            return "academic"
        if (
            domain in BLOG_PLATFORMS
            or host.startswith("blog.")
            or path.startswith(CONTRIBUTOR_SECTIONS.get(domain, "\0"))
            or (domain not in self.company_domains and _BLOG_PATH.search(path) is not None)
        ):
            return "blog"
        if (
            domain in PRESS_WIRES
            or domain in self.company_domains
            or labels[0] in self.company_domains
            or _IR_HOST.match(host) is not None
        ):
            return "company_ir"
        if domain in MAJOR_NEWS or host in MAJOR_NEWS:
            return "major_news"
        if _IR_PATH.search(path) is not None:
            return "company_ir"
        return "other"
