"""The project folder and the `doit` run over it, below every step.

Where things live: shipped models, per-step artifact folders, reports (`layout`); each
model's deployment spec, models/<m>/deploy.yaml, loaded once with the positions of its keys
(`deploy`), and which code its items get (`targets`). The run: what the steps' doit task
modules share (`tasking`), one run per folder (`lock`), the steps' log (`tasklog`), and the
console while it works (`progress`, `oneline`). They import no step.
"""
