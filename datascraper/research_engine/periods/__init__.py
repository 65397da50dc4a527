"""Periods: what a sub-question asks of market data, by calendar or by the company's fiscal calendar.

`request` (the period fields of a sub-question, validated; the question's own wording fills what the
analyzer left unset), `wording` (periods read from a question's words), `fiscal_calendar` (a company's
fiscal year, read from its statements, and the fiscal periods it names), `fiscal_fetch` (fiscal periods
placed on each ticker's calendar as its data is fetched, and named in its titles), `as_of` (when market
data is as of, and how its periods are labelled).
"""
