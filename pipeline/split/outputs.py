"""The files the split step writes per deployment: named here so task listing stays light.

`pipeline.split.tasks` needs these names to declare targets; importing them from the
planner would load NumPy and the NNEF checker on every `doit` start.
"""

PLAN_FILE = "plan.json"
SCHEDULE_FILE = "schedule.json"
TRACE_FILE = "trace-interpreter.json"
REWRITTEN_FILE = "rewritten.nnef"
