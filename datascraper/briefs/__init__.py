"""What changed for a watchlist's symbols between two instants, found by the data tools, not by a model.

One module per kind of change: `prices` (the move between official closes), `filings` (new SEC filings and
Form 4 trades, once per accession), `events` (Yahoo's dated events: an earnings date ahead, rating changes,
news); `detect` runs them for every symbol, each call bounded, and records what could not be checked;
`research` turns the changes into the starting point of the research run that writes the brief. The
schemas of a change and of the window are `schemas`. The chat app (`chat.services.briefs`) stores briefs.
"""
