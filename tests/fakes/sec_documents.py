"""Filed documents made to a size, for what a big filing costs to read (tests and benchmarks/filing_memory.py).

`dense_ten_k(size)` is a 10-K laid out as the real ones are (inline XBRL's hidden header, Item headings in
styled divs, risk factors in paragraphs) whose bulk is financial tables in inline XBRL: a row of three cells,
each a span around a tagged figure. That is the densest markup a filing has, elements per byte, and so the
costliest to parse: a tree of it takes many times its size.
"""

from __future__ import annotations

RISK_FACTORS = 40
_ROW = (
    '<tr><td style="padding:0 1pt"><span style="font-size:9pt">Line {n}</span></td>'
    '<td style="text-align:right"><span><ix:nonFraction name="us-gaap:Revenues" contextRef="c-{n}" '
    'unitRef="usd" decimals="-6" scale="6">{value:,}</ix:nonFraction></span></td>'
    "<td><span>{change}%</span></td></tr>"
)


def dense_ten_k(size: int) -> bytes:
    """A 10-K of about `size` bytes (never more), its Item 1A the risk factors' paragraphs."""
    head = (
        "<html><head><title>dense-10k</title></head><body>"
        '<div style="display:none"><ix:header><ix:resources>contexts and units</ix:resources></ix:header></div>'
        '<div><span style="font-weight:700">Item 1A.</span></div>'
        '<div><span style="font-weight:700">Risk Factors</span></div>'
        + "".join(
            f"<div><span>Risk factor {n}: the Company's business could be affected by circumstances "
            f"described in this paragraph, numbered {n}.</span></div>"
            for n in range(RISK_FACTORS)
        )
        + '<div><span style="font-weight:700">Item 1B. Unresolved Staff Comments</span></div><div>None.</div>'
        + '<div><span style="font-weight:700">Item 7. Management\'s Discussion and Analysis</span></div><table>'
    )
    tail = '</table><div><span style="font-weight:700">Item 8. Financial Statements</span></div></body></html>'
    parts = [head.encode()]
    room = size - len(parts[0]) - len(tail)
    n = 0
    while True:
        row = _ROW.format(n=n, value=n * 7_919, change=n % 97).encode()
        if len(row) > room:
            break
        parts.append(row)
        room -= len(row)
        n += 1
    parts.append(tail.encode())
    return b"".join(parts)
