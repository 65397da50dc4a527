"""Evaluation: how good the answers are (`manage.py evaluate`), and the offline checks CI runs.

Modules, one concept each: `questions` (a question set: our JSONL or the Vals AI CSV), `results` (one
graded result per question, and the JSONL log an evaluation resumes from), `folder` (the output folder
belongs to one question set: its manifest), `judge` (the judge model's
grade against a reference and rubric), `pricing` (a dated, estimated price table), `runner` (questions
through `run_research`, a few at once), `report` (the Markdown report, calibration, baseline diff),
`configurations` (the `--config` env files to compare, and the judge they share), `configuration_runs` (each
configuration in a child process, bounded), `comparison` (their figures side by side) and `offline`
(deterministic checks of a run against the fakes: route, periods, numbers, citations).
No Django here: the command in `chat/management/commands/evaluate.py` is a thin shell around `runner`.
"""
