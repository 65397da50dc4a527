"""The research router's entry point: `run_research`, one async generator of typed events per question.

Modules, one concept each: `pipeline` (the router: which path a question takes), `bypass` (the quick
path: one web search, or a quote answered locally), `rounds` (research in rounds: execute, judge, follow
up), `executor` (routing and running sub-questions), `periods` (what a sub-question asks of market data),
`gap_detector` (judging findings; the stop rules), `confidence` (the evidence confidence, weak areas and
their follow-ups), `source_types` (who publishes a source, and when), `trace` (the research trace and its
summary), `synthesizer` (one source list, the cited answer), `summary` (the run's wrap-up), `state` (the
run's typed state).
"""

from datascraper.research_engine.pipeline import run_research

__all__ = ["run_research"]
